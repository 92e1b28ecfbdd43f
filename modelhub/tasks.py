"""Celery tasks of the model side, routed to the ``inference`` queue (evalsite/celery.py).

Thin: they take IDs, call services, and are safe to run twice (acks_late redelivers a task
whose worker died). ``job_run`` is the one task of every job kind (generation, an LLM
judge, …): it runs the job's kind's runner (``modelhub.jobs``) for at most
``JOB_SLICE_S`` and then queues its own continuation, so no task comes near the time limits
however large the job.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import Task, shared_task
from django.db import DatabaseError, InterfaceError, OperationalError

from modelhub.backends import TransientBackendError
from modelhub.jobs import job_fail
from modelhub.jobs import job_run as job_run_service
from modelhub.jobs import jobs_dispatch as jobs_dispatch_service
from modelhub.models import ModelEndpoint
from modelhub.services import bot_reply as bot_reply_service

logger = logging.getLogger(__name__)
JOB_SLICE_S = 240.0
TRANSIENT = (TransientBackendError, OperationalError, InterfaceError)


class JobTask(Task):
    """Mark the job failed with its error once the task has failed for good."""

    def on_failure(self, exc: Exception, task_id: str, args: Any, kwargs: Any, einfo: Any) -> None:
        job_id = kwargs.get("job_id", args[0] if args else None)
        if job_id is not None:
            _job_fail(int(job_id), exc)


def _job_fail(job_id: int, exc: BaseException) -> None:
    try:
        job_fail(job_id=job_id, error=f"{type(exc).__name__}: {exc}")
    except DatabaseError:  # the database itself failed: the log is all that is left
        logger.exception("could not mark job %s failed", job_id)


@shared_task(
    base=JobTask,
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
def job_run(self: Task, job_id: int, start: int = 0, slice_s: float = JOB_SLICE_S) -> bool:
    """Work on job ``job_id`` (any kind) from ``start`` for up to ``slice_s``; queue the
    rest; return whether the job is finished."""
    try:
        following = job_run_service(job_id=job_id, start=start, budget_s=slice_s)
    except TRANSIENT as exc:
        if self.request.retries >= (self.max_retries or 0):  # the last try: no retry follows
            _job_fail(job_id, exc)
        raise  # autoretry_for retries it later, with backoff
    except Exception as exc:
        # on_failure covers a worker; this covers eager runs, where errors propagate before it
        _job_fail(job_id, exc)
        raise
    if following is not None:
        job_run.apply_async(args=[job_id], kwargs={"start": following, "slice_s": slice_s})
    return following is None


@shared_task(name="modelhub.tasks.jobs_dispatch", soft_time_limit=60, time_limit=90)
def jobs_dispatch() -> int:
    """Send the jobs the broker did not take when they were queued (beat, every minute)."""
    return jobs_dispatch_service()


@shared_task(
    acks_late=True,
    autoretry_for=(TransientBackendError,),
    max_retries=2,
    retry_backoff=1,
    retry_backoff_max=10,
    soft_time_limit=60,
    time_limit=90,
)
def bot_reply(endpoint_id: int, turns: list[str]) -> dict[str, str]:
    """Return the bot's next turn in a live chat as ``{"text", "finish_reason",
    "prompt_format"}`` (the caller stores and relays it; ``finish_reason`` "length" means
    the reply was cut at ``max_new_tokens``)."""
    endpoint = ModelEndpoint.objects.get(pk=endpoint_id)
    reply = bot_reply_service(endpoint=endpoint, turns=turns)
    return {
        "text": reply.text,
        "finish_reason": reply.finish_reason,
        "prompt_format": reply.prompt_format,
    }
