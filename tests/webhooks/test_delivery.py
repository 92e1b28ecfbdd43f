"""Deliveries against a real local receiver: signed, retried with jittered backoff, sent once,
within one deadline, never to a private or reserved address unless allowed."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import socket
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from webhooks import services, transport
from webhooks.models import Event, WebhookDelivery, WebhookEndpoint
from webhooks.services import delivery_attempt, webhook_emit
from webhooks.signing import secret_new, standard_signature

DOCS = Path(__file__).resolve().parents[2] / "docs" / "api.md"


def _verify_from_docs():
    """The receiver's check exactly as docs/api.md shows it."""
    text = DOCS.read_text()
    block = re.search(r"```python\n(# verify a delivery.*?)```", text, re.S)
    assert block, "docs/api.md has the signature check snippet"
    namespace: dict = {}
    exec(block.group(1), namespace)  # noqa: S102 (our own documentation)
    return namespace["verify"]


def _emit(campaign, event=Event.JOB_DONE, data=None, capture=None) -> WebhookDelivery:
    rows = webhook_emit(campaign=campaign, event=event, data=data or {"job": 1})
    assert len(rows) == 1
    return rows[0]


def test_a_delivery_is_signed_and_carries_its_headers(endpoint, receiver, owned) -> None:
    delivery = _emit(owned, data={"job": 7, "kind": "report"})
    assert delivery_attempt(delivery_id=delivery.pk) == "delivered"
    [(headers, body)] = receiver.requests
    payload = json.loads(body)
    assert payload == {
        "id": str(delivery.delivery_id),
        "event": "job.done",
        "campaign": owned.slug,
        "created_at": payload["created_at"],
        "data": {"job": 7, "kind": "report"},
    }
    assert headers["X-Evalsite-Event"] == "job.done"
    assert headers["X-Evalsite-Delivery"] == str(delivery.delivery_id)
    assert headers["Content-Type"] == "application/json"
    verify = _verify_from_docs()
    assert verify(endpoint.secret, headers, body)
    stamp = headers["X-Evalsite-Timestamp"]
    expected = hmac.new(endpoint.secret.encode(), f"{stamp}.".encode() + body, hashlib.sha256)
    assert headers["X-Evalsite-Signature"] == "sha256=" + expected.hexdigest()
    assert not verify("whsec_other", headers, body)
    assert not verify(endpoint.secret, headers, body.replace(b"7", b"8"))
    # Standard Webhooks: the reference library verifies the same delivery, and only it.
    assert headers["webhook-id"] == str(delivery.delivery_id)
    assert Webhook(endpoint.secret).verify(body, headers) == payload
    with pytest.raises(WebhookVerificationError):
        Webhook(secret_new()).verify(body, headers)
    with pytest.raises(WebhookVerificationError):
        Webhook(endpoint.secret).verify(body.replace(b"7", b"8"), headers)
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.last_status_code) == ("delivered", 1, 200)
    assert delivery.delivered_at is not None


def test_a_receiver_answering_500_gets_the_delivery_retried_and_delivered_once(
    endpoint, receiver, owned
) -> None:
    receiver.answer(500)
    receiver.answer(503, Retry_After="600")
    delivery = _emit(owned)
    start = timezone.now()
    assert delivery_attempt(delivery_id=delivery.pk, now=start) == "pending"
    delivery.refresh_from_db()
    wait = delivery.next_attempt_at - start
    assert timedelta(0) <= wait <= timedelta(minutes=1)
    assert delivery.last_status_code == 500 and "HTTP 500" in delivery.last_error
    # Not due yet: nothing is sent, whoever asks.
    early = delivery.next_attempt_at - timedelta(microseconds=1)
    assert delivery_attempt(delivery_id=delivery.pk, now=early) == "pending"
    assert services.deliveries_due(now=early) == []
    assert len(receiver.requests) == 1
    later = delivery.next_attempt_at
    assert services.deliveries_due(now=later) == [delivery.pk]
    assert delivery_attempt(delivery_id=delivery.pk, now=later) == "pending"
    delivery.refresh_from_db()
    # The second wait is 5 minutes, but the receiver asked for 10 (Retry-After).
    assert delivery.next_attempt_at == later + timedelta(minutes=10)
    last = later + timedelta(minutes=10)
    assert delivery_attempt(delivery_id=delivery.pk, now=last) == "delivered"
    assert delivery_attempt(delivery_id=delivery.pk, now=last + timedelta(hours=1)) == "delivered"
    ids = {json.loads(body)["id"] for body in receiver.bodies()}
    assert len(receiver.requests) == 3 and ids == {str(delivery.delivery_id)}
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("delivered", 3)


