"""Webhook writes: endpoints, events emitted into deliveries, and each delivery's attempts.

``webhook_emit`` is what the rest of the site calls, once, where an event happens: it writes
one delivery row per matching endpoint in the caller's transaction and queues the send after
the commit. The HTTP request runs only in the Celery task (``webhooks.tasks``), never in the
request that emitted the event.
"""

from __future__ import annotations

import json
import logging
import random
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any
from uuid import UUID

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from annotation.models import Campaign
from evalsite.celery import task_send
from evalsite.errors import InvalidParameters, NotFound
from webhooks import transport
from webhooks.locks import delivery_claim_lock, delivery_lock
from webhooks.models import SUBSCRIBABLE, Event, WebhookDelivery, WebhookEndpoint
from webhooks.signing import secret_new, signature, standard_signature

logger = logging.getLogger(__name__)

# The longest waits after the 1st..5th failed attempt (each wait is drawn between none and
# this, "full jitter", so the retries of many deliveries that failed together, say at a
# receiver's outage, spread out instead of arriving together); a 6th failure fails the
# delivery (at most about 14.6 h after the event). A Retry-After longer than the wait is
# honoured, up to MAX_RETRY_AFTER.
BACKOFF: tuple[timedelta, ...] = (
    timedelta(minutes=1),
    timedelta(minutes=5),
    timedelta(minutes=30),
    timedelta(hours=2),
    timedelta(hours=12),
)
MAX_ATTEMPTS = len(BACKOFF) + 1
MAX_RETRY_AFTER = timedelta(hours=24)
# An endpoint's lease outlasts its attempt's deadline by this much (the database writes
# before and after the request), so only a dead attempt's lease expires.
LEASE_MARGIN = timedelta(seconds=30)
ENDPOINTS_PER_CAMPAIGN = 10
# Delivered and failed deliveries are kept this long (the log shows the latest 100).
KEEP = timedelta(days=30)
BUDGET_LOW_SHARE = Decimal("0.10")

Data = Mapping[str, Any] | Callable[[], Mapping[str, Any]]


def _allow_private() -> bool:
    return bool(getattr(settings, "WEBHOOKS_ALLOW_PRIVATE", False))


def lease_length() -> timedelta:
    """How long an endpoint's lease lasts: its attempt's deadline and a margin."""
    return timedelta(seconds=settings.WEBHOOKS_DEADLINE) + LEASE_MARGIN


# --- endpoints ------------------------------------------------------------------------------


def webhook_url_clean(url: str) -> str:
    """Return the URL stripped, or refuse it: http(s), no credentials, a public host."""
    url = (url or "").strip()
    try:
        target = transport.url_check(url)
        if not _allow_private():
            transport.addresses(target, allow_private=False)
    except transport.UnsafeUrl as exc:
        raise InvalidParameters(str(exc), fields={"url": str(exc)}) from None
    return url


def webhook_events_clean(events: Any) -> list[str]:
    """Return the known events in their order, or refuse an unknown or empty list."""
    if isinstance(events, str) or not isinstance(events, list | tuple) or not events:
        raise InvalidParameters("Choose at least one event.", fields={"events": "Required."})
    unknown = [e for e in events if e not in SUBSCRIBABLE]
    if unknown:
        raise InvalidParameters(
            f"Unknown event {unknown[0]!r}; choose from {', '.join(SUBSCRIBABLE)}.",
            fields={"events": "Unknown event."},
        )
    return [e for e in SUBSCRIBABLE if e in events]


def webhook_create(
    *, campaign: Campaign, url: str, events: Any, user: Any = None
) -> WebhookEndpoint:
    """Register ``url`` for ``events`` of the campaign with a new secret (show it once)."""
    chosen = webhook_events_clean(events)  # before the URL's address is looked up
    url = webhook_url_clean(url)
    if WebhookEndpoint.objects.filter(campaign=campaign).count() >= ENDPOINTS_PER_CAMPAIGN:
        raise InvalidParameters(
            f"A campaign has at most {ENDPOINTS_PER_CAMPAIGN} webhook endpoints; remove one."
        )
    return WebhookEndpoint.objects.create(
        campaign=campaign,
        url=url,
        secret=secret_new(),
        events=chosen,
        created_by=user if getattr(user, "is_authenticated", False) else None,
    )


def webhook_delete(*, campaign: Campaign, endpoint_id: int) -> None:
    """Remove one of the campaign's endpoints with its delivery log (pending ones are dropped)."""
    deleted, _ = WebhookEndpoint.objects.filter(campaign=campaign, pk=endpoint_id).delete()
    if not deleted:
        raise NotFound("No such webhook endpoint in this campaign.")


# --- events ---------------------------------------------------------------------------------


