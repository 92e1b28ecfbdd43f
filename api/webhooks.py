"""Webhooks: a campaign's endpoints (list, add with the secret shown once, read, remove, send
a test event) and the deliveries of one (read, send again).

Each operation calls the service or selector the dashboard's webhooks page calls
(``webhooks.services``, ``webhooks.selectors``), for a campaign the key may see
(``campaign_of``), so a URL or event the page refuses is refused here with the same message.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.http import HttpRequest, JsonResponse
from ninja import Path, Query, Router, Status

from annotation.models import Campaign
from api.access import campaign_of, user_of
from api.errors import CLIENT_ERRORS, ApiError, ErrorOut, query_check
from api.idempotency import IdempotencyHeader, idempotent
from api.schemas import CampaignSlug, Page
from api.webhook_schemas import (
    DeliveryOut,
    DeliveryPage,
    WebhookCreated,
    WebhookIn,
    WebhookOut,
    WebhookPage,
)
from webhooks.models import WebhookDelivery, WebhookEndpoint
from webhooks.selectors import webhooks_of
from webhooks.services import (
    delivery_redeliver,
    webhook_create,
    webhook_delete,
    webhook_test_send,
)

router = Router(tags=["webhooks"])

EndpointId = Path(..., ge=1, le=2**62, description="The endpoint's id.", example=1)
DeliveryId = Path(
    ...,
    description="The delivery's id (X-Evalsite-Delivery).",
    example="5f0c2b4e-9d1a-4c3e-8f5b-0a1b2c3d4e5f",
)
_NEW_EXAMPLES = {
    "requestBody": {
        "content": {
            "application/json": {
                "examples": {
                    "jobs": {
                        "summary": "Reports and exports as they finish",
                        "value": {
                            "url": "https://example.org/hooks/evalsite",
                            "events": ["job.done"],
                        },
                    },
                    "progress": {
                        "summary": "Every submission and the end of the campaign",
                        "value": {
                            "url": "https://example.org/hooks/evalsite",
                            "events": ["assignment.submitted", "campaign.finished"],
                        },
                    },
                }
            }
        }
    }
}


def webhook_out(endpoint: WebhookEndpoint) -> dict[str, Any]:
    return {
        "id": endpoint.pk,
        "url": endpoint.url,
        "events": endpoint.events,
        "active": endpoint.active,
        "secret_hint": endpoint.secret_hint,
        "created_at": endpoint.created_at,
    }


def delivery_out(delivery: WebhookDelivery) -> dict[str, Any]:
    return {
        "id": str(delivery.delivery_id),
        "event": delivery.event,
        "status": delivery.status,
        "attempts": delivery.attempts,
        "last_status_code": delivery.last_status_code,
        "last_error": delivery.last_error,
        "created_at": delivery.created_at,
        "next_attempt_at": delivery.next_attempt_at,
        "delivered_at": delivery.delivered_at,
    }


def _endpoint(campaign: Campaign, endpoint_id: int) -> WebhookEndpoint:
    endpoint = webhooks_of(campaign).filter(pk=endpoint_id).first()
    if endpoint is None:
        raise ApiError(404, "No such webhook endpoint in this campaign.")
    return endpoint


@router.get("/{slug}/webhooks", response={200: WebhookPage, CLIENT_ERRORS: ErrorOut})
def webhook_list(request: HttpRequest, slug: str = CampaignSlug) -> dict[str, Any]:
    """The campaign's endpoints, oldest first (at most 10); secrets are not shown again."""
    query_check(request, frozenset())
    endpoints = [webhook_out(e) for e in webhooks_of(campaign_of(request, slug))]
    return {"count": len(endpoints), "results": endpoints}


