"""The Celery app: JSON only, late acks, one task at a time, time limits, an inference queue."""

import functools
import os
from typing import Any

from celery import Celery, Task
from celery.signals import task_prerun, worker_init
from kombu import Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")

app = Celery("evalsite")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.update(
    task_serializer="json",
    result_serializer="json",
    accept_content=["json"],
    # A task is acknowledged only after it ran, so a crashed worker's task is redelivered;
    # tasks are idempotent for that reason.
    task_acks_late=True,
    task_reject_on_worker_lost=True,
    worker_prefetch_multiplier=1,
    task_soft_time_limit=300,
    task_time_limit=360,
    task_default_queue="default",
    task_queues=(Queue("default"), Queue("inference"), Queue("webhooks")),
    # Model calls go to GPU workers: `celery -A evalsite worker -Q inference`.
    task_routes={
        "modelhub.tasks.*": {"queue": "inference"},
        # A live chat's bot turn (docs/chat.md): a model call, pushed back over the channel layer.
        "chat.tasks.chat_bot_turn": {"queue": "inference"},
        "chat.tasks.chat_arena_turn": {"queue": "inference"},
        # Requests to researchers' URLs wait on receivers we do not control: their own worker,
        # `celery -A evalsite worker -Q webhooks`, so a slow one never delays a report.
        "webhooks.tasks.*": {"queue": "webhooks"},
    },
    # Nobody reads a bot turn's result (it is in the database and pushed over the channel
    # layer): with a result backend, .delay() would also subscribe to the result in the web
    # process and the worker would write it, on every turn.
    task_annotations={
        "chat.tasks.chat_bot_turn": {"ignore_result": True},
        "chat.tasks.chat_arena_turn": {"ignore_result": True},
    },
    broker_connection_retry_on_startup=True,
    beat_schedule={
        "assignments-housekeeping": {
            "task": "annotation.tasks.assignments_housekeeping",
            "schedule": 300.0,
        },
        # Bring assignments in line with MTurk/Prolific (submitted elsewhere, returned...).
        "providers-sync": {"task": "recruitment.tasks.providers_sync", "schedule": 600.0},
        # Payments whose send was cut off: paid, sent again or flagged (docs/providers.md).
        "payments-sweep": {"task": "recruitment.tasks.payments_sweep", "schedule": 600.0},
        # Dashboard jobs killed mid-run (time limit, dead worker) show as failed.
        "dashboard-jobs-expire": {"task": "dashboard.tasks.jobs_expire", "schedule": 300.0},
        # Jobs accepted while the broker was down (evalsite.outbox): sent once it is back.
        "dashboard-jobs-dispatch": {"task": "dashboard.tasks.jobs_dispatch", "schedule": 60.0},
        "modelhub-jobs-dispatch": {"task": "modelhub.tasks.jobs_dispatch", "schedule": 60.0},
        # Webhook retries that are due, and first sends whose queueing failed (docs/api.md).
        "webhooks-due": {"task": "webhooks.tasks.webhooks_due", "schedule": 60.0},
        # API idempotency keys are remembered for a day (docs/api.md).
        "api-housekeeping": {"task": "api.tasks.api_housekeeping", "schedule": 3600.0},
    },
)
app.autodiscover_tasks()


@functools.cache
def _tasks_imported() -> None:
    """Import every app's tasks module once (a worker does so at start; a web process when
    it first sends a task), so that eager tasks run and unknown names fail loudly."""
    app.autodiscover_tasks(force=True)


def task_send(name: str, *args: Any, **options: Any) -> None:
    """Send the task registered as ``name`` (``"<app>.tasks.<function>"``) with ``args`` and
    Celery's ``options`` (``countdown``…); raise KeyError for a name no app registers.

    Services send their tasks by name, so a service never imports the tasks module that
    imports it (docs/architecture.md, "Layers").
    """
    _tasks_imported()
    task = app.tasks[name]
    if options:
        task.apply_async(args, **options)
    else:
        task.delay(*args)


# Celery's Django fixup closes every database connection before and after each task (and,
# in a prefork worker, the whole connection pool) unless told to reuse them for this many
# tasks: then it closes them once per 2 x this many. `_reuse_database_connections` below
# checks them before each task instead.
app.conf.update(CELERY_DB_REUSE_MAX=100_000)


@worker_init.connect
def _keep_database_connections(**kwargs: object) -> None:
    """Keep a worker's database connection between tasks (checked before each task).

    A worker process runs one task at a time, so one persistent connection per process is
    safe; opening one per task (or a new pool per task, as Celery's fixup does to a pooled
    database in a prefork worker) costs a live chat's bot turn several ms (bench/chat.py).
    The web processes' connection pool (PostgreSQL's ``OPTIONS["pool"]``,
    evalsite/settings.py) bounds a burst of requests; a worker has no burst, so it takes a
    persistent connection instead (Django refuses one beside a pool).
    """
    from django.conf import settings

    for database in settings.DATABASES.values():
        database.get("OPTIONS", {}).pop("pool", None)
        if not database.get("CONN_MAX_AGE"):
            database["CONN_MAX_AGE"] = 300
            database["CONN_HEALTH_CHECKS"] = True


@task_prerun.connect
def _reuse_database_connections(task: Task | None = None, **kwargs: object) -> None:
    """Before each task on a worker: close a connection that is too old or broken (a
    restarted database), and check the kept one on its first use, as Django does at each
    request's start. A task run eagerly (inline, in the caller's transaction) is left alone."""
    from django.db import close_old_connections

    if task is None or getattr(task.request, "is_eager", False):
        return
    close_old_connections()
