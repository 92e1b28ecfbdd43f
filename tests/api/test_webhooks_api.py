"""Webhook endpoints through the API: the dashboard's services, its refusals, its scoping."""

from __future__ import annotations

import pytest

from annotation.models import Campaign
from tests.api.conftest import error_of
from tests.factories import CampaignFactory
from tests.webhooks.conftest import receiver  # noqa: F401 (the real HTTP receiver fixture)
from webhooks.models import WebhookDelivery, WebhookEndpoint
from webhooks.services import delivery_attempt, webhook_create

HOOK = "https://example.org/hooks/evalsite"


@pytest.fixture
def owned(researcher) -> Campaign:
    return CampaignFactory(owner=researcher)


@pytest.fixture
def bobs(other_researcher) -> WebhookEndpoint:
    campaign = CampaignFactory(owner=other_researcher, slug="bobs-study")
    return webhook_create(campaign=campaign, url=HOOK, events=["job.done"])


def _delete(api, path: str):
    return api.client.delete("/api/v1" + path, headers=api.headers)


def test_a_researcher_adds_reads_lists_and_removes_an_endpoint_seeing_the_secret_once(
    api, owned, researcher
) -> None:
    base = f"/campaigns/{owned.slug}/webhooks"
    added = api.post(base, {"url": HOOK, "events": ["worker.blocked", "job.done"]})
    assert added.status_code == 201, added.content
    body = added.json()
    endpoint = WebhookEndpoint.objects.get(campaign=owned)
    assert body["secret"] == endpoint.secret and endpoint.created_by == researcher
    assert body["events"] == ["job.done", "worker.blocked"]  # the service's order
    listed = api.get(base).json()
    assert listed["count"] == 1 and listed["results"][0]["url"] == HOOK
    one = api.get(f"{base}/{endpoint.pk}").json()
    assert one["secret_hint"] == endpoint.secret_hint and "secret" not in one
    assert endpoint.secret not in api.get(base).content.decode()
    assert _delete(api, f"{base}/{endpoint.pk}").status_code == 204
    assert not WebhookEndpoint.objects.exists()
    assert error_of(_delete(api, f"{base}/{endpoint.pk}"))["code"] == "not_found"


def test_another_researchers_campaign_and_endpoint_are_not_found_and_left_alone(
    api, owned, bobs
) -> None:
    theirs = f"/campaigns/{bobs.campaign.slug}/webhooks"
    mine = f"/campaigns/{owned.slug}/webhooks"
    answers = [
        api.get(theirs),
        api.post(theirs, {"url": HOOK, "events": ["job.done"]}),
        api.get(f"{theirs}/{bobs.pk}"),
        _delete(api, f"{theirs}/{bobs.pk}"),
        api.get(f"{theirs}/{bobs.pk}/deliveries"),
        api.post(f"{theirs}/{bobs.pk}/test"),
        # Bob's endpoint id under Ada's own campaign
        api.get(f"{mine}/{bobs.pk}"),
        _delete(api, f"{mine}/{bobs.pk}"),
        api.post(f"{mine}/{bobs.pk}/test"),
    ]
    assert [a.status_code for a in answers] == [404] * len(answers)
    assert all(error_of(a)["code"] == "not_found" for a in answers)
    assert list(WebhookEndpoint.objects.values_list("pk", flat=True)) == [bobs.pk]
    assert not WebhookDelivery.objects.exists()


