"""The launch wizard's pages: protocol → settings → items → review and go live.

Thin views over ``dashboard.drafts``: staff only, a researcher sees only their own drafts
(``campaign_for``), every change is a POST with Django's CSRF check, and a refused input
comes back with a message and changes nothing. The state is the draft campaign itself, so
each step can be reloaded or continued later from the "Continue" links.
"""

from __future__ import annotations

import json
import math
from typing import Any

from django import forms
from django.conf import settings as django_settings
from django.contrib import messages
from django.core.files.uploadedfile import UploadedFile
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation.campaign_settings import SETTINGS
from annotation.models import Campaign
from annotation.protocols import registry
from annotation.study_pages import STUDY_FIELDS, instructions_default
from corpora.limits import STUDY_FILE_MAX_BYTES
from dashboard import drafts
from dashboard.access import campaign_for, campaigns_visible, staff_required
from dashboard.drafts.plan import draft_plan
from dashboard.money import campaign_currency
from evalsite.errors import AnnotationError
from modelhub.models import ModelEndpoint

STEPS = (("start", "Protocol"), ("settings", "Settings"), ("items", "Items"), ("review", "Go live"))


# --- forms -------------------------------------------------------------------------------


def _not_finite(text: str) -> float:
    raise forms.ValidationError(f"{text} is not a number JSON allows.")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise forms.ValidationError(f"{text[:20]} is too large a number.")
    return value


class ParametersField(forms.Field):
    """A JSON object; NaN, Infinity and overflowing numbers are refused."""

    widget = forms.Textarea

    def to_python(self, value: Any) -> dict[str, Any]:
        text = (value.strip() if isinstance(value, str) else "") or "{}"
        try:
            parsed = json.loads(text, parse_constant=_not_finite, parse_float=_finite_float)
        except json.JSONDecodeError as exc:
            raise forms.ValidationError(
                f"Not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}."
            ) from None
        except RecursionError:  # json's parser recurses once per level of nesting
            raise forms.ValidationError("Not valid JSON: nested too deeply.") from None
        if not isinstance(parsed, dict):
            raise forms.ValidationError("The parameters must be a JSON object {…}.")
        return parsed


class StartForm(forms.Form):
    protocol = forms.CharField(max_length=64)
    name = forms.CharField(max_length=200, required=False)
    slug = forms.CharField(
        max_length=64, help_text="The address of the worker page: /task/<slug>/."
    )
    parameters = ParametersField(required=False)


def setting_field(name: str) -> forms.Field:
    """Return the form field of a campaign setting, with the bounds of the one schema."""
    bound = SETTINGS[name]
    if bound.kind == "flag":
        return forms.BooleanField(required=False)
    limits: dict[str, Any] = {
        "min_value": bound.low,
        "max_value": bound.high,
        "required": not bound.optional,
    }
    if bound.kind == "whole":
        return forms.IntegerField(**limits)
    if bound.kind == "number":
        return forms.FloatField(**limits)
    return forms.DecimalField(decimal_places=2, **limits)


def study_field(name: str) -> forms.Field:
    """Return the form field of a study page's text (``study_clean`` checks it on saving)."""
    if name == "language":  # a choice among the site's languages
        return forms.ChoiceField(choices=django_settings.LANGUAGES)
    long = STUDY_FIELDS[name] > 1000
    widget = forms.Textarea(attrs={"rows": 5, "cols": 80}) if long else forms.TextInput()
    return forms.CharField(required=False, strip=False, widget=widget)


