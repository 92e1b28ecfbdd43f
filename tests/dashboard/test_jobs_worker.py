"""A report job queued by the page runs on a real Celery worker over the configured broker."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection
from django.urls import reverse

from dashboard.models import Job

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.postgres  # the worker process must see the test database
@pytest.mark.broker
@pytest.mark.django_db(transaction=True)
def test_a_report_job_runs_on_a_real_worker_and_the_page_sees_its_progress(
    client, researcher, filled
) -> None:
    db = connection.settings_dict
    env = dict(os.environ)
    env["DATABASE_URL"] = f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"
    env["EVALSITE_DATA_DIR"] = str(settings.DATA_DIR)
    client.force_login(researcher)
    client.post(reverse("dashboard:job_create", args=[filled.slug]), {"kind": "report"})
    job = Job.objects.get()
    status_url = reverse("dashboard:job_status", args=[filled.slug, job.pk])
    assert client.get(status_url).json()["status"] == "queued"  # no worker yet
    command = [sys.executable, "-m", "celery", "-A", "evalsite", "worker", "--pool", "solo"]
    worker = subprocess.Popen(
        [*command, "-Q", "default", "--loglevel", "WARNING"], cwd=ROOT, env=env
    )
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            status = client.get(status_url).json()
            if status["status"] in ("done", "failed"):
                break
            time.sleep(0.3)
    finally:
        worker.terminate()
        worker.wait(timeout=30)
    assert status["status"] == "done", status["error"]
    assert status["progress"] == 1.0 and status["files"]
    page = client.get(reverse("dashboard:campaign", args=[filled.slug])).content.decode()
    assert status["files"][0].rsplit("/", 1)[0] in page  # the snapshot's files are linked
