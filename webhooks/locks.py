"""The webhooks app's row locks: a delivery's row, each taken alone in its transaction (the
core's locks and their order are ``annotation.locks``'s)."""

from __future__ import annotations

from uuid import UUID

from annotation.models import Campaign
from webhooks.models import WebhookDelivery


def delivery_claim_lock(delivery_id: int) -> WebhookDelivery | None:
    """Lock the pending delivery ``delivery_id`` with its endpoint read in the same query,
    unless another transaction holds it (``SKIP LOCKED``: a claim, not a wait); None if it
    is held, gone or no longer pending."""
    return (
        WebhookDelivery.objects.select_for_update(skip_locked=True)
        .select_related("endpoint")
        .filter(pk=delivery_id, status=WebhookDelivery.Status.PENDING)
        .first()
    )


def delivery_lock(campaign: Campaign, delivery_id: str | UUID) -> WebhookDelivery | None:
    """Lock the campaign's delivery with this delivery id; None if it has none."""
    return (
        WebhookDelivery.objects.select_for_update()
        .filter(endpoint__campaign=campaign, delivery_id=delivery_id)
        .first()
    )