def test_backoff_waits_at_most_the_schedule_and_ends_in_failed_after_six_attempts(
    endpoint, receiver, owned
) -> None:
    for _ in range(10):
        receiver.answer(500)
    delivery = _emit(owned)
    now = timezone.now()
    waits = []
    for _ in range(services.MAX_ATTEMPTS):
        status = delivery_attempt(delivery_id=delivery.pk, now=now)
        delivery.refresh_from_db()
        if status == "pending":
            waits.append(delivery.next_attempt_at - now)
            now = delivery.next_attempt_at
    assert status == "failed" and delivery.attempts == 6
    assert all(
        timedelta(0) <= wait <= most for wait, most in zip(waits, services.BACKOFF, strict=True)
    )
    assert delivery_attempt(delivery_id=delivery.pk, now=now + timedelta(days=1)) == "failed"
    assert len(receiver.requests) == 6


def test_410_gone_deactivates_the_endpoint(endpoint, receiver, owned) -> None:
    receiver.answer(410)
    delivery = _emit(owned)
    assert delivery_attempt(delivery_id=delivery.pk) == "failed"
    endpoint.refresh_from_db()
    assert not endpoint.active
    assert webhook_emit(campaign=owned, event=Event.JOB_DONE, data={}) == []


def test_retries_of_deliveries_that_failed_together_spread_out(endpoint, receiver, owned) -> None:
    for _ in range(8):
        receiver.answer(503)
    rows = [_emit(owned) for _ in range(8)]
    now = timezone.now()
    for row in rows:
        assert delivery_attempt(delivery_id=row.pk, now=now) == "pending"
    waits = {r.next_attempt_at - now for r in WebhookDelivery.objects.filter(endpoint=endpoint)}
    assert len(waits) == 8  # full jitter: each its own wait, none over the first backoff
    assert all(timedelta(0) <= wait <= services.BACKOFF[0] for wait in waits)


@pytest.mark.parametrize("slow", ["hanging", "trickling"])
def test_an_attempt_ends_at_its_deadline_however_slow_the_receiver(
    endpoint, receiver, owned, settings, slow
) -> None:
    """A byte every 0.4 s never trips a per-read timeout; the deadline ends the attempt."""
    settings.WEBHOOKS_DEADLINE = 1.0
    if slow == "hanging":
        receiver.delay_s = 3.0
    else:
        receiver.trickle_s = 0.4
    delivery = _emit(owned)
    started = time.monotonic()
    status = delivery_attempt(delivery_id=delivery.pk)
    elapsed = time.monotonic() - started
    assert 1.0 <= elapsed < 1.5, elapsed
    delivery.refresh_from_db()
    assert status == "pending" and delivery.attempts == 1
    assert delivery.last_status_code is None and "timed out" in delivery.last_error
    endpoint.refresh_from_db()
    assert endpoint.sending_until is None  # the lease is released for the retry


def test_a_tls_handshake_that_never_ends_is_cut_at_the_deadline(owned, settings) -> None:
    """An https receiver that accepts and then sends nothing: the handshake waits in a read."""
    settings.WEBHOOKS_DEADLINE = 0.5
    listener = socket.create_server(("127.0.0.1", 0))
    try:
        url = f"https://127.0.0.1:{listener.getsockname()[1]}/hook"
        started = time.monotonic()
        outcome = transport.post(url, b"{}", {}, allow_private=True, deadline_s=0.5)
        assert time.monotonic() - started < 1.0
    finally:
        listener.close()
    assert outcome.status is None and "timed out" in outcome.error


def test_a_redelivered_task_for_a_delivered_row_sends_nothing(endpoint, receiver, owned) -> None:
    from webhooks.tasks import webhook_deliver

    delivery = _emit(owned)
    assert webhook_deliver.run(delivery.pk) == "delivered"
    assert webhook_deliver.run(delivery.pk) == "delivered"  # the broker delivered it again
    assert len(receiver.requests) == 1


