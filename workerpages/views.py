"""Worker pages: the task page, consent, answer submission, the end screen and withdrawal.

These pages live inside the provider's iframe (MTurk) or a plain tab (Prolific, local). They
do not rely on cookies: the worker's identity comes from the URL's provider parameters and
each form carries a signed assignment token, which is why the submit view is CSRF-exempt
(third-party cookies are blocked in iframes, and the token already proves the sender).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.utils.safestring import mark_safe
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.clickjacking import xframe_options_exempt
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation.models import Campaign
from annotation.protocols import LiveChat, registry
from annotation.ratelimits import ARRIVE, SUBMIT, limited
from annotation.services import (
    Visit,
    assignment_authorise,
    assignment_token,
    consent_give,
    consent_pending,
    judgment_submit,
    presentation_seed,
    training_pending,
    worker_forget,
    worker_visit,
)
from annotation.study_pages import (
    DECLINED,
    instructions_shown,
    markdown_safe,
)
from evalsite.errors import AnnotationError, InvalidAnswer, NotAllowed
from providers import Arrival
from recruitment.services import arrival_verify, assignment_completion
from workerpages.chat import chat_page
from workerpages.helpers import (
    arrival_of,
    framed,
    instructions_card,
    message_page,
    no_study,
    personal_link,
    question_fields,
    refused,
    script_strings,
    submitted_data,
    task_url,
    wants_json,
)


def _render_visit(
    request: HttpRequest,
    campaign: Campaign,
    arrival: Arrival,
    visit: Visit,
    *,
    errors: dict[str, str] | None = None,
    answers: dict[str, Any] | None = None,
    error_message: str = "",
    status: int = 200,
) -> HttpResponse:
    protocol = registry.get(campaign.protocol)
    parameters = protocol.clean_parameters(campaign.parameters)
    context: dict[str, Any] = {
        "campaign": campaign,
        "visit": visit,
        "arrival": arrival,
        "personal_link": personal_link(request, arrival),
    }
    if visit.kind == "done":
        assert visit.assignment is not None
        template = "annotation/done.html"
        context.update(
            completion=assignment_completion(assignment=visit.assignment),
            continue_url=task_url(campaign, arrival)
            + ("&another=1" if isinstance(protocol, LiveChat) else ""),
            live_chat=isinstance(protocol, LiveChat),
            withdraw_url=task_url(campaign, arrival, "task_withdraw")
            + "&"
            + urlencode({"token": assignment_token(visit.assignment)}),
        )
    elif visit.kind in ("nothing", "stopped"):
        template = "annotation/nothing.html"
    else:
        assert visit.item is not None and visit.assignment is not None
        template = "annotation/task.html"
        context.update(
            protocol=protocol,
            protocol_template=protocol.template_name,
            instructions_card=instructions_card(campaign),
            payload=visit.item.payload,
            shown=protocol.presentation(
                parameters,
                visit.item.payload,
                presentation_seed(item=visit.item, worker=visit.assignment.worker),
            ),
            fields=question_fields(protocol.questions(parameters), errors, answers),
            errors=errors or {},
            error_message=error_message,
            min_seconds=campaign.min_seconds_per_item,
            token=assignment_token(visit.assignment),
            submit_url=task_url(campaign, arrival, "task_submit"),
            total=visit.assignment.items_target,
            script_strings=script_strings(),
        )
    return framed(render(request, template, context, status=status))


@xframe_options_exempt
@require_GET
@limited(ARRIVE)
def task(request: HttpRequest, slug: str, campaign: Campaign | None) -> HttpResponse:
    """Show the worker their next item (or the preview, or the end screen)."""
    if campaign is None or not (campaign.is_live or _may_preview(request, campaign)):
        return no_study(request)
    try:
        arrival = arrival_of(request)
        if consent_pending(campaign=campaign, arrival=arrival):  # intro and consent first
            return redirect(task_url(campaign, arrival, "task_consent"))
        if training_pending(campaign=campaign, arrival=arrival):  # then the training
            return redirect(task_url(campaign, arrival, "task_training"))
        if isinstance(registry.get(campaign.protocol), LiveChat):
            return framed(chat_page(request, campaign, arrival))
        if arrival.preview:
            return _preview(request, campaign)
        arrival, worker = arrival_verify(campaign=campaign, arrival=arrival)
        visit = worker_visit(campaign=campaign, arrival=arrival, worker=worker, arrived=True)
    except AnnotationError as exc:
        return refused(request, exc)
    return _render_visit(request, campaign, arrival, visit)


def _may_preview(request: HttpRequest, campaign: Campaign) -> bool:
    """Whether a researcher may look at the pages of a study that is not live (a draft, or a
    paused or finished one previewed from the dashboard); to anyone else such a campaign is
    like an unknown address: it tells a visitor nothing."""
    return request.user.is_staff


def _preview(request: HttpRequest, campaign: Campaign) -> HttpResponse:
    protocol = registry.get(campaign.protocol)
    parameters = protocol.clean_parameters(campaign.parameters)
    item = campaign.items.order_by("pk").first()
    context = {
        "campaign": campaign,
        "preview": True,
        "protocol_template": protocol.template_name,
        "instructions_card": instructions_card(campaign),
        "payload": item.payload if item else None,
        "shown": protocol.presentation(parameters, item.payload, "preview") if item else {},
        "fields": question_fields(protocol.questions(parameters), None, None),
        "total": campaign.items_per_assignment,
        "visit": Visit(kind="item", position=1),
        "script_strings": script_strings(),
    }
    return framed(render(request, "annotation/task.html", context))


@csrf_exempt
@xframe_options_exempt
@require_POST
@limited(SUBMIT)
def task_submit(request: HttpRequest, slug: str, campaign: Campaign | None) -> HttpResponse:
    """Store the worker's answers to one item, then send them to the next page."""
    if campaign is None or not campaign.is_live:
        return no_study(request)
    data: dict[str, Any] = {}
    try:
        arrival = arrival_of(request)
        data = submitted_data(request)
        # read=False: the signed token says whose it is; judgment_submit locks the row.
        assignment = assignment_authorise(
            campaign=campaign, arrival=arrival, token=str(data.get("token", "")), read=False
        )
        answers = data.get("answers")
        if not isinstance(answers, dict):
            raise InvalidAnswer("'answers' must be an object of question → answer.")
        result = judgment_submit(assignment=assignment, item_id=data.get("item"), answers=answers)
    except InvalidAnswer as exc:
        if wants_json(request):
            return JsonResponse(
                {"ok": False, "error": exc.message, "fields": exc.fields}, status=400
            )
        try:
            visit = worker_visit(campaign=campaign, arrival=arrival)
        except AnnotationError as again:
            return refused(request, again)
        return _render_visit(
            request,
            campaign,
            arrival,
            visit,
            errors=exc.fields,
            answers=data.get("answers"),
            error_message=exc.message,
            status=400,
        )
    except AnnotationError as exc:
        return refused(request, exc)
    if wants_json(request):
        return JsonResponse(
            {"ok": True, "stored": result.created, "assignment_done": result.assignment_done}
        )
    if result.assignment_done:
        url = task_url(campaign, arrival, "task_done") + "&" + urlencode({"token": data["token"]})
        return redirect(url)
    return redirect(task_url(campaign, arrival))


