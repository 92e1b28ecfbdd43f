"""Each of the five events is emitted once, where it happens; a worker's request never waits
for a receiver."""

from __future__ import annotations

import http.client
import time
from decimal import Decimal

import pytest
from django.test import Client

from annotation.models import Assignment, Campaign
from annotation.quality import worker_soft_block, worker_unblock
from annotation.services import campaign_set_status
from dashboard.services import job_run, job_start
from recruitment.services import bonus_pay
from tests.annotation.test_views import ANSWERS, form_of, submit_url, task_url
from tests.factories import AssignmentFactory, CampaignFactory, ItemFactory, WorkerFactory
from webhooks import services, transport
from webhooks.models import Event, WebhookDelivery
from webhooks.services import webhook_create
from webhooks.tasks import webhook_deliver


def events(campaign: Campaign) -> list[str]:
    rows = WebhookDelivery.objects.filter(endpoint__campaign=campaign).order_by("pk")
    return list(rows.values_list("event", flat=True))


@pytest.fixture
def queued(monkeypatch) -> list[int]:
    """Record the sends queued, as a broker would take them (nothing runs)."""
    ids: list[int] = []
    monkeypatch.setattr(webhook_deliver, "delay", ids.append)
    return ids


def _submit_assignment(client: Client, campaign: Campaign, worker: str) -> float:
    """Answer items as a worker until the assignment is submitted; return the slowest POST."""
    slowest = 0.0
    for _ in range(campaign.items_per_assignment):
        token, item = form_of(client.get(task_url(campaign, workerId=worker)))
        started = time.monotonic()
        response = client.post(
            submit_url(campaign, workerId=worker), {"token": token, "item": item, **ANSWERS}
        )
        slowest = max(slowest, time.monotonic() - started)
        assert response.status_code == 302
    return slowest


def test_assignment_submitted_is_emitted_once(endpoint, owned, queued) -> None:
    Campaign.objects.filter(pk=owned.pk).update(items_per_assignment=2)
    owned.refresh_from_db()
    client = Client()
    _submit_assignment(client, owned, "w1")
    assert events(owned) == ["assignment.submitted"]
    delivery = WebhookDelivery.objects.get()
    assignment = Assignment.objects.get(campaign=owned)
    assert delivery.payload["data"] == {
        "assignment": assignment.pk,
        "worker": assignment.worker.pseudonym,
        "provider_assignment_id": "",
        "items": 2,
        "submitted_at": delivery.payload["data"]["submitted_at"],
    }
    assert assignment.status == Assignment.Status.SUBMITTED
    client.get(task_url(owned, workerId="w1"))  # the done page again: no second event
    assert events(owned) == ["assignment.submitted"]


def test_campaign_finished_is_emitted_once(endpoint, owned) -> None:
    campaign_set_status(campaign=owned, status=Campaign.Status.PAUSED)
    campaign_set_status(campaign=owned, status=Campaign.Status.LIVE)
    assert events(owned) == []
    campaign_set_status(campaign=owned, status=Campaign.Status.FINISHED)
    assert events(owned) == ["campaign.finished"]


def test_job_done_is_emitted_once_also_when_the_task_is_redelivered(
    endpoint, owned, queued
) -> None:
    job = job_start(campaign=owned, kind="report")
    assert events(owned) == []
    assert job_run(job.pk)  # the job's task
    job.refresh_from_db()
    assert job.status == "done"
    assert job_run(job.pk)  # the same task redelivered
    assert events(owned) == ["job.done"]
    data = WebhookDelivery.objects.get().payload["data"]
    assert data["job"] == job.pk and data["kind"] == "report"
    assert data["files"] == job.files and data["status_url"].endswith(f"/jobs/{job.pk}")


def test_job_done_is_emitted_once_when_two_deliveries_of_the_task_overlap(
    endpoint, owned, queued, monkeypatch
) -> None:
    """A worker lost mid-job: its task is redelivered while the first run still builds (a
    short visibility timeout); whichever run finishes second announces nothing."""
    from dashboard import services

    save = services.job_files_save
    overlapped = []

    def save_after_the_other_run(job, folder, files):  # type: ignore[no-untyped-def]
        if not overlapped:
            overlapped.append(True)
            assert job_run(job.pk)  # the redelivered task runs to the end meanwhile
        save(job, folder, files)

    monkeypatch.setattr(services, "job_files_save", save_after_the_other_run)
    job = job_start(campaign=owned, kind="report")
    assert job_run(job.pk)
    job.refresh_from_db()
    assert job.status == "done" and job.files
    assert events(owned) == ["job.done"]


