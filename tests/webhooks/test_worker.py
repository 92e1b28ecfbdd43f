"""On the production layout's parts: webhooks run on their own Celery worker (the ``webhooks``
queue), so a receiver that trickles its answer a byte every 2 s costs another researcher's
report nothing, and its attempt ends at the deadline. PostgreSQL and a broker only."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.contrib.auth.models import User
from django.db import connection

from annotation.simulation import crowd_make, crowd_run
from dashboard.models import Job
from dashboard.services import job_start
from evalsite.celery import app
from tests.factories import CampaignFactory, ItemFactory
from webhooks import services
from webhooks.models import Event, WebhookDelivery, WebhookEndpoint
from webhooks.services import webhook_create, webhook_emit

ROOT = Path(__file__).resolve().parents[2]
DEADLINE_S = 3.0

pytestmark = [
    pytest.mark.slow,
    pytest.mark.postgres,
    pytest.mark.broker,
    pytest.mark.django_db(transaction=True),
]


def _wait(seconds: float, **conditions: Callable[[], object]) -> dict[str, float]:
    """Poll the conditions until each has held; return when each first did (monotonic)."""
    end = time.monotonic() + seconds
    seen: dict[str, float] = {}
    while time.monotonic() < end:
        for name, condition in conditions.items():
            if name not in seen and condition():
                seen[name] = time.monotonic()
        if len(seen) == len(conditions):
            return seen
        time.sleep(0.1)
    raise AssertionError(f"not within {seconds} s: {set(conditions) - set(seen)}")


def test_a_trickling_receiver_delays_no_other_researchers_report(receiver, settings, tmp_path):
    settings.WEBHOOKS_ALLOW_PRIVATE = True
    receiver.trickle_s = 2.0  # a byte every 2 s: the whole answer would take minutes
    ada = User.objects.create_user("ada", is_staff=True)
    bob = User.objects.create_user("bob", is_staff=True)
    hooked = CampaignFactory(owner=ada)
    webhook_create(campaign=hooked, url=receiver.url, events=["job.done"])
    reported = CampaignFactory(owner=bob, items_per_assignment=2, budget="50.00")
    ItemFactory.create_batch(6, campaign=reported)
    crowd_run(campaign=reported, workers=crowd_make(good=3, noisy=1, spammer=0), seed=3)

    db = connection.settings_dict
    env = {
        **os.environ,
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        "EVALSITE_DATA_DIR": str(django_settings.DATA_DIR),
        "EVALSITE_WEBHOOKS_DEADLINE": str(DEADLINE_S),
        "EVALSITE_WEBHOOKS_ALLOW_PRIVATE": "true",
    }
    app.control.purge()  # tasks earlier tests queued with no worker must not run here
    logs = {queue: tmp_path / f"{queue}.log" for queue in ("default", "webhooks")}
    workers = []
    for queue, concurrency in (("default", "1"), ("webhooks", "2")):
        command = [sys.executable, "-m", "celery", "-A", "evalsite", "worker", "-Q", queue]
        command += ["-n", f"{queue}@%h", "--pool", "threads", "--concurrency", concurrency]
        with logs[queue].open("ab") as out:
            workers.append(
                subprocess.Popen(
                    [*command, "--loglevel", "INFO"],
                    cwd=ROOT,
                    env=env,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                )
            )
    try:
        _wait(90, **{q: lambda log=log: " ready." in log.read_text() for q, log in logs.items()})
        # The delivery is queued first: on one shared worker the report would wait for it.
        [delivery] = webhook_emit(campaign=hooked, event=Event.JOB_DONE, data={"job": 1})
        job = job_start(campaign=reported, kind="report", user=bob)
        queued = time.monotonic()
        jobs = Job.objects.filter(pk=job.pk)
        seen = _wait(
            60,
            attempt_ended=lambda: (
                WebhookDelivery.objects.filter(pk=delivery.pk, attempts=1)
                .exclude(last_error="")
                .exists()
            ),
            report_started=lambda: jobs.filter(started_at__isnull=False).exists(),
            report_ended=lambda: jobs.filter(status__in=["done", "failed"]).exists(),
        )
    except AssertionError:
        for log in logs.values():
            print(log.read_text()[-3000:])
        raise
    finally:
        for worker in workers:
            worker.terminate()
        for worker in workers:
            try:
                worker.wait(timeout=30)
            except subprocess.TimeoutExpired:
                worker.kill()
    job.refresh_from_db()
    assert job.status == "done", job.error
    # The report did not queue behind the trickling receiver (which would hold a shared
    # worker for minutes): it started while the attempt was still being trickled to.
    [arrived] = receiver.arrived
    assert seen["report_started"] < seen["attempt_ended"], seen
    assert seen["report_ended"] - queued < 20, seen
    assert seen["attempt_ended"] - arrived <= DEADLINE_S + 1.0, seen
    delivery.refresh_from_db()
    assert delivery.status == "pending" and "timed out" in delivery.last_error
    # Retried later, by the sweep: due within the first backoff, its endpoint free again.
    assert delivery.next_attempt_at - delivery.created_at <= services.BACKOFF[0]
    assert WebhookEndpoint.objects.get(campaign=hooked).sending_until is None
