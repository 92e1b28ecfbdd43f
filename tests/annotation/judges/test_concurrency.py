"""On PostgreSQL: a judge started several times at once makes one job."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from annotation.judges import services
from annotation.judges.services import judge_start
from modelhub.models import GenerationJob
from tests.conftest import postgres_only

pytestmark = [postgres_only(), pytest.mark.django_db(transaction=True)]


def test_concurrent_starts_of_one_judge_make_one_job(
    likert_campaign, judge_endpoint, monkeypatch
) -> None:
    monkeypatch.setattr(services, "judge_job_enqueue", lambda job_id: None)  # counted, not run
    barrier = threading.Barrier(6)
    jobs: list[int] = []

    def start() -> None:
        try:
            barrier.wait()
            jobs.append(judge_start(campaign=likert_campaign, endpoint=judge_endpoint).pk)
        finally:
            connection.close()

    threads = [threading.Thread(target=start) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(jobs) == 6 and len(set(jobs)) == 1
    assert GenerationJob.objects.count() == 1