class SettingsForm(forms.Form):
    parameters = ParametersField()

    def __init__(self, *args: Any, currency: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields.update({name: setting_field(name) for name in drafts.SETTINGS})
        self.fields.update({name: study_field(name) for name in STUDY_FIELDS})
        for name, field in self.fields.items():  # amounts of money name their currency
            if isinstance(field, forms.DecimalField):
                field.label = f"{name.replace('_', ' ').capitalize()} ({currency})"


class ItemsForm(forms.Form):
    contexts = forms.FileField(required=False)
    models = forms.MultipleChoiceField(required=False, widget=forms.CheckboxSelectMultiple)
    responses = forms.FileField(required=False)
    items = forms.FileField(required=False)
    gold = forms.FileField(required=False)
    training = forms.FileField(required=False)
    max_turns = forms.IntegerField(
        min_value=1, max_value=drafts.MAX_TURNS, initial=3, required=False
    )

    def clean_max_turns(self) -> int:
        return self.cleaned_data["max_turns"] or 3

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        names = ModelEndpoint.objects.order_by("name").values_list("name", "backend")
        choices = [(n, f"{n} ({b})") for n, b in names]
        self.fields["models"].choices = choices  # type: ignore[attr-defined]


def _form_errors(request: HttpRequest, form: forms.Form) -> None:
    for name, errors in form.errors.items():
        field = form.fields.get(name)
        label = (field.label or name.replace("_", " ").capitalize()) if field else ""
        for error in errors:
            messages.error(request, f"{label}: {error}" if label else str(error))


def _refused(request: HttpRequest, exc: AnnotationError) -> None:
    details = "; ".join(f"{k}: {v}" for k, v in exc.fields.items())
    messages.error(request, f"{exc.message} {details}".strip())


def _draft(request: HttpRequest, slug: str) -> Campaign:
    return campaign_for(request.user, slug)


def _context(campaign: Campaign | None, step: str, **extra: Any) -> dict[str, Any]:
    return {"campaign": campaign, "step": step, "steps": STEPS, **extra}


def _not_draft(request: HttpRequest, campaign: Campaign) -> HttpResponse | None:
    if campaign.status == Campaign.Status.DRAFT:
        return None
    messages.info(request, f"'{campaign.slug}' is already {campaign.get_status_display().lower()}.")
    return redirect("dashboard:campaign", campaign.slug)


# --- steps -------------------------------------------------------------------------------


@require_http_methods(["GET", "POST"])
@staff_required
def wizard_start(request: HttpRequest) -> HttpResponse:
    """Step 1: choose a protocol and name the campaign, or start from a study file; list the
    drafts to continue."""
    if request.method == "POST" and "study_file" in request.FILES:
        return _start_from_file(request)
    form = StartForm(request.POST or None, initial={"protocol": request.GET.get("protocol")})
    status = 200
    if request.method == "POST":
        status = 400  # unless it worked and redirects
        if form.is_valid():
            try:
                campaign = drafts.draft_create(owner=request.user, **form.cleaned_data)
            except AnnotationError as exc:
                _refused(request, exc)
            else:
                messages.success(request, f"Draft '{campaign.slug}' created with the defaults.")
                return redirect("dashboard:wizard_settings", campaign.slug)
        else:
            _form_errors(request, form)
    context = _context(
        None,
        "start",
        form=form,
        cards=drafts.protocol_cards(),
        registered=drafts.models_registered(),
        drafts=campaigns_visible(request.user).filter(status=Campaign.Status.DRAFT),
    )
    return render(request, "dashboard/wizard_start.html", context, status=status)


def _start_from_file(request: HttpRequest) -> HttpResponse:
    upload = request.FILES.get("study_file")
    assert isinstance(upload, UploadedFile)  # the caller saw the field
    if (upload.size or 0) > STUDY_FILE_MAX_BYTES:  # refused before it is read into memory
        messages.error(
            request, f"{upload.name}: a study file is at most {STUDY_FILE_MAX_BYTES // 2**20} MB."
        )
        return redirect("dashboard:wizard")
    try:
        campaign = drafts.draft_from_study_file(
            owner=request.user, name=upload.name or "study.yaml", content=upload.read()
        )
    except AnnotationError as exc:
        _refused(request, exc)
        return redirect("dashboard:wizard")
    messages.success(
        request,
        f"Draft '{campaign.slug}' created from {upload.name}: its settings, parameters and "
        "texts. Upload its items in the Items step (the files a study file names are not read "
        "here).",
    )
    return redirect("dashboard:wizard_settings", campaign.slug)


@require_http_methods(["GET", "POST"])
@staff_required
def wizard_settings(request: HttpRequest, slug: str) -> HttpResponse:
    """Step 2: the protocol's parameters and the campaign's settings, defaults explained."""
    campaign = _draft(request, slug)
    if (moved := _not_draft(request, campaign)) is not None:
        return moved
    initial = {name: getattr(campaign, name) for name in (*drafts.SETTINGS, *STUDY_FIELDS)}
    initial["parameters"] = json.dumps(campaign.parameters, indent=2, ensure_ascii=False)
    form = SettingsForm(request.POST or None, initial=initial, currency=campaign_currency(campaign))
    status = 200
    if request.method == "POST":
        status = 400  # unless it worked and redirects
        if form.is_valid():
            data = form.cleaned_data
            values = {k: data[k] for k in drafts.SETTINGS}
            study = {k: data[k] for k in STUDY_FIELDS}
            try:
                saved = drafts.draft_settings_update(
                    campaign=campaign, parameters=data["parameters"], values=values, study=study
                )
            except AnnotationError as exc:
                _refused(request, exc)
            else:
                messages.success(request, "Settings saved.")
                _models_warn(request, saved)
                return redirect("dashboard:wizard_items", campaign.slug)
        else:
            _form_errors(request, form)
    card = drafts.protocol_card(campaign.protocol)
    protocol = registry.get(campaign.protocol)
    default = instructions_default(campaign.protocol, protocol.default_parameters())
    texts = [form[name] for name in STUDY_FIELDS]
    context = _context(
        campaign,
        "settings",
        form=form,
        card=card,
        study=texts,
        default_instructions=default,
        registered=drafts.models_registered() if card.chats_with_models else [],
    )
    return render(request, "dashboard/wizard_settings.html", context, status=status)


def _models_warn(request: HttpRequest, campaign: Campaign) -> None:
    """Warn that models the draft chats with are not registered (going live refuses it)."""
    missing = drafts.models_unregistered(campaign)
    if missing:
        needed = drafts.models_needed(registry.get(campaign.protocol), missing)
        messages.warning(request, f"{needed} Going live needs them.")


@require_http_methods(["GET", "POST"])
@staff_required
def wizard_items(request: HttpRequest, slug: str) -> HttpResponse:
    """Step 3: upload contexts for registered models to answer, or ready items; gold checks."""
    campaign = _draft(request, slug)
    if (moved := _not_draft(request, campaign)) is not None:
        return moved
    form = ItemsForm(request.POST or None, request.FILES or None)
    status = 200
    if request.method == "POST":
        status = 400  # unless it worked and redirects
        if form.is_valid():
            upload = drafts.ItemsUpload(**form.cleaned_data)
            try:
                outcome = drafts.draft_items_import(campaign=campaign, upload=upload)
            except AnnotationError as exc:
                _refused(request, exc)
            else:
                if outcome.jobs:
                    messages.info(request, f"{len(outcome.jobs)} model(s) are answering.")
                else:
                    messages.success(request, _added(outcome))
                return redirect("dashboard:wizard_items", campaign.slug)
        else:
            _form_errors(request, form)
    context = _context(
        campaign,
        "items",
        form=form,
        card=drafts.protocol_card(campaign.protocol),
        pending=drafts.draft_pending(campaign),
        items=campaign.items.filter(gold__isnull=True).count(),
        gold=campaign.items.filter(gold__isnull=False).count(),
        training=campaign.training_size,
    )
    return render(request, "dashboard/wizard_items.html", context, status=status)


def _added(outcome: drafts.ImportOutcome) -> str:
    skipped = f"; {outcome.skipped} skipped (identical responses)" if outcome.skipped else ""
    training = f" and {outcome.training} training item(s)" if outcome.training else ""
    return f"Added {outcome.added} item(s){training}{skipped}."


@require_POST
@staff_required
def wizard_items_pending(request: HttpRequest, slug: str) -> HttpResponse:
    """Add the items whose responses the models have generated, or cancel that upload."""
    campaign = _draft(request, slug)
    try:
        if request.POST.get("action") == "cancel":
            drafts.draft_items_cancel(campaign=campaign)
            messages.info(request, "Upload cancelled; nothing was added.")
        else:
            messages.success(request, _added(drafts.draft_items_finish(campaign=campaign)))
    except AnnotationError as exc:
        _refused(request, exc)
    return redirect("dashboard:wizard_items", campaign.slug)


@require_GET
@staff_required
def wizard_items_status(request: HttpRequest, slug: str) -> JsonResponse:
    """The generation progress the items page polls."""
    pending = drafts.draft_pending(_draft(request, slug))
    if pending is None:
        return JsonResponse({"pending": False})
    return JsonResponse(
        {
            "pending": True,
            "progress": round(pending.progress, 3),
            "done": pending.done,
            "failed": [f"{j.endpoint.name}: {j.error}" for j in pending.failed],
            "jobs": [
                {"model": j.endpoint.name, "done": j.done, "total": j.total, "status": j.status}
                for j in pending.jobs
            ],
        }
    )


@require_GET
@staff_required
def wizard_review(request: HttpRequest, slug: str) -> HttpResponse:
    """Step 4: the cost on each provider, what the design can detect (the study planner),
    the worker page preview, and the go-live button."""
    campaign = _draft(request, slug)
    if (moved := _not_draft(request, campaign)) is not None:
        return moved
    protocol = registry.get(campaign.protocol)
    needs_items = drafts.protocol_needs_items(protocol)
    context = _context(
        campaign,
        "review",
        card=drafts.protocol_card(campaign.protocol),
        estimates=drafts.draft_estimates(campaign) if needs_items else [],
        pending=drafts.draft_pending(campaign),
        items=campaign.items.filter(gold__isnull=True).count(),
        gold=campaign.items.filter(gold__isnull=False).count(),
        preview_url=reverse("annotation:task", args=[campaign.slug])
        + "?assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE&hitId=preview",
        # The local study's workers reach the server this page was served from (a provider's
        # HITs point at EVALSITE_PUBLIC_URL instead: recruitment.launch.worker_url).
        worker_url=request.build_absolute_uri(reverse("annotation:task", args=[campaign.slug])),
        plan=draft_plan(campaign),
        currency=campaign_currency(campaign),
        unregistered=drafts.models_unregistered(campaign),
    )
    return render(request, "dashboard/wizard_review.html", context)


@require_POST
@staff_required
def wizard_launch(request: HttpRequest, slug: str) -> HttpResponse:
    """Go live on the local provider; land on the campaign page."""
    campaign = _draft(request, slug)
    try:
        drafts.draft_go_live(campaign=campaign, actor=request.user.get_username())
    except AnnotationError as exc:
        _refused(request, exc)
        return redirect("dashboard:wizard_review", campaign.slug)
    messages.success(request, f"'{campaign.slug}' is live: workers can start at its link.")
    return redirect("dashboard:campaign", campaign.slug)
