"""Operations: JSON logs, Sentry error reporting and Prometheus metrics, each off by default.

- ``EVALSITE_LOG_JSON=true``: every log record is one JSON object on one line.
- ``SENTRY_DSN``: errors of the web process (Django views, the Channels consumers) and of the
  Celery workers go to Sentry (sentry-sdk's Django, Celery and ASGI integrations).
- ``EVALSITE_METRICS=true``: ``/metrics`` in Prometheus' text format — requests by view and
  status, request and task durations, judgments stored, active chats. Several web processes
  share ``PROMETHEUS_MULTIPROC_DIR`` (prometheus_client's multiprocess mode); a Celery worker
  on another machine serves its own on ``EVALSITE_METRICS_PORT``.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

from django.apps import apps as django_apps
from django.conf import settings
from django.http import HttpRequest, HttpResponse

logger = logging.getLogger(__name__)

# Attributes every LogRecord has; anything else was passed in ``extra=`` and is kept.
_STANDARD = set(vars(logging.makeLogRecord({}))) | {"message", "asctime", "taskName"}


class JsonFormatter(logging.Formatter):
    """One JSON object a line: time, level, logger, message, the exception, any extras."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "process": record.process,
        }
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                entry[key] = value
        return json.dumps(entry, default=str, ensure_ascii=False)


# The query parameters that carry a provider's worker id in an arrival link (providers'
# ``arrival``): an access or request log line names the request's URL with them.
_WORKER_ID = re.compile(r"((?:^|[?&])(?:workerId|PROLIFIC_PID)=)[^&\s\"']*")
# What a logged worker id becomes: the logging layer cannot read the worker's pseudonym
# (no query in a log call, none in an async server's access log), and the id is personal
# data that outlives a forget in every log kept.
ID_REDACTED = "[worker]"


class WorkerIdFilter(logging.Filter):
    """Take the provider's worker id out of a log line's URL (gunicorn's and uvicorn's
    access logs, Django's request logs): the line keeps its path, never the id.
    ``settings.LOGGING`` puts it on every handler."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if "workerId=" in message or "PROLIFIC_PID=" in message:
            record.msg = _WORKER_ID.sub(lambda m: m.group(1) + ID_REDACTED, message)
            record.args = None
        return True


def sentry_init(*, dsn: str, environment: str, traces_sample_rate: float) -> None:
    """Report errors of Django, the Celery tasks and the ASGI app (websockets) to Sentry."""
    import sentry_sdk
    from sentry_sdk.integrations.celery import CeleryIntegration
    from sentry_sdk.integrations.django import DjangoIntegration

    sentry_sdk.init(
        dsn=dsn,
        environment=environment,
        traces_sample_rate=traces_sample_rate,
        send_default_pii=False,  # worker ids and answers stay out of error reports
        integrations=[DjangoIntegration(), CeleryIntegration()],
    )


def asgi_wrap(application: Any) -> Any:
    """The ASGI app, wrapped to report the Channels consumers' errors when Sentry is on."""
    if not settings.SENTRY_DSN:
        return application
    from sentry_sdk.integrations.asgi import SentryAsgiMiddleware

    return SentryAsgiMiddleware(application)


# --- Prometheus ---------------------------------------------------------------------------

_metrics: dict[str, Any] = {}


def _registry_metrics() -> dict[str, Any]:
    """Create the metrics once per process (prometheus_client refuses duplicates)."""
    if not _metrics:
        from prometheus_client import Counter, Histogram

        _metrics["requests"] = Counter(
            "evalsite_http_requests_total",
            "HTTP requests answered, by view and status code.",
            ["view", "method", "status"],
        )
        _metrics["request_seconds"] = Histogram(
            "evalsite_http_request_duration_seconds",
            "Time to answer an HTTP request, by view.",
            ["view"],
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
        )
        _metrics["task_seconds"] = Histogram(
            "evalsite_celery_task_duration_seconds",
            "Time a Celery task ran, by task and outcome.",
            ["task", "state"],
            buckets=(0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 120, 300),
        )
        # No labels: the hook runs inside the judgment's transaction and must cost no query.
        _metrics["judgments"] = Counter("evalsite_judgments_stored_total", "Judgments stored.")
    return _metrics