def test_worker_blocked_is_emitted_once_per_block(endpoint, owned) -> None:
    worker = WorkerFactory()
    worker_soft_block(campaign=owned, worker=worker, reason="gold accuracy 40%")
    worker_soft_block(campaign=owned, worker=worker, reason="again")
    assert events(owned) == ["worker.blocked"]
    assert WebhookDelivery.objects.get().payload["data"] == {
        "worker": worker.pseudonym,
        "reason": "gold accuracy 40%",
    }
    worker_unblock(campaign=owned, worker=worker)
    worker_soft_block(campaign=owned, worker=worker, reason="blocked again")
    assert events(owned) == ["worker.blocked", "worker.blocked"]


def test_budget_low_is_emitted_once_when_the_remainder_first_falls_under_10_percent(
    endpoint, owned
) -> None:
    worker = WorkerFactory()
    assignment = AssignmentFactory(
        campaign=owned, worker=worker, status=Assignment.Status.SUBMITTED
    )

    def pay(amount: str, n: int) -> None:
        bonus_pay(
            campaign=owned,
            worker=worker,
            amount=amount,
            reason=f"bonus {n}",
            actor="ada",
            assignment=assignment,
        )

    for n in range(4):
        pay("2.00", n)  # 8.00 of 10.00: 20% left
    assert events(owned) == []
    pay("1.50", 4)  # 0.50 left: under the line
    pay("0.25", 5)
    pay("0.25", 6)
    assert events(owned) == ["budget.low"]
    assert WebhookDelivery.objects.get().payload["data"] == {
        "budget": "10.00",
        "committed": "9.50",
        "remaining": "0.50",
        "threshold": "0.10",
    }
    Campaign.objects.filter(pk=owned.pk).update(budget=Decimal("20.00"))
    owned.refresh_from_db()
    pay("9.00", 7)  # 19.50 of 20.00: crossed again after the raise
    assert events(owned) == ["budget.low", "budget.low"]


def test_no_endpoint_means_no_delivery_and_one_query(owned, django_assert_num_queries) -> None:
    with django_assert_num_queries(1):
        services.webhook_emit(campaign=owned.pk, event=Event.JOB_DONE, data=lambda: 1 / 0)


@pytest.mark.django_db(transaction=True)
def test_a_hanging_receiver_never_slows_a_workers_submit(receiver, settings, monkeypatch) -> None:
    """The submit commits and answers; the send is queued for a Celery worker, and the
    request makes no HTTP call of its own."""
    settings.WEBHOOKS_ALLOW_PRIVATE = True
    receiver.delay_s = 3.0
    campaign = CampaignFactory(items_per_assignment=2)
    ItemFactory.create_batch(4, campaign=campaign)
    webhook_create(campaign=campaign, url=receiver.url, events=["assignment.submitted"])
    queued: list[int] = []
    monkeypatch.setattr(webhook_deliver, "delay", queued.append)

    def no_http(*args: object, **kwargs: object) -> None:
        raise AssertionError("an HTTP call inside the worker's request")

    monkeypatch.setattr(transport, "post", no_http)
    monkeypatch.setattr(http.client.HTTPConnection, "request", no_http)
    slowest = _submit_assignment(Client(), campaign, "w1")
    assert slowest < receiver.delay_s / 2
    delivery = WebhookDelivery.objects.get()
    assert queued == [delivery.pk]  # queued after the commit, not run
    assert receiver.requests == []
    monkeypatch.undo()
    # The Celery worker's attempt then meets the hanging receiver and times out.
    settings.WEBHOOKS_DEADLINE = 0.5
    started = time.monotonic()
    status = services.delivery_attempt(delivery_id=delivery.pk)
    assert time.monotonic() - started < receiver.delay_s
    delivery.refresh_from_db()
    assert status == "pending" and "timed out" in delivery.last_error
