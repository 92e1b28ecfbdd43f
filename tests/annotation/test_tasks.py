"""Housekeeping tasks, eagerly and on a real Celery worker over the configured broker."""

import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection
from django.utils import timezone

from annotation.allocation import item_next
from annotation.models import Assignment, Lease
from annotation.services import assignment_start
from annotation.tasks import assignments_housekeeping
from tests.factories import WorkerFactory

ROOT = Path(__file__).resolve().parents[2]


def _stale_assignment(campaign):
    assignment = assignment_start(campaign=campaign, worker=WorkerFactory())
    item_next(assignment=assignment)
    long_ago = timezone.now() - timedelta(seconds=settings.EVALSITE_ABANDON_SECONDS + 60)
    Assignment.objects.filter(pk=assignment.pk).update(last_activity_at=long_ago)
    Lease.objects.filter(assignment=assignment).update(expires_at=long_ago)
    return assignment


def test_housekeeping_abandons_idle_assignments_and_purges_leases(campaign):
    assignment = _stale_assignment(campaign)
    assert assignments_housekeeping.apply().get() == {
        "unrated_chats_done": 0,
        "abandoned": 1,
        "leases_purged": 0,
        "chats_ended": 0,
    }
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.ABANDONED
    assert assignments_housekeeping.apply().get() == {
        "unrated_chats_done": 0,
        "abandoned": 0,
        "leases_purged": 0,
        "chats_ended": 0,
    }


@pytest.mark.postgres  # the worker process must see the test database
@pytest.mark.broker
@pytest.mark.django_db(transaction=True)
def test_housekeeping_runs_on_a_real_worker(campaign):
    assignment = _stale_assignment(campaign)
    db = connection.settings_dict
    env = dict(os.environ)
    env["DATABASE_URL"] = f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "evalsite",
            "worker",
            "--pool",
            "solo",
            "-Q",
            "default,inference",
            "--loglevel",
            "WARNING",
        ],
        cwd=ROOT,
        env=env,
    )
    try:
        result = assignments_housekeeping.delay()
        assert result.get(timeout=90) == {
            "unrated_chats_done": 0,
            "abandoned": 1,
            "leases_purged": 0,
            "chats_ended": 0,
        }
    finally:
        worker.terminate()
        worker.wait(timeout=30)
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.ABANDONED