def webhook_emit(*, campaign: Campaign | int, event: str, data: Data) -> list[WebhookDelivery]:
    """Record ``event`` for each active endpoint of the campaign that wants it; queue the sends.

    Runs in the caller's transaction: the rows commit or roll back with the event, and the
    sends are queued only after the commit. Costs one query when no endpoint wants the
    event; ``data`` may be a callable, called only when one does.
    """
    campaign_id = campaign if isinstance(campaign, int) else campaign.pk
    endpoints = [
        e
        for e in WebhookEndpoint.objects.filter(campaign_id=campaign_id, active=True).only(
            "pk", "events"
        )
        if event in e.events
    ]
    if not endpoints:
        return []
    slug = (
        campaign.slug
        if isinstance(campaign, Campaign)
        else Campaign.objects.values_list("slug", flat=True).get(pk=campaign_id)
    )
    values = json.loads(json.dumps(dict(data() if callable(data) else data), cls=DjangoJSONEncoder))
    rows = [_delivery_add(endpoint, event, slug, values) for endpoint in endpoints]
    ids = [row.pk for row in rows]
    transaction.on_commit(lambda: deliveries_queue(ids))
    return rows


def _delivery_add(
    endpoint: WebhookEndpoint, event: str, slug: str, values: Mapping[str, Any]
) -> WebhookDelivery:
    """Write one delivery of ``event`` to ``endpoint``, due now, its body fixed."""
    now = timezone.now()
    row = WebhookDelivery(endpoint=endpoint, event=event, next_attempt_at=now)
    row.payload = {
        "id": str(row.delivery_id),
        "event": event,
        "campaign": slug,
        "created_at": now.isoformat().replace("+00:00", "Z"),
        "data": dict(values),
    }
    row.save()
    return row


@transaction.atomic
def webhook_test_send(*, campaign: Campaign, endpoint_id: int) -> WebhookDelivery:
    """Send the event ``webhook.test`` to one of the campaign's endpoints: a real delivery,
    signed, logged and retried like any other, its data ``{"test": true}``.

    Refused for an endpoint that is not the campaign's, or that answered 410 Gone (off).
    """
    endpoint = WebhookEndpoint.objects.filter(campaign=campaign, pk=endpoint_id).first()
    if endpoint is None:
        raise NotFound("No such webhook endpoint in this campaign.")
    if not endpoint.active:
        raise InvalidParameters(
            "This endpoint is off (it answered 410 Gone); add it again to use it."
        )
    data = {"test": True, "message": "A test event sent from the evalsite dashboard."}
    row = _delivery_add(endpoint, Event.TEST, campaign.slug, data)
    transaction.on_commit(lambda: deliveries_queue([row.pk]))
    return row


def deliveries_queue(ids: list[int]) -> None:
    """Queue one send task per delivery; a broker that is down leaves them to the sweep."""
    for pk in ids:
        try:
            task_send("webhooks.tasks.webhook_deliver", pk)
        except Exception:  # the event is stored; webhooks_due sends it within a minute
            logger.warning("webhook delivery %s not queued; the sweep will send it", pk)


# --- attempts -------------------------------------------------------------------------------


def _claim(delivery_id: int, now: datetime) -> WebhookDelivery | None:
    """Claim a due delivery for one attempt with its endpoint's lease, or return None (gone,
    done, not due, or an attempt to the same endpoint in flight)."""
    with transaction.atomic():
        row = delivery_claim_lock(delivery_id)
        if row is None or row.next_attempt_at > now:
            return None
        if not row.endpoint.active:
            row.status = WebhookDelivery.Status.FAILED
            row.last_error = "The endpoint is inactive (it answered 410 Gone)."
            row.save(update_fields=["status", "last_error"])
            return None
        lease = now + lease_length()
        # A conditional UPDATE: a concurrent one waits for this transaction, then finds the
        # lease taken; no lock is held once the claim commits.
        taken = (
            WebhookEndpoint.objects.filter(pk=row.endpoint_id)
            .filter(Q(sending_until__isnull=True) | Q(sending_until__lte=now))
            .update(sending_until=lease)
        )
        if not taken:
            return None
        row.endpoint.sending_until = lease
        row.attempts += 1
        row.save(update_fields=["attempts"])
        return row


def delivery_body(delivery: WebhookDelivery) -> bytes:
    """Return the bytes sent (and signed): the payload as compact JSON, keys in order."""
    return json.dumps(delivery.payload, separators=(",", ":"), ensure_ascii=False).encode()


