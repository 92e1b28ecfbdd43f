"""The webhooks page's "Send a test event": a real delivery through the same path, marked."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from django.urls import reverse

from evalsite.errors import InvalidParameters
from webhooks.models import SUBSCRIBABLE, Event, WebhookDelivery
from webhooks.services import delivery_attempt, webhook_create, webhook_events_clean


def test_the_test_event_is_a_signed_delivery_in_the_log(
    researcher, owned, receiver, private_allowed, django_capture_on_commit_callbacks
) -> None:
    endpoint = webhook_create(campaign=owned, url=receiver.url, events=["job.done"])
    client = Client()
    client.force_login(researcher)
    page = client.get(reverse("webhooks:list", args=[owned.slug])).content.decode()
    assert f'data-test-endpoint="{endpoint.pk}"' in page
    assert 'value="webhook.test"' not in page  # not an event to subscribe to
    with django_capture_on_commit_callbacks(execute=False):
        response = client.post(
            reverse("webhooks:test", args=[owned.slug, endpoint.pk]), follow=True
        )
    assert "Test event queued" in response.content.decode()
    delivery = WebhookDelivery.objects.get()
    assert delivery.event == Event.TEST and delivery.endpoint == endpoint
    assert delivery_attempt(delivery_id=delivery.pk) == "delivered"  # the task's own path
    [(headers, body)] = receiver.requests
    payload = json.loads(body)
    assert headers["X-Evalsite-Event"] == "webhook.test"
    assert payload["event"] == "webhook.test" and payload["data"]["test"] is True
    assert payload["id"] == headers["X-Evalsite-Delivery"] == str(delivery.delivery_id)
    log = client.get(reverse("webhooks:list", args=[owned.slug])).content.decode()
    assert str(delivery.delivery_id) in log or "webhook.test" in log


def test_the_test_event_is_refused_for_another_campaigns_or_an_off_endpoint(
    researcher, owned, receiver, private_allowed
) -> None:
    endpoint = webhook_create(campaign=owned, url=receiver.url, events=["job.done"])
    client = Client()
    client.force_login(researcher)
    url = reverse("webhooks:test", args=[owned.slug, endpoint.pk + 1])
    assert "No such webhook endpoint" in client.post(url, follow=True).content.decode()
    endpoint.active = False
    endpoint.save(update_fields=["active"])
    url = reverse("webhooks:test", args=[owned.slug, endpoint.pk])
    assert "This endpoint is off" in client.post(url, follow=True).content.decode()
    assert not WebhookDelivery.objects.exists()
    assert client.get(url).status_code == 405


def test_no_endpoint_subscribes_to_the_test_event() -> None:
    assert Event.TEST not in SUBSCRIBABLE
    with pytest.raises(InvalidParameters, match="Unknown event 'webhook.test'"):
        webhook_events_clean(["webhook.test"])
