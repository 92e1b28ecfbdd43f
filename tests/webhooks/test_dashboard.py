"""The campaign's webhooks page: owner only, the secret shown once, the log, redeliver."""

from __future__ import annotations

import re

from django.contrib.auth.models import User
from django.test import Client

from webhooks.models import Event, WebhookDelivery, WebhookEndpoint
from webhooks.services import delivery_attempt, webhook_emit


def _client(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_owner_adds_an_endpoint_sees_its_secret_once_and_removes_it(
    researcher, owned, receiver, private_allowed
) -> None:
    client = _client(researcher)
    page = f"/dashboard/c/{owned.slug}/webhooks/"
    assert "No endpoint yet" in client.get(page).content.decode()
    answer = client.post(
        page + "new/", {"url": receiver.url, "events": ["job.done", "worker.blocked"]}
    )
    assert answer.status_code == 200 and "no-store" in answer["Cache-Control"]
    endpoint = WebhookEndpoint.objects.get()
    assert endpoint.events == ["job.done", "worker.blocked"]
    assert endpoint.created_by == researcher
    secret = re.search(r'<code id="new-secret">([^<]+)</code>', answer.content.decode())
    assert secret and secret.group(1) == endpoint.secret
    listed = client.get(page).content.decode()
    assert receiver.url in listed and endpoint.secret_hint in listed
    assert endpoint.secret not in listed
    client.post(page + f"{endpoint.pk}/remove/")
    assert not WebhookEndpoint.objects.exists()


def test_a_refused_url_is_explained_and_nothing_is_stored(researcher, owned, settings) -> None:
    settings.WEBHOOKS_ALLOW_PRIVATE = False
    client = _client(researcher)
    page = f"/dashboard/c/{owned.slug}/webhooks/"
    answer = client.post(
        page + "new/", {"url": "http://127.0.0.1:9/hook", "events": ["job.done"]}, follow=True
    )
    assert "private or local address" in answer.content.decode()
    answer = client.post(page + "new/", {"url": "https://example.org/"}, follow=True)
    assert "Choose at least one event" in answer.content.decode()
    assert not WebhookEndpoint.objects.exists()


def test_other_researchers_and_non_staff_cannot_see_or_change_webhooks(
    researcher, owned, endpoint
) -> None:
    page = f"/dashboard/c/{owned.slug}/webhooks/"
    bob = User.objects.create_user("bob", password="pw-bob-123", is_staff=True)
    other = _client(bob)
    assert other.get(page).status_code == 404
    assert other.post(page + f"{endpoint.pk}/remove/").status_code == 404
    assert other.post(page + "new/", {"url": "https://example.org/"}).status_code == 404
    walt = User.objects.create_user("walt", password="pw-walt-123")
    assert _client(walt).get(page).status_code == 403
    assert Client().get(page).status_code == 302
    assert WebhookEndpoint.objects.count() == 1


def test_the_log_shows_the_latest_deliveries_and_redelivers(
    researcher, owned, endpoint, receiver, monkeypatch
) -> None:
    from webhooks import services

    monkeypatch.setattr(services, "deliveries_queue", lambda ids: None)
    receiver.answer(500)
    [delivery] = webhook_emit(campaign=owned, event=Event.JOB_DONE, data={"job": 1})
    for _ in range(6):
        delivery_attempt(delivery_id=delivery.pk, now=delivery.next_attempt_at)
        delivery.refresh_from_db()
    client = _client(researcher)
    page = f"/dashboard/c/{owned.slug}/webhooks/"
    html = client.get(page).content.decode()
    assert str(delivery.delivery_id) in html and "Delivered" in html
    for n in range(105):
        webhook_emit(campaign=owned, event=Event.WORKER_BLOCKED, data={"n": n})
    html = client.get(page).content.decode()
    assert html.count("<td><code>worker.blocked</code></td>") == 100  # the latest 100
    client.post(page + f"deliveries/{delivery.delivery_id}/redeliver/")
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("pending", 0)
    assert WebhookDelivery.objects.filter(delivery_id=delivery.delivery_id).count() == 1