def delivery_attempt(
    *,
    delivery_id: int,
    now: datetime | None = None,
    send: Callable[..., transport.Outcome] | None = None,
) -> str:
    """Try to send one delivery if it is due; return its status afterwards.

    Idempotent: a delivered or failed delivery, one not due yet and one whose endpoint has
    an attempt in flight elsewhere are left alone (a redelivered or concurrent task sends
    nothing). The claim is committed before the request, so no row lock is held while a
    receiver answers; the request ends by ``settings.WEBHOOKS_DEADLINE``.
    """
    now = now or timezone.now()
    row = _claim(delivery_id, now)
    if row is None:
        status = WebhookDelivery.objects.filter(pk=delivery_id).values_list("status", flat=True)
        return status.first() or "missing"
    body = delivery_body(row)
    stamp = int(now.timestamp())
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "evalsite-webhooks/1",
        "X-Evalsite-Event": row.event,
        "X-Evalsite-Delivery": str(row.delivery_id),
        "X-Evalsite-Timestamp": str(stamp),
        "X-Evalsite-Signature": signature(row.endpoint.secret, stamp, body),
        # Standard Webhooks: its libraries verify these (webhooks.signing).
        "webhook-id": str(row.delivery_id),
        "webhook-timestamp": str(stamp),
        "webhook-signature": standard_signature(
            row.endpoint.secret, str(row.delivery_id), stamp, body
        ),
    }
    send = send or transport.post
    outcome = send(
        row.endpoint.url,
        body,
        headers,
        allow_private=_allow_private(),
        deadline_s=settings.WEBHOOKS_DEADLINE,
    )
    return _record(row, outcome, now)


def _record(row: WebhookDelivery, outcome: transport.Outcome, now: datetime) -> str:
    """Write an attempt's outcome, if the row is still this attempt's; release the endpoint's
    lease and queue its next due delivery (the others wait for the lease, or for the sweep)."""
    changes: dict[str, Any] = {
        "last_status_code": outcome.status,
        "last_error": outcome.error[:500],
    }
    if outcome.delivered:
        changes |= {"status": WebhookDelivery.Status.DELIVERED, "delivered_at": timezone.now()}
    elif outcome.status == 410 or row.attempts >= MAX_ATTEMPTS:
        changes["status"] = WebhookDelivery.Status.FAILED
    else:
        wait = BACKOFF[row.attempts - 1] * random.random()
        if outcome.retry_after is not None:
            wait = max(wait, min(timedelta(seconds=outcome.retry_after), MAX_RETRY_AFTER))
        changes["next_attempt_at"] = now + wait
    with transaction.atomic():
        WebhookDelivery.objects.filter(
            pk=row.pk, attempts=row.attempts, status=WebhookDelivery.Status.PENDING
        ).update(**changes)
        endpoint = WebhookEndpoint.objects.filter(pk=row.endpoint_id)
        if outcome.status == 410:  # the receiver says it is gone for good
            endpoint.update(active=False)
        endpoint.filter(sending_until=row.endpoint.sending_until).update(sending_until=None)
        due = deliveries_due(now=timezone.now(), endpoint_id=row.endpoint_id, limit=2)
        following = [pk for pk in due if pk != row.pk][:1]  # this one waits for its retry
        transaction.on_commit(lambda: deliveries_queue(following))
    return str(changes.get("status", WebhookDelivery.Status.PENDING))


def deliveries_due(
    *, now: datetime | None = None, endpoint_id: int | None = None, limit: int = 500
) -> list[int]:
    """Return pending deliveries due now whose endpoint has no attempt in flight, oldest
    first (of one endpoint, if given)."""
    now = now or timezone.now()
    rows = WebhookDelivery.objects.filter(
        status=WebhookDelivery.Status.PENDING, next_attempt_at__lte=now
    ).exclude(endpoint__sending_until__gt=now)
    if endpoint_id is not None:
        rows = rows.filter(endpoint_id=endpoint_id)
    return list(rows.order_by("next_attempt_at").values_list("pk", flat=True)[:limit])


def delivery_redeliver(*, campaign: Campaign, delivery_id: str | UUID) -> WebhookDelivery:
    """Send a delivered or failed delivery again under the same id, with fresh attempts."""
    with transaction.atomic():
        row = delivery_lock(campaign, delivery_id)
        if row is None:
            raise NotFound("No such delivery in this campaign.")
        if row.status == WebhookDelivery.Status.PENDING:
            raise InvalidParameters("This delivery is still being tried; wait for its outcome.")
        WebhookEndpoint.objects.filter(pk=row.endpoint_id).update(active=True)
        row.status = WebhookDelivery.Status.PENDING
        row.attempts = 0
        row.next_attempt_at = timezone.now()
        row.delivered_at = None
        row.save()
        pk = row.pk
        transaction.on_commit(lambda: deliveries_queue([pk]))
    return row


def deliveries_prune(*, now: datetime | None = None) -> int:
    """Delete delivered and failed deliveries older than ``KEEP``; return how many."""
    cutoff = (now or timezone.now()) - KEEP
    deleted, _ = (
        WebhookDelivery.objects.filter(created_at__lt=cutoff)
        .exclude(status=WebhookDelivery.Status.PENDING)
        .delete()
    )
    return deleted
