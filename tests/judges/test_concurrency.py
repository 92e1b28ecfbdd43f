"""On PostgreSQL: a judge started several times at once makes one job."""

from __future__ import annotations

import pytest

from judges.services import judge_start
from modelhub.models import GenerationJob
from modelhub.tasks import job_run
from tests.concurrency import at_once

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def test_concurrent_starts_of_one_judge_make_one_job(
    likert_campaign, judge_endpoint, monkeypatch
) -> None:
    monkeypatch.setattr(job_run, "apply_async", lambda args, **_: None)  # counted, not run
    jobs = at_once(lambda: judge_start(campaign=likert_campaign, endpoint=judge_endpoint).pk, 6)
    assert len(jobs) == 6 and len(set(jobs)) == 1 and isinstance(jobs[0], int), jobs
    assert GenerationJob.objects.count() == 1