def metrics_middleware(get_response: Callable[[HttpRequest], HttpResponse]) -> Callable:
    """Count every request by its URL pattern's name (never the raw path) and time it."""
    metrics = _registry_metrics()

    def middleware(request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        response = get_response(request)
        match = getattr(request, "resolver_match", None)
        view = (match.view_name if match else "") or "unmatched"
        metrics["requests"].labels(view, request.method or "", str(response.status_code)).inc()
        metrics["request_seconds"].labels(view).observe(time.perf_counter() - started)
        return response

    return middleware


class _LiveCollector:
    """Numbers read from the database at scrape time, right whichever process serves it."""

    def describe(self) -> Iterator[Any]:
        """The metric's name for registration, without a query (apps may not be migrated)."""
        from prometheus_client.core import GaugeMetricFamily

        yield GaugeMetricFamily("evalsite_active_chats", "Live chat conversations in progress.")

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import GaugeMetricFamily

        dialogue = django_apps.get_model("annotation", "Dialogue")  # by name: no app imported
        active = dialogue.objects.filter(status=dialogue.Status.ACTIVE).count()
        yield GaugeMetricFamily(
            "evalsite_active_chats", "Live chat conversations in progress.", value=active
        )


def metrics_connect() -> None:
    """Hook the metrics to judgments and Celery tasks (called once, from the app's ready)."""
    from celery.signals import task_postrun, task_prerun, worker_ready
    from django.db.models.signals import post_save

    judgment = django_apps.get_model("annotation", "Judgment")  # by name: no app imported

    metrics = _registry_metrics()
    started: dict[str, float] = {}

    def judgment_saved(sender: type, instance: Any, created: bool, **kwargs: Any) -> None:
        if created:
            metrics["judgments"].inc()

    def prerun(task_id: str, **kwargs: Any) -> None:
        started[task_id] = time.perf_counter()

    def postrun(task_id: str, task: Any, state: str | None = None, **kwargs: Any) -> None:
        began = started.pop(task_id, None)
        if began is not None:
            metrics["task_seconds"].labels(task.name, state or "UNKNOWN").observe(
                time.perf_counter() - began
            )

    def exporter(**kwargs: Any) -> None:
        if settings.METRICS_PORT:
            from prometheus_client import start_http_server

            start_http_server(settings.METRICS_PORT, registry=metrics_registry())
            logger.info("metrics on port %s", settings.METRICS_PORT)

    from prometheus_client import REGISTRY

    REGISTRY.register(_LiveCollector())
    post_save.connect(judgment_saved, sender=judgment, weak=False)
    task_prerun.connect(prerun, weak=False)
    task_postrun.connect(postrun, weak=False)
    worker_ready.connect(exporter, weak=False)


def metrics_registry() -> Any:
    """The registry to expose: the web processes' shared files in multiprocess mode, else
    this process's own; both with the numbers read from the database."""
    from prometheus_client import REGISTRY, CollectorRegistry
    from prometheus_client.multiprocess import MultiProcessCollector

    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        return REGISTRY  # metrics_connect registered the live collector in it
    registry = CollectorRegistry()
    MultiProcessCollector(registry)
    registry.register(_LiveCollector())
    return registry


def metrics_view(request: HttpRequest) -> HttpResponse:
    """Prometheus' scrape target; 404 unless metrics are on, 401 without the token if set."""
    from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

    if not settings.METRICS:
        return HttpResponse("Metrics are off (EVALSITE_METRICS).", status=404)
    if settings.METRICS_TOKEN and request.headers.get("Authorization") != (
        f"Bearer {settings.METRICS_TOKEN}"
    ):
        return HttpResponse("A bearer token is required.", status=401)
    return HttpResponse(generate_latest(metrics_registry()), content_type=CONTENT_TYPE_LATEST)