def test_an_endpoint_with_an_attempt_in_flight_gets_nothing_until_its_lease_expires(
    endpoint, receiver, owned, settings
) -> None:
    settings.WEBHOOKS_DEADLINE = 10.0
    delivery, other = _emit(owned), _emit(owned)
    now = timezone.now()
    claimed = services._claim(delivery.pk, now)  # an attempt that died after claiming
    assert claimed is not None
    assert services.lease_length() == timedelta(seconds=10) + services.LEASE_MARGIN
    for pk in (delivery.pk, other.pk):  # neither this delivery nor another to the endpoint
        assert delivery_attempt(delivery_id=pk, now=now + timedelta(seconds=39)) == "pending"
    assert services.deliveries_due(now=now + timedelta(seconds=39)) == []
    assert receiver.requests == []
    after = now + services.lease_length() + timedelta(seconds=1)
    assert services.deliveries_due(now=after) == [delivery.pk, other.pk]
    assert delivery_attempt(delivery_id=delivery.pk, now=after) == "delivered"
    assert delivery_attempt(delivery_id=other.pk, now=after) == "delivered"
    assert len(receiver.requests) == 2


def test_redeliver_sends_again_under_the_same_id(endpoint, receiver, owned, monkeypatch) -> None:
    queued: list[list[int]] = []
    monkeypatch.setattr(services, "deliveries_queue", queued.append)
    delivery = _emit(owned)
    delivery_attempt(delivery_id=delivery.pk)
    row = services.delivery_redeliver(campaign=owned, delivery_id=str(delivery.delivery_id))
    assert (row.status, row.attempts) == ("pending", 0)
    assert delivery_attempt(delivery_id=delivery.pk) == "delivered"
    ids = [json.loads(body)["id"] for body in receiver.bodies()]
    assert ids == [str(delivery.delivery_id)] * 2


def test_only_active_endpoints_that_chose_the_event_get_a_delivery(
    owned, receiver, private_allowed
) -> None:
    jobs = services.webhook_create(campaign=owned, url=receiver.url, events=["job.done"])
    services.webhook_create(campaign=owned, url=receiver.url, events=["campaign.finished"])
    off = services.webhook_create(campaign=owned, url=receiver.url, events=["job.done"])
    WebhookEndpoint.objects.filter(pk=off.pk).update(active=False)
    rows = webhook_emit(campaign=owned.pk, event=Event.JOB_DONE, data=lambda: {"job": 1})
    assert [r.endpoint_id for r in rows] == [jobs.pk]
    assert rows[0].payload["campaign"] == owned.slug


def test_emit_queues_the_send_after_the_commit_only(
    endpoint, owned, monkeypatch, django_capture_on_commit_callbacks
) -> None:
    queued: list[list[int]] = []
    monkeypatch.setattr(services, "deliveries_queue", queued.append)
    with django_capture_on_commit_callbacks(execute=True):
        rows = webhook_emit(campaign=owned, event=Event.JOB_DONE, data={})
        assert queued == []
    assert queued == [[rows[0].pk]]


def test_a_broker_that_is_down_leaves_the_delivery_to_the_sweep(
    endpoint, owned, monkeypatch
) -> None:
    from webhooks.tasks import webhook_deliver

    def down(*args: object) -> None:
        raise ConnectionError("broker down")

    monkeypatch.setattr(webhook_deliver, "delay", down)
    delivery = _emit(owned)
    services.deliveries_queue([delivery.pk])  # logged, not raised
    assert services.deliveries_due() == [delivery.pk]


@pytest.mark.parametrize(
    "url",
    [
        "ftp://example.org/hook",
        "https://user:pw@example.org/hook",
        "https:///hook",
        "javascript:alert(1)",
        "https://example.org:99999/",
        "https://exa mple.org/",
    ],
)
def test_bad_urls_are_refused(owned, url, private_allowed) -> None:
    from evalsite.errors import InvalidParameters

    with pytest.raises(InvalidParameters):
        services.webhook_create(campaign=owned, url=url, events=["job.done"])


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8000/hook",
        "http://localhost/hook",
        "http://10.1.2.3/",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]/",
        "http://[::ffff:127.0.0.1]/",
        "http://0.0.0.0/",
        "http://0177.0.0.1/",  # octal, decimal and short forms of 127.0.0.1
        "http://2130706433/",
        "http://127.1/",
        "http://100.64.0.1/",  # shared address space (carrier NAT)
        "http://192.88.99.1/",  # 6to4 relays (deprecated)
        "http://240.0.0.1/",
        "http://224.0.0.1/",
        "http://[::7f00:1]/",  # IPv4-compatible 127.0.0.1
        "http://[::ffff:0:a00:1]/",  # IPv4-translated 10.0.0.1
        "http://[64:ff9b::a9fe:a9fe]/",  # NAT64 of 169.254.169.254
        "http://[64:ff9b:1::a00:1]/",  # local NAT64
        "http://[2002:a9fe:a9fe::1]/",  # 6to4 of 169.254.169.254
        "http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/",  # Teredo
        "http://[fec0::1]/",  # site-local
        "http://[fd00::1]/",
        "http://[fe80::1]/",
        "http://[ff02::1]/",
    ],
)
def test_private_and_reserved_addresses_are_refused_at_creation_and_at_sending(
    url, settings
) -> None:
    """At creation (the service every form and the API call) and at each attempt."""
    from evalsite.errors import InvalidParameters

    settings.WEBHOOKS_ALLOW_PRIVATE = False
    with pytest.raises(InvalidParameters, match="private or local"):
        services.webhook_url_clean(url)
    outcome = transport.post(url, b"{}", {}, allow_private=False, deadline_s=1.0)
    assert outcome.status is None and "private or local" in outcome.error