@pytest.mark.parametrize(
    "url",
    [
        "ftp://example.org/hook",
        "https://ada:pw@example.org/hook",
        "https://example.org/" + "a" * 500,
        "not a url",
        "http://example.org:65536/",
    ],
)
def test_a_url_of_the_wrong_form_is_refused_by_the_schema_and_nothing_is_stored(
    api, owned, url
) -> None:
    """The schema's pattern is transport.url_check's form (webhooks' tests give its messages)."""
    answer = api.post(f"/campaigns/{owned.slug}/webhooks", {"url": url, "events": ["job.done"]})
    error = error_of(answer)
    assert answer.status_code == 422 and error["field"] == "url"
    assert not WebhookEndpoint.objects.exists()


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:9/hook", "http://169.254.169.254/latest", "http://[::ffff:10.0.0.1]/"]
)
def test_a_reserved_address_is_refused_where_private_targets_are_off(
    api, owned, settings, url
) -> None:
    settings.WEBHOOKS_ALLOW_PRIVATE = False
    answer = api.post(f"/campaigns/{owned.slug}/webhooks", {"url": url, "events": ["job.done"]})
    assert answer.status_code == 400 and error_of(answer)["field"] == "url"
    assert not WebhookEndpoint.objects.exists()


@pytest.mark.parametrize("events", [["job.finished"], [], ["webhook.test"]])
def test_an_unknown_or_missing_event_is_refused_and_nothing_is_stored(api, owned, events) -> None:
    answer = api.post(f"/campaigns/{owned.slug}/webhooks", {"url": HOOK, "events": events})
    error = error_of(answer)
    assert answer.status_code == 422 and error["field"].startswith("events")
    assert not WebhookEndpoint.objects.exists()


def test_an_add_sent_again_with_its_idempotency_key_adds_one_endpoint(api, owned) -> None:
    path, data = f"/campaigns/{owned.slug}/webhooks", {"url": HOOK, "events": ["job.done"]}
    first = api.post(path, data, **{"Idempotency-Key": "hook-1"})
    again = api.post(path, data, **{"Idempotency-Key": "hook-1"})
    assert first.status_code == again.status_code == 201
    assert again["Idempotent-Replayed"] == "true" and again.json() == first.json()
    assert WebhookEndpoint.objects.count() == 1


def test_an_endpoints_deliveries_show_their_outcome_and_one_can_be_sent_again(
    api,
    owned,
    receiver,  # noqa: F811 (the imported fixture)
    settings,
) -> None:
    settings.WEBHOOKS_ALLOW_PRIVATE = True  # the receiver is on 127.0.0.1
    base = f"/campaigns/{owned.slug}/webhooks"
    endpoint_id = api.post(base, {"url": receiver.url, "events": ["job.done"]}).json()["id"]
    sent = api.post(f"{base}/{endpoint_id}/test")
    assert sent.status_code == 202 and sent.json()["event"] == "webhook.test"
    delivery = WebhookDelivery.objects.get()
    # Sent here whether or not a broker is configured (without one it ran in the request).
    assert delivery_attempt(delivery_id=delivery.pk) == "delivered"
    log = api.get(f"{base}/{endpoint_id}/deliveries").json()
    assert log["count"] == 1
    row = log["results"][0]
    assert row["id"] == str(delivery.delivery_id) and row["status"] == "delivered"
    assert row["attempts"] == 1 and row["last_status_code"] == 200 and row["delivered_at"]
    again = api.post(f"{base}/deliveries/{delivery.delivery_id}/redeliver")
    assert again.status_code == 202 and again.json()["id"] == str(delivery.delivery_id)
    assert delivery_attempt(delivery_id=delivery.pk) == "delivered"
    assert len(receiver.bodies()) == 2
    missing = api.post(f"{base}/deliveries/5f0c2b4e-9d1a-4c3e-8f5b-0a1b2c3d4e5f/redeliver")
    assert error_of(missing)["code"] == "not_found"


def test_a_webhook_url_refused_by_its_pattern_is_explained_in_words(api, owned) -> None:
    base = f"/campaigns/{owned.slug}/webhooks"
    response = api.post(base, {"url": "ftp://example.org/hook", "events": ["job.done"]})
    assert response.status_code == 422
    error = error_of(response)
    assert error["field"] == "url"
    assert "http:// or https://" in error["message"] and "^https?" not in error["message"]
