"""The judge's Celery task, on the ``inference`` queue beside modelhub's generation jobs.

Thin: it takes the job's id and where to start, calls the service for at most ``JOB_SLICE_S``
and queues its own continuation; safe to run twice (``acks_late`` redelivers a task whose
worker died): units already judged are skipped and replies already stored are not asked again.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import Task, shared_task
from django.db import DatabaseError, InterfaceError, OperationalError

from annotation.judges.services import judge_job_fail
from annotation.judges.services import judge_job_run as judge_job_run_service
from modelhub.backends import TransientBackendError

logger = logging.getLogger(__name__)
JOB_SLICE_S = 240.0
QUEUE = "inference"  # beside modelhub's generation jobs: where the models are
TRANSIENT = (TransientBackendError, OperationalError, InterfaceError)


def _fail(job_id: int, exc: BaseException) -> None:
    try:
        judge_job_fail(job_id=job_id, error=f"{type(exc).__name__}: {exc}")
    except DatabaseError:  # the database itself failed: the log is all that is left
        logger.exception("could not mark judge job %s failed", job_id)


class JudgeJobTask(Task):
    """Mark the job failed with its error once the task has failed for good."""

    def on_failure(self, exc: Exception, task_id: str, args: Any, kwargs: Any, einfo: Any) -> None:
        job_id = kwargs.get("job_id", args[0] if args else None)
        if job_id is not None:
            _fail(int(job_id), exc)


@shared_task(
    base=JudgeJobTask,
    bind=True,
    acks_late=True,
    autoretry_for=TRANSIENT,
    max_retries=5,
    retry_backoff=5,
    retry_backoff_max=300,
    retry_jitter=True,
    soft_time_limit=JOB_SLICE_S + 60,
    time_limit=JOB_SLICE_S + 120,
)
def judge_job_run(self: Task, job_id: int, start: int = 0, slice_s: float = JOB_SLICE_S) -> bool:
    """Judge job ``job_id``'s units from ``start`` for up to ``slice_s``; queue the rest;
    return whether the job is finished."""
    try:
        following = judge_job_run_service(job_id=job_id, start=start, budget_s=slice_s)
    except TRANSIENT as exc:
        if self.request.retries >= (self.max_retries or 0):
            _fail(job_id, exc)
        raise
    except Exception as exc:
        # on_failure covers a worker; this covers eager runs, where errors propagate before it
        _fail(job_id, exc)
        raise
    if following is not None:
        judge_job_run.apply_async(
            args=[job_id], kwargs={"start": following, "slice_s": slice_s}, queue=QUEUE
        )
    return following is None
