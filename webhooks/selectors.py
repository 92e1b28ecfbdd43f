"""Webhook reads: a campaign's endpoints and its delivery log."""

from __future__ import annotations

from django.db.models import QuerySet

from annotation.models import Campaign
from webhooks.models import WebhookDelivery, WebhookEndpoint

LOG_LENGTH = 100


def webhooks_of(campaign: Campaign) -> QuerySet[WebhookEndpoint]:
    return WebhookEndpoint.objects.filter(campaign=campaign).order_by("created_at", "pk")


def deliveries_of(campaign: Campaign, *, limit: int = LOG_LENGTH) -> list[WebhookDelivery]:
    """Return the campaign's latest deliveries, newest first (one query)."""
    rows = (
        WebhookDelivery.objects.filter(endpoint__campaign=campaign)
        .select_related("endpoint")
        .defer("payload")
        .order_by("-created_at", "-pk")
    )
    return list(rows[:limit])
