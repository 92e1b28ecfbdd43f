"""Liveness (``/health/``) and readiness (``/ready/``) for load balancers and orchestrators.

``/health/`` answers as long as the process serves requests: restart it when it does not.
``/ready/`` checks what a request needs: the database answers a query and every migration is
applied, the Celery broker answers (when one is configured) and the channel layer's Redis
answers (when configured). It names each check and answers 503 when one failed, so a load
balancer sends no worker to a process that would fail their answers.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse

TIMEOUT_S = 2.0
PROBES = {"/health/", "/ready/", "/metrics"}

_migrations_applied = False  # once true in a process, true until a deploy restarts it


def probes_middleware(get_response: Callable[[HttpRequest], HttpResponse]) -> Callable:
    """Answer the probes before the host check and the HTTPS redirect: an orchestrator or a
    Prometheus scraper calls a process by its own address, over plain HTTP."""
    from evalsite.observability import metrics_view

    views = {"/health/": health, "/ready/": ready, "/metrics": metrics_view}

    def middleware(request: HttpRequest) -> HttpResponse:
        view = views.get(request.path_info)
        if view is None:
            return get_response(request)
        if request.method not in ("GET", "HEAD"):
            return JsonResponse({"status": "error", "error": "Use GET."}, status=405)
        return view(request)

    return middleware


def health(request: HttpRequest) -> JsonResponse:
    """Liveness: the process answers."""
    return JsonResponse({"status": "ok"})


def ready(request: HttpRequest) -> JsonResponse:
    """Readiness: each dependency answers; 503 naming the ones that did not."""
    checks: dict[str, dict[str, object]] = {}
    for name, check in _checks():
        started = time.perf_counter()
        try:
            check()
        except Exception as exc:  # any failure of a dependency is a "not ready", not a 500
            checks[name] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:300]}
        else:
            checks[name] = {"ok": True}
        checks[name]["ms"] = round(1000 * (time.perf_counter() - started), 1)
    ok = all(c["ok"] for c in checks.values())
    body = {"status": "ok" if ok else "unavailable", "checks": checks}
    return JsonResponse(body, status=200 if ok else 503)


def _checks() -> list[tuple[str, Callable[[], None]]]:
    checks = [("database", _database), ("migrations", _migrations)]
    if settings.CELERY_BROKER_URL:
        checks.append(("broker", _broker))
    if settings.REDIS_URL:
        checks.append(("channel_layer", _channel_layer))
    return checks


def _database() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()


def _migrations() -> None:
    global _migrations_applied
    if _migrations_applied:
        return
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    if plan:
        names = ", ".join(f"{m.app_label}.{m.name}" for m, _ in plan[:5])
        raise RuntimeError(f"{len(plan)} migration(s) not applied: {names}")
    _migrations_applied = True


def _broker() -> None:
    from evalsite.celery import app

    with app.connection_for_write() as conn:
        conn.ensure_connection(max_retries=1, interval_start=0, timeout=TIMEOUT_S)


def _channel_layer() -> None:
    import redis

    client = redis.Redis.from_url(
        settings.REDIS_URL, socket_timeout=TIMEOUT_S, socket_connect_timeout=TIMEOUT_S
    )
    try:
        client.ping()
    finally:
        client.close()
