"""The campaign's provider page: publish on a provider (after a confirmation with its cost),
add places, and pause, resume or stop the provider's side.

Thin views over ``recruitment`` (``launch_preview``, ``campaign_launch``,
``publication_extend``, ``publication_set_state``): the same checks, budget and audit log as
``manage.py launch``. A provider this site cannot reach (no credentials) or a publication
whose state allows no action says why instead of offering a button.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from annotation.models import Campaign
from dashboard.access import campaign_for, staff_required
from dashboard.money import money_text, provider_currency
from evalsite.errors import AnnotationError, InvalidParameters, NotFound
from providers import PROVIDERS, provider_get
from recruitment.models import Publication
from recruitment.services import (
    LaunchOptions,
    campaign_launch,
    launch_preview,
    publication_extend,
    publication_set_state,
)

PLACES_MAX = 100_000
# The provider-side actions each publication status allows (publication_set_state's table).
STATE_ACTIONS: dict[str, tuple[tuple[str, str], ...]] = {
    Publication.Status.LIVE: (("pause", "Pause"), ("stop", "Stop for good")),
    Publication.Status.PAUSED: (("resume", "Resume"), ("stop", "Stop for good")),
}
NO_ACTIONS: dict[str, str] = {
    Publication.Status.STOPPED: "Stopped for good: nothing more can be done on the provider.",
    Publication.Status.FAILED: "Publishing failed; the HITs that were made are listed.",
    Publication.Status.PUBLISHING: "Still publishing.",
}


@dataclass(frozen=True)
class PublicationRow:
    """One publication as the page shows it: what may be done, or why nothing can."""

    publication: Publication
    places: int
    currency: str
    actions: tuple[tuple[str, str], ...]
    extendable: bool
    why_not: str  # why no action is offered ("" when some are)


def publication_rows(campaign: Campaign) -> list[PublicationRow]:
    """Return the campaign's publications, oldest first, with the actions each allows."""
    rows = []
    for publication in (
        Publication.objects.filter(campaign=campaign).order_by("pk").prefetch_related("hits")
    ):
        unavailable = provider_get(publication.provider).unavailable()
        actions = STATE_ACTIONS.get(publication.status, ())
        why = NO_ACTIONS.get(publication.status, "")
        if unavailable and actions:
            actions, why = (), unavailable
        rows.append(
            PublicationRow(
                publication=publication,
                places=sum(h.max_assignments for h in publication.hits.all()),
                currency=provider_currency(publication.provider),
                actions=actions,
                extendable=bool(actions),
                why_not=why,
            )
        )
    return rows


def publish_options(*, provider: str, production: bool, places: str) -> LaunchOptions:
    """Check the publish form: a provider this site can reach, places a whole number."""
    chosen = provider_get(provider)  # names the known ones when it is not
    if why := chosen.unavailable():
        raise InvalidParameters(why)
    text = places.strip()
    if text and not (text.isascii() and text.isdigit() and 1 <= int(text) <= PLACES_MAX):
        raise InvalidParameters(f"Places must be a whole number from 1 to {PLACES_MAX}.")
    return LaunchOptions(
        provider=chosen.name, production=production, places=int(text) if text else None
    )


def _publication(campaign: Campaign, publication_id: int) -> Publication:
    publication = Publication.objects.filter(campaign=campaign, pk=publication_id).first()
    if publication is None:
        raise NotFound("No such publication of this campaign.")
    return publication


def _back(slug: str) -> HttpResponse:
    return redirect("dashboard:provider", slug=slug)


@require_GET
@staff_required
def provider_page(request: HttpRequest, slug: str) -> HttpResponse:
    campaign = campaign_for(request.user, slug)
    providers = [(p.name, p.title, p.unavailable(), provider_currency(p.name)) for p in PROVIDERS]
    context = {"campaign": campaign, "rows": publication_rows(campaign), "providers": providers}
    return render(request, "dashboard/provider.html", context)


@require_POST
@staff_required
def provider_publish(request: HttpRequest, slug: str) -> HttpResponse:
    """Publish on a provider: first a page with the cost, then (``confirmed=1``) publish."""
    campaign = campaign_for(request.user, slug)
    try:
        options = publish_options(
            provider=request.POST.get("provider", ""),
            production=request.POST.get("production") == "on",
            places=request.POST.get("places", ""),
        )
        if request.POST.get("confirmed") != "1":
            preview = launch_preview(campaign=campaign, options=options)
            context = {
                "campaign": campaign,
                "options": options,
                "preview": preview,
                "currency": provider_currency(options.provider),
                "places": request.POST.get("places", "").strip(),
            }
            return render(request, "dashboard/provider_confirm.html", context)
        publication, preview = campaign_launch(
            campaign=campaign, options=options, actor=request.user.get_username()
        )
    except AnnotationError as exc:
        messages.error(request, exc.message)
    else:
        cost = money_text(preview.total, provider_currency(publication.provider))
        messages.success(
            request,
            f"Published on {publication.provider}: {preview.plan.places} place(s), at most "
            f"{cost} reserved.",
        )
    return _back(slug)


@require_POST
@staff_required
def provider_extend(request: HttpRequest, slug: str, publication_id: int) -> HttpResponse:
    """Add places to each HIT (or the study) of a publication, within the budget."""
    campaign = campaign_for(request.user, slug)
    text = request.POST.get("extra", "").strip()
    try:
        publication = _publication(campaign, publication_id)
        if why := provider_get(publication.provider).unavailable():
            raise InvalidParameters(why)
        if not (text.isascii() and text.isdigit()):
            raise InvalidParameters("The number of extra places must be a whole number.")
        cost = publication_extend(
            publication=publication, extra=int(text), actor=request.user.get_username()
        )
    except AnnotationError as exc:
        messages.error(request, exc.message)
    else:
        spent = money_text(cost, provider_currency(publication.provider))
        messages.success(request, f"Added {text} place(s) per HIT for at most {spent}.")
    return _back(slug)


@require_POST
@staff_required
def provider_state(request: HttpRequest, slug: str, publication_id: int) -> HttpResponse:
    """Pause, resume or stop the provider's side of a publication."""
    campaign = campaign_for(request.user, slug)
    action = request.POST.get("action", "")
    try:
        publication = _publication(campaign, publication_id)
        if why := provider_get(publication.provider).unavailable():
            raise InvalidParameters(why)
        if action == "stop" and request.POST.get("confirmed") != "on":
            raise InvalidParameters("Tick the box to stop for good: a stop cannot be undone.")
        publication_set_state(
            publication=publication, action=action, actor=request.user.get_username()
        )
    except AnnotationError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"The {publication.provider} side is now {publication.status}.")
    return _back(slug)