@pytest.mark.parametrize(
    "address", ["93.184.215.14", "2606:4700::1111", "::ffff:93.184.215.14", "64:ff9b::5db8:d70e"]
)
def test_public_addresses_are_allowed_also_through_nat64(address) -> None:
    assert transport.address_allowed(address)


def test_a_private_address_at_send_time_is_not_contacted(
    endpoint, receiver, owned, settings
) -> None:
    delivery = _emit(owned)
    settings.WEBHOOKS_ALLOW_PRIVATE = False  # the name was public when registered
    assert delivery_attempt(delivery_id=delivery.pk) == "pending"
    delivery.refresh_from_db()
    assert "private or local" in delivery.last_error and receiver.requests == []


def test_unknown_or_no_events_are_refused(owned, receiver, private_allowed) -> None:
    from evalsite.errors import InvalidParameters

    for events in ([], ["job.started"], "job.done"):
        with pytest.raises(InvalidParameters):
            services.webhook_create(campaign=owned, url=receiver.url, events=events)


def test_retry_after_reads_seconds_and_dates() -> None:
    assert transport.retry_after_seconds("120") == 120.0
    assert transport.retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412420.0) == 60
    assert transport.retry_after_seconds("soon") is None
    assert transport.retry_after_seconds(None) is None


def test_the_sweep_queues_due_retries_and_forgets_old_finished_deliveries(
    endpoint, owned, receiver, monkeypatch
) -> None:
    from webhooks.tasks import webhook_deliver, webhooks_due

    queued: list[int] = []
    monkeypatch.setattr(webhook_deliver, "delay", queued.append)
    old, due, waiting = (_emit(owned) for _ in range(3))
    delivery_attempt(delivery_id=old.pk)  # delivered
    month_ago = timezone.now() - services.KEEP - timedelta(minutes=1)
    WebhookDelivery.objects.filter(pk=old.pk).update(created_at=month_ago)
    WebhookDelivery.objects.filter(pk=waiting.pk).update(
        next_attempt_at=timezone.now() + timedelta(minutes=5)
    )
    assert webhooks_due.run() == {"queued": 1, "pruned": 1}
    assert queued == [due.pk]
    assert set(WebhookDelivery.objects.values_list("pk", flat=True)) == {due.pk, waiting.pk}


def test_new_secrets_are_standard_base64_and_old_ones_verify_where_their_text_decodes() -> None:
    secret = secret_new()
    assert secret.startswith("whsec_") and len(base64.b64decode(secret[6:], validate=True)) == 24
    # A secret of the earlier form (URL-safe base64): the library reads it leniently, and the
    # signature is keyed the way it reads it.
    old = "whsec_" + "AbCd-_Ef" * 5 + "GhIj"
    stamp = int(time.time())
    headers = {
        "webhook-id": "msg-1",
        "webhook-timestamp": str(stamp),
        "webhook-signature": standard_signature(old, "msg-1", stamp, b'{"a": 1}'),
    }
    assert Webhook(old).verify(b'{"a": 1}', headers) == {"a": 1}


def test_webhook_tasks_go_to_their_own_queue_and_worker() -> None:
    """A slow receiver holds a `webhooks` worker only (docs/deployment.md); the sweep too, so
    a deployment without that worker sends nothing rather than blocking the others."""
    from evalsite.celery import app

    for name in ("webhooks.tasks.webhook_deliver", "webhooks.tasks.webhooks_due"):
        assert app.amqp.router.route({}, name)["queue"].name == "webhooks"
    assert app.amqp.router.route({}, "dashboard.tasks.job_run")["queue"].name == "default"
