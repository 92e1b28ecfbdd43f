"""Jobs of every kind go through modelhub's one task, which runs each with its kind's runner:
when started, and when queued again from the admin."""

from __future__ import annotations

import pytest

from modelhub import jobs
from modelhub.backends import Example
from modelhub.jobs import job_kind_register, job_retry, job_start
from modelhub.models import Generation, GenerationJob
from modelhub.services import endpoint_register
from modelhub.tasks import job_run


@pytest.fixture
def bot(db):
    return endpoint_register(name="bot", backend="generic_bot")


@pytest.fixture
def judge_runner(monkeypatch):
    """Stand in for the judge's runner (annotation registers the real one) and record calls."""
    calls = []

    def runner(*, job_id: int, start: int, budget_s: float) -> int | None:
        calls.append((job_id, start))
        GenerationJob.objects.filter(pk=job_id).update(status=GenerationJob.Status.DONE)
        return None

    monkeypatch.setitem(jobs._RUNNERS, GenerationJob.Kind.JUDGE, runner)
    return calls


def _failed_job(endpoint, kind: str, label: str) -> GenerationJob:
    examples = [Example(turns=(f"Turn {i}.",)).as_dict() for i in range(3)]
    return GenerationJob.objects.create(
        endpoint=endpoint,
        kind=kind,
        label=label,
        examples=examples,
        total=3,
        status=GenerationJob.Status.FAILED,
        error="boom",
    )


def test_a_generation_job_queued_again_runs_the_generator(
    bot, judge_runner, celery_eager, django_capture_on_commit_callbacks
):
    # a label that once chose the judge's task: the kind decides now
    job = _failed_job(bot, GenerationJob.Kind.GENERATION, "judge:looks-like-a-judge")
    with django_capture_on_commit_callbacks(execute=True):
        job_retry(job=job)
    job.refresh_from_db()
    assert (job.status, job.done, job.error) == (GenerationJob.Status.DONE, 3, "")
    assert Generation.objects.count() == 3 and judge_runner == []


def test_a_judge_job_queued_again_runs_the_judges_runner_not_the_generator(
    bot, judge_runner, celery_eager, django_capture_on_commit_callbacks
):
    job = _failed_job(bot, GenerationJob.Kind.JUDGE, "no prefix at all")
    with django_capture_on_commit_callbacks(execute=True):
        job_retry(job=job)
    job.refresh_from_db()
    assert judge_runner == [(job.pk, 0)]
    assert job.status == GenerationJob.Status.DONE and job.error == ""
    assert not Generation.objects.exists()  # the generator never saw its prompts


def test_a_job_whose_kind_has_no_runner_fails_with_the_reason(
    bot, monkeypatch, celery_eager, django_capture_on_commit_callbacks
):
    job = _failed_job(bot, GenerationJob.Kind.JUDGE, "judge:orphan")
    monkeypatch.delitem(jobs._RUNNERS, GenerationJob.Kind.JUDGE)
    with pytest.raises(ValueError), django_capture_on_commit_callbacks(execute=True):
        job_retry(job=job)
    job.refresh_from_db()
    assert job.status == GenerationJob.Status.FAILED
    assert "no runner is registered for 'judge' jobs" in job.error
    with pytest.raises(ValueError, match="no runner is registered"):
        job_start(endpoint=bot, kind=GenerationJob.Kind.JUDGE, examples=[])
    assert GenerationJob.objects.count() == 1  # refused before anything was stored


def test_only_known_kinds_can_be_registered():
    with pytest.raises(ValueError, match="unknown job kind 'arena'"):
        job_kind_register(kind="arena", runner=lambda **kw: None)


def test_a_done_job_is_not_queued_again(bot, monkeypatch, django_capture_on_commit_callbacks):
    job = _failed_job(bot, GenerationJob.Kind.GENERATION, "")
    GenerationJob.objects.filter(pk=job.pk).update(status=GenerationJob.Status.DONE, error="")
    queued = []
    monkeypatch.setattr(job_run, "apply_async", lambda args, **_: queued.append(args[0]))
    with django_capture_on_commit_callbacks(execute=True):
        job_retry(job=job)
    job.refresh_from_db()
    assert job.status == GenerationJob.Status.DONE and queued == []
