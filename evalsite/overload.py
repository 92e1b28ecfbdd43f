"""Overload: a request the database cannot serve right now is answered 503, never 500.

PostgreSQL connections come from a bounded pool per process (settings: ``EVALSITE_DB_POOL_*``).
A request that waits longer than the pool's timeout for a connection, or that meets another
transient ``OperationalError`` (PostgreSQL's "too many clients", a server starting or shutting
down, a deadlock victim, SQLite's "database is locked"; see ``is_overload``), stored nothing:
Django rolls the transaction back. Such a request is answered 503 with ``Retry-After``
(``EVALSITE_RETRY_AFTER`` seconds): JSON for JSON clients, otherwise a page that tries again by
itself. A GET page reloads; the worker's answer form is sent again as it was, which is safe
because the submit service is idempotent (the same answers resent store nothing new). Nothing
else is resent on its own.

Errors in a view reach ``process_exception``. Those raised in another middleware (a session
saved in ``process_response``) are turned into a 500 by Django before this middleware sees
them, so the ``got_request_exception`` signal marks the request and the 500 is replaced.
"""

from __future__ import annotations

import logging
import sqlite3
import sys
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.signals import got_request_exception
from django.db import OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string
from django.urls import Resolver404, resolve

logger = logging.getLogger(__name__)

MARK = "_evalsite_overloaded"
# The form whose POST the 503 page sends again: its service stores identical answers once.
RESENDABLE_VIEWS = frozenset({"annotation:task_submit"})


# SQLSTATE classes that mean "not now": 08 connection exception, 40 transaction rollback
# (deadlock, serialization), 53 insufficient resources (53300 too many connections), 57P
# operator intervention (shutting down, cannot connect now).
TRANSIENT_SQLSTATES = ("08", "40", "53", "57P")


def is_overload(exc: BaseException | None) -> bool:
    """Whether ``exc`` means "the database cannot serve this request now, try again".

    A database error with another SQLSTATE (a bad query, a migration's "pending trigger
    events") is a bug and stays a 500. Errors without one are the pool's timeout and failures
    to connect; on SQLite, only a locked database counts.
    """
    if not isinstance(exc, OperationalError):
        return False
    cause = exc.__cause__
    if isinstance(cause, sqlite3.Error):
        return "locked" in str(cause)
    sqlstate = getattr(cause, "sqlstate", None)
    return sqlstate is None or sqlstate.startswith(TRANSIENT_SQLSTATES)


def overloaded_response(request: HttpRequest, exc: BaseException | None = None) -> HttpResponse:
    """503 with Retry-After: JSON for JSON clients, a page that retries by itself otherwise."""
    seconds = settings.RETRY_AFTER_SECONDS
    logger.warning(
        "503 overloaded: %s %s (%s)",
        request.method,
        request.path,
        f"{type(exc).__name__}: {exc}".strip()[:200] if exc else "error in a middleware",
    )
    text = f"The server is busy. Please try again in {seconds} seconds."
    response: HttpResponse
    if _wants_json(request):
        response = JsonResponse(
            {"ok": False, "error": text, "retry_after": seconds, "overloaded": True}, status=503
        )
    else:
        resend = request.method == "POST" and _view_name(request) in RESENDABLE_VIEWS
        context: dict[str, Any] = {
            "seconds": seconds,
            "reload": request.method in ("GET", "HEAD"),
            "resend": resend,
            "action": request.get_full_path(),
            # Form POSTs only: a JSON client got JSON above.
            "fields": list(request.POST.lists()) if resend else [],
        }
        response = HttpResponse(render_to_string("overloaded.html", context), status=503)
        # Worker pages live in the providers' iframes: so does their 503 page.
        response["Content-Security-Policy"] = "frame-ancestors " + " ".join(
            settings.WORKER_FRAME_ANCESTORS
        )
        response.xframe_options_exempt = True  # type: ignore[attr-defined]
    response["Retry-After"] = str(seconds)
    # Logged above as a warning: overload is not a bug, so not Django's "error" line for a 5xx.
    response._has_been_logged = True  # type: ignore[attr-defined]
    response["Cache-Control"] = "no-store"
    return response


class OverloadMiddleware:
    """Turn database overload anywhere in the request into a 503 with Retry-After."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        got_request_exception.connect(_mark, dispatch_uid="evalsite.overload.mark")

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if response.status_code == 500 and getattr(request, MARK, None) is not None:
            return overloaded_response(request, getattr(request, MARK))
        return response

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if is_overload(exception):
            return overloaded_response(request, exception)
        return None


def _mark(sender: object, request: HttpRequest | None = None, **kwargs: object) -> None:
    """Note an overload error raised outside the view (the signal carries no exception)."""
    exc = sys.exc_info()[1]
    if request is not None and is_overload(exc):
        setattr(request, MARK, exc)


def _wants_json(request: HttpRequest) -> bool:
    return request.content_type == "application/json" or "application/json" in request.headers.get(
        "Accept", ""
    )


def _view_name(request: HttpRequest) -> str:
    match = request.resolver_match
    if match is None:
        try:
            match = resolve(request.path_info)
        except Resolver404:
            return ""
    return match.view_name
