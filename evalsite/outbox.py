"""The job outbox: a job a request accepted is sent to the broker from its PostgreSQL row.

A request that answers "accepted" (202, or a redirect to the job's page) has created the job's
row; its task is sent once the transaction commits (``job_send_on_commit``). When the broker
cannot be reached (Redis down: issue #35's generation job stayed queued 17 minutes), the
request still succeeds and the row stays queued with no ``dispatched_at``; the app's sweep
(``jobs_sweep``, beat, every minute) sends such rows once the broker answers again. Beat sends
the sweep through the broker too, so the first sweep after an outage is the one that catches
up. A row sent twice (the sweep meeting a send in flight) is harmless: job tasks are
idempotent.

A job model here has ``status`` (``"queued"`` until a worker takes it), ``created_at`` and
``dispatched_at`` (null until its task was handed to the broker).
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.db import models, transaction
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerError
from redis.exceptions import RedisError

from evalsite.celery import task_send

logger = logging.getLogger(__name__)

# A row younger than this is left to its own request's send; older ones the sweep takes.
SWEEP_AFTER = timedelta(seconds=10)
SWEEP_BATCH = 500
# What a send raises when the broker cannot be reached (kombu wraps its transport's errors;
# RedisError covers what it passes through).
SEND_ERRORS = (BrokerError, RedisError)


def job_send(model: type[models.Model], pk: int, task: str) -> bool:
    """Send ``task`` for the job row ``pk`` of ``model`` and note it sent; return False, and
    leave the row to the sweep, when the broker cannot be reached."""
    try:
        # The row carries the job's state; a result would have the sending process subscribe
        # to it on a Redis result backend, which, when down, retries for 20 s before failing.
        task_send(task, pk, ignore_result=True)
    except SEND_ERRORS as exc:
        logger.warning("%s %s not sent (broker unavailable: %s); the sweep will", task, pk, exc)
        return False
    model._default_manager.filter(pk=pk).update(dispatched_at=timezone.now())
    return True


def job_send_on_commit(model: type[models.Model], pk: int, task: str) -> None:
    """Send the job's task once the caller's transaction commits (``job_send``)."""
    transaction.on_commit(lambda: job_send(model, pk, task))


def jobs_sweep(model: type[models.Model], task: str) -> int:
    """Send the queued, unsent jobs of ``model`` older than ``SWEEP_AFTER``, oldest first;
    stop at the first that fails (the broker is still down). Return how many were sent."""
    ids = (
        model._default_manager.filter(
            status="queued",
            dispatched_at__isnull=True,
            created_at__lte=timezone.now() - SWEEP_AFTER,
        )
        .order_by("pk")
        .values_list("pk", flat=True)[:SWEEP_BATCH]
    )
    sent = 0
    for pk in ids:
        if not job_send(model, pk, task):
            break
        sent += 1
    return sent
