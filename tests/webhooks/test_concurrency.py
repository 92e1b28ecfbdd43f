"""On PostgreSQL: tasks of one delivery running at once send it once, and an endpoint gets one
request at a time (its lease)."""

from __future__ import annotations

import json

import pytest

from annotation.models import Campaign
from annotation.services import campaign_set_status
from evalsite.errors import Conflict
from tests.concurrency import at_once
from tests.factories import CampaignFactory, ItemFactory
from webhooks.models import Event, WebhookDelivery
from webhooks.services import webhook_create, webhook_emit
from webhooks.tasks import webhook_deliver

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def test_concurrent_tasks_of_one_delivery_send_it_once(receiver, settings, monkeypatch) -> None:
    settings.WEBHOOKS_ALLOW_PRIVATE = True
    monkeypatch.setattr(webhook_deliver, "delay", lambda pk: None)  # the tasks run below
    receiver.delay_s = 0.3  # the first attempt is still in flight when the others look
    campaign = CampaignFactory()
    ItemFactory(campaign=campaign)
    webhook_create(campaign=campaign, url=receiver.url, events=["job.done"])
    [delivery] = webhook_emit(campaign=campaign, event=Event.JOB_DONE, data={"job": 1})
    results = at_once(lambda: webhook_deliver.run(delivery.pk), 8)
    assert len(receiver.requests) == 1 and receiver.most_in_flight == 1
    assert results.count("delivered") >= 1 and set(results) <= {"delivered", "pending"}
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("delivered", 1)
    assert webhook_deliver.run(delivery.pk) == "delivered"  # and redelivered later: nothing
    assert len(receiver.requests) == 1
    assert WebhookDelivery.objects.count() == 1


def test_an_endpoint_gets_one_request_at_a_time_and_each_delivery_once(
    receiver, settings, monkeypatch
) -> None:
    settings.WEBHOOKS_ALLOW_PRIVATE = True
    queued: list[int] = []
    monkeypatch.setattr(webhook_deliver, "delay", queued.append)  # run by hand below
    receiver.delay_s = 0.3
    campaign = CampaignFactory()
    ItemFactory(campaign=campaign)
    webhook_create(campaign=campaign, url=receiver.url, events=["job.done"])
    deliveries = [
        webhook_emit(campaign=campaign, event=Event.JOB_DONE, data={"job": n})[0] for n in range(6)
    ]
    queued.clear()  # the sends queued at the emit run here, all at once
    pks = iter([d.pk for d in deliveries])
    results = at_once(lambda: webhook_deliver.run(next(pks)), 6)
    assert receiver.most_in_flight == 1 and len(receiver.requests) == 1
    assert sorted(results) == ["delivered"] + ["pending"] * 5
    # Releasing the lease queued the endpoint's next due delivery, and so on, one at a time.
    pending = set(WebhookDelivery.objects.filter(status="pending").values_list("pk", flat=True))
    assert len(queued) == 1 and queued[0] in pending
    while queued:
        webhook_deliver.run(queued.pop(0))
    statuses = WebhookDelivery.objects.values_list("status", "attempts")
    assert set(statuses) == {("delivered", 1)}
    ids = [json.loads(body)["id"] for body in receiver.bodies()]
    assert sorted(ids) == sorted(str(d.delivery_id) for d in deliveries)
    assert receiver.most_in_flight == 1


def test_a_campaign_finished_by_several_at_once_is_announced_once(receiver, settings) -> None:
    settings.WEBHOOKS_ALLOW_PRIVATE = True
    campaign = CampaignFactory(status="live")
    ItemFactory(campaign=campaign)
    webhook_create(campaign=campaign, url=receiver.url, events=["campaign.finished"])
    copies = [Campaign.objects.get(pk=campaign.pk) for _ in range(6)]  # each its own, live

    def finish() -> str:
        return campaign_set_status(campaign=copies.pop(), status="finished").status

    outcomes = at_once(finish, 6)
    assert outcomes.count("finished") == 1, outcomes
    assert sum(isinstance(o, Conflict) for o in outcomes) == 5, outcomes
    assert WebhookDelivery.objects.filter(event=Event.CAMPAIGN_FINISHED).count() == 1
