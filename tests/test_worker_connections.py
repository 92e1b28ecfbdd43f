"""A Celery worker keeps its database connection from task to task (evalsite/celery.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

from annotation.tasks import assignments_housekeeping

ROOT = Path(__file__).resolve().parents[1]

pytestmark = [pytest.mark.postgres, pytest.mark.broker, pytest.mark.django_db(transaction=True)]


def _others() -> set[int]:
    """Backends of the test database other than this test's own."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        return {pid for (pid,) in cursor.fetchall()}


def test_a_prefork_worker_runs_task_after_task_on_one_database_connection():
    db = connection.settings_dict
    env = {
        **os.environ,
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
    }
    before = _others()
    worker = subprocess.Popen(
        # As compose.yaml runs it: prefork, one process (the web's pool settings apply).
        [sys.executable, "-m", "celery", "-A", "evalsite", "worker", "--concurrency", "1"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    seen = []
    try:
        for _ in range(3):
            assert assignments_housekeeping.delay().get(timeout=90)["abandoned"] == 0
            seen.append(_others() - before)
    finally:
        worker.terminate()
        worker.wait(timeout=30)
    # Opened by the first task and still there after the next ones: one and the same.
    assert len(seen[0]) == 1 and seen[0] == seen[1] == seen[2], seen
