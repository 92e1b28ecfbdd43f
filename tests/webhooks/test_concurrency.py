"""On PostgreSQL: tasks of one delivery running at once send it once."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from annotation.exceptions import Conflict
from annotation.models import Campaign
from annotation.services import campaign_set_status
from tests.conftest import postgres_only
from tests.factories import CampaignFactory, ItemFactory
from webhooks.models import Event, WebhookDelivery
from webhooks.services import webhook_create, webhook_emit
from webhooks.tasks import webhook_deliver

pytestmark = [postgres_only(), pytest.mark.django_db(transaction=True)]


def test_concurrent_tasks_of_one_delivery_send_it_once(receiver, settings, monkeypatch) -> None:
    settings.WEBHOOKS_ALLOW_PRIVATE = True
    monkeypatch.setattr(webhook_deliver, "delay", lambda pk: None)  # the tasks run below
    receiver.delay_s = 0.3  # the first attempt is still in flight when the others look
    campaign = CampaignFactory()
    ItemFactory(campaign=campaign)
    webhook_create(campaign=campaign, url=receiver.url, events=["job.done"])
    [delivery] = webhook_emit(campaign=campaign, event=Event.JOB_DONE, data={"job": 1})
    barrier = threading.Barrier(8)
    results: list[str] = []

    def run() -> None:
        try:
            barrier.wait()
            results.append(webhook_deliver.run(delivery.pk))
        finally:
            connection.close()

    threads = [threading.Thread(target=run) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(receiver.requests) == 1
    assert results.count("delivered") >= 1 and set(results) <= {"delivered", "pending"}
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("delivered", 1)
    assert webhook_deliver.run(delivery.pk) == "delivered"  # and redelivered later: nothing
    assert len(receiver.requests) == 1
    assert WebhookDelivery.objects.count() == 1


def test_a_campaign_finished_by_several_at_once_is_announced_once(receiver, settings) -> None:
    settings.WEBHOOKS_ALLOW_PRIVATE = True
    campaign = CampaignFactory(status="live")
    ItemFactory(campaign=campaign)
    webhook_create(campaign=campaign, url=receiver.url, events=["campaign.finished"])
    barrier = threading.Barrier(6)
    outcomes: list[str] = []

    def finish() -> None:
        try:
            copy = Campaign.objects.get(pk=campaign.pk)  # each its own copy, all live
            barrier.wait()
            campaign_set_status(campaign=copy, status="finished")
            outcomes.append("finished")
        except Conflict:
            outcomes.append("conflict")
        finally:
            connection.close()

    threads = [threading.Thread(target=finish) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["conflict"] * 5 + ["finished"]
    assert WebhookDelivery.objects.filter(event=Event.CAMPAIGN_FINISHED).count() == 1