@xframe_options_exempt
@require_GET
@limited(ARRIVE)
def task_done(request: HttpRequest, slug: str, campaign: Campaign | None) -> HttpResponse:
    """End a finished assignment: MTurk's submit form, Prolific's redirect or a code."""
    if campaign is None:  # a finished study still shows its workers their completion
        return no_study(request)
    try:
        arrival = arrival_of(request)
        assignment = assignment_authorise(
            campaign=campaign, arrival=arrival, token=request.GET.get("token", "")
        )
        if assignment.is_open:
            raise NotAllowed(_("This assignment is not finished yet."))
        completion = assignment_completion(assignment=assignment)
    except AnnotationError as exc:
        return refused(request, exc)
    if completion.kind == "redirect":
        return redirect(completion.url)
    return _render_visit(request, campaign, arrival, Visit(kind="done", assignment=assignment))


@csrf_exempt  # as task_submit: workers in a provider's iframe have no session cookie
@xframe_options_exempt
@require_http_methods(["GET", "POST"])
@limited(ARRIVE)
def task_consent(request: HttpRequest, slug: str, campaign: Campaign | None) -> HttpResponse:
    """The study's intro and consent page (GET); then "I agree" records the consent and
    goes on to the items, "I do not agree" ends with the provider's return path (POST).

    Authenticated like the task page (``arrival_verify``); nothing is stored before the
    worker agrees: no worker row, assignment or lease.
    """
    if campaign is None or not (campaign.is_live or _may_preview(request, campaign)):
        return no_study(request)
    try:
        arrival = arrival_of(request)
        if arrival.preview:
            raise NotAllowed(_("This is a preview: accept the HIT to start."))
        arrival, _worker = arrival_verify(campaign=campaign, arrival=arrival)
        agrees = request.method == "POST" and request.POST.get("choice") == "agree"
        if agrees and consent_pending(campaign=campaign, arrival=arrival):
            consent_give(campaign=campaign, arrival=arrival)
    except AnnotationError as exc:
        return refused(request, exc)
    if request.method == "POST" and request.POST.get("choice") != "agree":
        text = str(DECLINED.get(arrival.provider, DECLINED["local"]))
        return message_page(request, text, 200, title=_("You are not taking part"))
    if request.method == "POST" or not consent_pending(campaign=campaign, arrival=arrival):
        return redirect(task_url(campaign, arrival))
    context = _intro_context(campaign, arrival) | {"personal_link": personal_link(request, arrival)}
    return framed(render(request, "annotation/intro.html", context))


