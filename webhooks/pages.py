"""A campaign's webhooks page: endpoints (add with the secret shown once, send a test event,
remove) and the delivery log with a redeliver button. Thin views over ``webhooks.services`` and
``webhooks.selectors``; the campaign's owner only (``campaign_for``)."""

from __future__ import annotations

from uuid import UUID

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.cache import add_never_cache_headers
from django.views.decorators.http import require_GET, require_POST

from annotation.models import Campaign
from dashboard.access import campaign_for, staff_required
from evalsite.errors import AnnotationError
from webhooks.models import SUBSCRIBABLE, Event, WebhookEndpoint
from webhooks.selectors import LOG_LENGTH, deliveries_of, webhooks_of
from webhooks.services import (
    delivery_redeliver,
    webhook_create,
    webhook_delete,
    webhook_test_send,
)


def _page(
    request: HttpRequest, campaign: Campaign, new: WebhookEndpoint | None = None
) -> HttpResponse:
    context = {
        "campaign": campaign,
        "endpoints": webhooks_of(campaign),
        "deliveries": deliveries_of(campaign),
        "log_length": LOG_LENGTH,
        "events": [(value, Event(value).label) for value in SUBSCRIBABLE],
        "new": new,
    }
    response = render(request, "dashboard/webhooks.html", context)
    add_never_cache_headers(response)  # the new endpoint's secret is in it once
    return response


@require_GET
@staff_required
def webhooks_page(request: HttpRequest, slug: str) -> HttpResponse:
    return _page(request, campaign_for(request.user, slug))


@require_POST
@staff_required
def webhook_new(request: HttpRequest, slug: str) -> HttpResponse:
    campaign = campaign_for(request.user, slug)
    try:
        endpoint = webhook_create(
            campaign=campaign,
            url=request.POST.get("url", ""),
            events=request.POST.getlist("events"),
            user=request.user,
        )
    except AnnotationError as exc:
        messages.error(request, exc.message)
        return redirect("webhooks:list", slug=slug)
    return _page(request, campaign, new=endpoint)


@require_POST
@staff_required
def webhook_remove(request: HttpRequest, slug: str, endpoint_id: int) -> HttpResponse:
    campaign = campaign_for(request.user, slug)
    try:
        webhook_delete(campaign=campaign, endpoint_id=endpoint_id)
    except AnnotationError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, "Removed the endpoint and its deliveries.")
    return redirect("webhooks:list", slug=slug)


@require_POST
@staff_required
def webhook_redeliver(request: HttpRequest, slug: str, delivery_id: UUID) -> HttpResponse:
    campaign = campaign_for(request.user, slug)
    try:
        row = delivery_redeliver(campaign=campaign, delivery_id=delivery_id)
    except AnnotationError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"Delivery {row.delivery_id} queued again (same id).")
    return redirect("webhooks:list", slug=slug)


@require_POST
@staff_required
def webhook_test(request: HttpRequest, slug: str, endpoint_id: int) -> HttpResponse:
    """Send the test event to one endpoint: a real delivery, in the log like any other."""
    campaign = campaign_for(request.user, slug)
    try:
        row = webhook_test_send(campaign=campaign, endpoint_id=endpoint_id)
    except AnnotationError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(
            request,
            f"Test event queued for {row.endpoint.url} (delivery {row.delivery_id}); "
            "its outcome is in the log below.",
        )
    return redirect("webhooks:list", slug=slug)
