"""Jobs: their kinds and runners, and every write to a ``GenerationJob`` (started, queued
again, progress, notes, finished, failed). Only modelhub writes jobs, and only here.

A job's ``kind`` says which runner works through it. The app that owns a kind registers its
runner in its ``AppConfig.ready`` (modelhub: ``generation``; annotation: the LLM judge's
``judge``), so modelhub never imports the apps above it. Every kind runs on one task,
``modelhub.tasks.job_run`` on the ``inference`` queue, which calls ``job_run`` here: the
runner is picked by the kind stored on the row, so a job queued again (the admin's action) is
run by its own kind's runner, whatever its label says.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from django.db.models import Value
from django.db.models.functions import Greatest
from django.utils import timezone

from evalsite.outbox import job_send_on_commit, jobs_sweep
from modelhub.models import GenerationJob, ModelEndpoint

TASK = "modelhub.tasks.job_run"
ERROR_CHARS = 5000  # a job's error keeps its first lines; the rest would only bloat the row
_CLOSED = (GenerationJob.Status.DONE, GenerationJob.Status.FAILED)


class JobRunner(Protocol):
    """Works through a job's examples from ``start`` for about ``budget_s`` seconds; returns
    where the next slice starts, or None when the job is finished (or gone). A runner that
    knows from stored rows what is left may ignore ``start``."""

    def __call__(self, *, job_id: int, start: int, budget_s: float) -> int | None: ...


_RUNNERS: dict[str, JobRunner] = {}


def job_kind_register(*, kind: str, runner: JobRunner) -> None:
    """Make ``runner`` the one that works through the jobs of ``kind`` (called by the app
    that owns the kind, in its ``AppConfig.ready``)."""
    if kind not in GenerationJob.Kind.values:
        raise ValueError(f"unknown job kind {kind!r}; known: {', '.join(GenerationJob.Kind)}")
    _RUNNERS[kind] = runner


def job_runner(kind: str) -> JobRunner:
    """Return the runner of ``kind``; raise ValueError when no installed app registered one."""
    runner = _RUNNERS.get(kind)
    if runner is None:
        raise ValueError(f"no runner is registered for {kind!r} jobs (is its app installed?)")
    return runner


# -- starting -------------------------------------------------------------------------------


def job_start(
    *,
    endpoint: ModelEndpoint,
    kind: str,
    examples: Sequence[Mapping[str, Any]],
    label: str = "",
    batch_size: int = 32,
) -> GenerationJob:
    """Create a job of ``kind`` over ``examples`` (``{turns, reference}`` each, with what the
    kind's runner needs besides) and queue it when the transaction commits.

    Raise ValueError when no runner is registered for ``kind`` or ``batch_size`` is below 1.
    Without a broker (the embedded default) Celery runs the task eagerly, in this process.
    """
    job_runner(kind)  # refuse a kind nothing would run
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    job = GenerationJob.objects.create(
        endpoint=endpoint,
        kind=kind,
        examples=list(examples),
        label=label,
        total=len(examples),
        batch_size=batch_size,
    )
    _job_enqueue(job)
    return job


def endpoint_lock(endpoint: ModelEndpoint) -> bool:
    """Lock the endpoint's row until the transaction ends; return whether it exists.

    modelhub's one row lock, taken alone (the core's row locks and their order are
    ``annotation.locks``'s): it serialises starts of the same job on one endpoint.
    """
    return ModelEndpoint.objects.select_for_update().filter(pk=endpoint.pk).exists()


def job_unfinished(*, endpoint: ModelEndpoint, kind: str, label: str) -> GenerationJob | None:
    """Return the endpoint's queued or running job of this kind and label, or None.

    Takes the endpoint's row lock, held until the caller's transaction ends (the caller must
    be in one): concurrent starts of the same job are serialised, so the second sees the
    first's job instead of creating another.
    """
    endpoint_lock(endpoint)
    return (
        GenerationJob.objects.filter(endpoint=endpoint, kind=kind, label=label)
        .exclude(status__in=_CLOSED)
        .first()
    )


def job_retry(*, job: GenerationJob) -> None:
    """Put a failed (or stuck) job back in the queue, to be run by its kind's runner; what
    it stored is kept. A done job is left alone."""
    requeued = (
        GenerationJob.objects.filter(pk=job.pk)
        .exclude(status=GenerationJob.Status.DONE)
        .update(status=GenerationJob.Status.QUEUED, error="", finished_at=None, dispatched_at=None)
    )
    if requeued:
        _job_enqueue(job)


def jobs_dispatch() -> int:
    """Send the jobs whose task the broker did not take when they were queued (beat, every
    minute; ``evalsite.outbox``); return how many were sent."""
    return jobs_sweep(GenerationJob, TASK)


def _job_enqueue(job: GenerationJob) -> None:
    """Send the job's task once the transaction commits; with the broker down it stays queued
    for ``jobs_dispatch``."""
    job_send_on_commit(GenerationJob, job.pk, TASK)


# -- running --------------------------------------------------------------------------------


def job_run(*, job_id: int, start: int = 0, budget_s: float = 240.0) -> int | None:
    """Work on the job with its kind's runner for about ``budget_s``; return where the next
    slice starts, or None when the job is finished or gone."""
    kind = GenerationJob.objects.filter(pk=job_id).values_list("kind", flat=True).first()
    if kind is None:
        return None
    return job_runner(kind)(job_id=job_id, start=start, budget_s=budget_s)


def job_begin(*, job_id: int, kind: str) -> GenerationJob | None:
    """Return the job to work on, marked running with one more attempt; None when it is gone,
    done or failed (``job_retry`` queues a failed job again).

    Raise ValueError when the job is of another kind: a runner never works on another kind's
    job (the generator once ran on a judge's prompts)."""
    job = GenerationJob.objects.select_related("endpoint").filter(pk=job_id).first()
    if job is None or job.status in _CLOSED:
        return None
    if job.kind != kind:
        raise ValueError(f"job {job_id} is a {job.kind} job, not a {kind} job")
    job.status = GenerationJob.Status.RUNNING
    job.started_at = job.started_at or timezone.now()
    job.attempts += 1
    GenerationJob.objects.filter(pk=job.pk).update(
        status=job.status, started_at=job.started_at, attempts=job.attempts
    )
    return job


def job_progress(*, job: GenerationJob, done: int) -> None:
    """Record that ``done`` examples are settled; in the caller's transaction, so the counter
    commits with what it counts. Never moves back (a slower duplicate run may report less)."""
    GenerationJob.objects.filter(pk=job.pk).update(done=Greatest("done", Value(done)))


def job_note(*, job: GenerationJob, lines: Sequence[str]) -> None:
    """Append lines to the job's error (examples that failed while the job goes on); past
    ``ERROR_CHARS`` the rest is cut."""
    current = GenerationJob.objects.filter(pk=job.pk).values_list("error", flat=True).get()
    kept = [line for line in current.splitlines() if line] + list(lines)
    GenerationJob.objects.filter(pk=job.pk).update(error="\n".join(kept)[:ERROR_CHARS])


def job_finish(*, job: GenerationJob, done: int, error: str | None = None) -> None:
    """Mark the job finished with ``done`` of its examples settled: done when all are, else
    failed. ``error`` replaces the job's error; None keeps its notes."""
    fields: dict[str, Any] = {
        "status": GenerationJob.Status.DONE if done == job.total else GenerationJob.Status.FAILED,
        "done": done,
        "finished_at": timezone.now(),
    }
    if error is not None:
        fields["error"] = error[:ERROR_CHARS]
    GenerationJob.objects.filter(pk=job.pk).update(**fields)


def job_fail(*, job_id: int, error: str) -> None:
    """Mark the job failed with its error (what it stored is kept); a done job stays done."""
    GenerationJob.objects.filter(pk=job_id).exclude(status=GenerationJob.Status.DONE).update(
        status=GenerationJob.Status.FAILED, error=error[:ERROR_CHARS], finished_at=timezone.now()
    )