def _intro_context(campaign: Campaign, arrival: Arrival) -> dict[str, Any]:
    instructions = instructions_shown(
        campaign.protocol,
        registry.get(campaign.protocol).clean_parameters(campaign.parameters),
        campaign.instructions,
    )
    # Safe to mark: markdown_safe's output went through the sanitizer (nh3).
    return {
        "campaign": campaign,
        "training": campaign.training_size,
        "pass_mark": campaign.training_pass_mark,
        "description": mark_safe(markdown_safe(campaign.description)),
        "instructions": mark_safe(markdown_safe(instructions)),
        "consent": mark_safe(markdown_safe(campaign.consent_text)),
        "action": task_url(campaign, arrival, "task_consent"),
    }


WITHDRAWN_PAGE = gettext_lazy(
    "You have withdrawn from this study. Your worker id and everything you wrote here are "
    "erased; your answers are kept anonymously or removed, as the study's description says. "
    "Any payment already made stays. On Prolific or Mechanical Turk, return the study there "
    "as well; you will not be rejected for withdrawing."
)


@csrf_exempt  # as task_submit: the signed token proves the sender
@xframe_options_exempt
@require_http_methods(["GET", "POST"])
@limited(SUBMIT)
def task_withdraw(request: HttpRequest, slug: str, campaign: Campaign | None) -> HttpResponse:
    """Withdraw from the study: a confirmation page (GET), then erasure (POST) by the
    campaign's policy (``worker_forget``)."""
    if campaign is None:
        return no_study(request)
    token = (request.POST if request.method == "POST" else request.GET).get("token", "")
    try:
        arrival = arrival_of(request)
        assignment = assignment_authorise(campaign=campaign, arrival=arrival, token=token)
        if request.method == "POST":
            worker_forget(worker=assignment.worker, actor="worker (withdrawal)", campaign=campaign)
    except AnnotationError as exc:
        return refused(request, exc)
    if request.method == "POST":
        return message_page(request, WITHDRAWN_PAGE, 200, title=_("You have withdrawn"))
    context = {
        "campaign": campaign,
        "token": token,
        "action": task_url(campaign, arrival, "task_withdraw"),
        "back": task_url(campaign, arrival),
        "drops": campaign.withdrawal == Campaign.Withdrawal.DROP,
    }
    return framed(render(request, "annotation/withdraw.html", context))


_STAFF_PATHS = ("/admin/", "/dashboard/")


def server_error(request: HttpRequest) -> HttpResponse:
    """The 500 page (``handler500``): plain, and on the worker pages framed as they are, so a
    worker inside a provider's iframe reads it instead of a blank frame."""
    text = (
        "<!doctype html><meta charset=utf-8><title>Sorry</title>"
        "<p>Something went wrong on our side. Your answers so far are saved; please reload "
        "this page in a minute.</p>"
    )
    response = HttpResponse(text, status=500)
    if not request.path.startswith(_STAFF_PATHS):
        response = framed(response)
        response.xframe_options_exempt = True  # type: ignore[attr-defined]
    return response