@router.post(
    "/{slug}/webhooks",
    response={201: WebhookCreated, CLIENT_ERRORS: ErrorOut},
    openapi_extra=_NEW_EXAMPLES,
)
def webhook_add(
    request: HttpRequest,
    data: WebhookIn,
    slug: str = CampaignSlug,
    idempotency_key: str | None = IdempotencyHeader,
) -> JsonResponse:
    """Register a URL for some of the campaign's events (``webhook_create``: the URL checked
    as the dashboard checks it). The answer holds the signing secret, shown this once; a
    replay with the same ``Idempotency-Key`` answers it again instead of adding another."""
    campaign = campaign_of(request, slug)

    def add() -> tuple[int, dict[str, Any]]:
        endpoint = webhook_create(
            campaign=campaign, url=data.url, events=data.events, user=user_of(request)
        )
        body = WebhookCreated(**webhook_out(endpoint), secret=endpoint.secret)
        return 201, body.model_dump(mode="json")

    return idempotent(request, idempotency_key, add)


@router.get("/{slug}/webhooks/{endpoint_id}", response={200: WebhookOut, CLIENT_ERRORS: ErrorOut})
def webhook_get(
    request: HttpRequest, slug: str = CampaignSlug, endpoint_id: int = EndpointId
) -> dict[str, Any]:
    return webhook_out(_endpoint(campaign_of(request, slug), endpoint_id))


@router.delete("/{slug}/webhooks/{endpoint_id}", response={204: None, CLIENT_ERRORS: ErrorOut})
def webhook_remove(
    request: HttpRequest, slug: str = CampaignSlug, endpoint_id: int = EndpointId
) -> Status[None]:
    """Remove the endpoint with its delivery log (pending deliveries are dropped)."""
    webhook_delete(campaign=campaign_of(request, slug), endpoint_id=endpoint_id)
    return Status(204, None)


@router.post(
    "/{slug}/webhooks/{endpoint_id}/test", response={202: DeliveryOut, CLIENT_ERRORS: ErrorOut}
)
def webhook_test(
    request: HttpRequest, slug: str = CampaignSlug, endpoint_id: int = EndpointId
) -> Status[dict[str, Any]]:
    """Send the event ``webhook.test`` to this endpoint: a real delivery, signed and logged."""
    delivery = webhook_test_send(campaign=campaign_of(request, slug), endpoint_id=endpoint_id)
    delivery.refresh_from_db()  # without a broker the first attempt ran already
    return Status(202, delivery_out(delivery))


@router.get(
    "/{slug}/webhooks/{endpoint_id}/deliveries",
    response={200: DeliveryPage, CLIENT_ERRORS: ErrorOut},
)
def webhook_deliveries(
    request: HttpRequest, page: Query[Page], slug: str = CampaignSlug, endpoint_id: int = EndpointId
) -> dict[str, Any]:
    """The endpoint's deliveries, newest first: status, attempts, last answer, times
    (delivered and failed ones are kept 30 days)."""
    query_check(request, Page)
    endpoint = _endpoint(campaign_of(request, slug), endpoint_id)
    deliveries = endpoint.deliveries.defer("payload").order_by("-created_at", "-pk")
    rows = deliveries[page.offset : page.offset + page.limit]
    return {
        "count": deliveries.count(),
        "limit": page.limit,
        "offset": page.offset,
        "results": [delivery_out(d) for d in rows],
    }


@router.post(
    "/{slug}/webhooks/deliveries/{delivery_id}/redeliver",
    response={202: DeliveryOut, CLIENT_ERRORS: ErrorOut},
)
def webhook_redeliver(
    request: HttpRequest, slug: str = CampaignSlug, delivery_id: UUID = DeliveryId
) -> Status[dict[str, Any]]:
    """Send a delivered or failed delivery again under the same id, with fresh attempts
    (``delivery_redeliver``; it turns a deactivated endpoint on again)."""
    row = delivery_redeliver(campaign=campaign_of(request, slug), delivery_id=delivery_id)
    row.refresh_from_db()
    return Status(202, delivery_out(row))
