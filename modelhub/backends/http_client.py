"""JSON over HTTP to model servers: pooled connections, a concurrency limit, bounded retries.

Each process keeps one ``httpx.Client`` per server (scheme, host and port), so requests reuse
kept-alive connections instead of opening one each, and one semaphore per endpoint (server,
model and limit), so however many threads and backend objects call it, at most ``concurrency``
requests of an endpoint are in flight per process. Both are made on first use in the process
that uses them and forgotten in a forked child (Celery's prefork pool forks after importing):
a child never shares a socket or a lock with its parent. Clients are closed at exit.

Retries: connection errors, timeouts, 408, 409, 429 and 5xx. The wait before retry *n* is
``backoff_s * 2**(n-1)`` with "equal jitter" (between half and all of it), or the server's
``Retry-After`` (seconds or an HTTP-date) when that is longer. The number of retries is
bounded (``max_retries``) and so is the total time (``retry_budget_s``, counted from the first
attempt): a wait that would pass the budget is not waited, the error is raised at once as
``TransientBackendError`` (the Celery task retries later). Other 4xx are never retried: the
error names the status and the server's error message.
"""

from __future__ import annotations

import atexit
import datetime
import email.utils
import json
import os
import random
import re
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from modelhub.backends.base import BackendError, TransientBackendError

RETRIED_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})
MAX_CONCURRENCY = 64  # the most connections one process opens to one server
# Below the common servers' keep-alive (uvicorn, which vLLM runs, closes idle ones after 5 s),
# so the client drops an idle connection before the server does rather than racing it.
KEEPALIVE_EXPIRY_S = 4.0
DETAIL_CHARS = 300

_lock = threading.Lock()
_pid = os.getpid()
_clients: dict[str, httpx.Client] = {}
_semaphores: dict[tuple[str, str, int], threading.BoundedSemaphore] = {}


def _forget_after_fork() -> None:
    """Drop the parent's clients and semaphores in a forked child, without closing them: their
    sockets belong to the parent, and a lock held by another parent thread would never be
    released here."""
    global _lock, _pid, _clients, _semaphores
    _lock, _pid, _clients, _semaphores = threading.Lock(), os.getpid(), {}, {}


os.register_at_fork(after_in_child=_forget_after_fork)


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def pooled_client(url: str) -> httpx.Client:
    """Return this process's client for the server of ``url``, made on first use."""
    origin = _origin(url)
    with _lock:
        if _pid != os.getpid():  # a fork that bypassed os.fork (no at-fork hook ran)
            _forget_after_fork()
        client = _clients.get(origin)
        if client is None or client.is_closed:
            client = httpx.Client(
                limits=httpx.Limits(
                    max_connections=MAX_CONCURRENCY,
                    max_keepalive_connections=MAX_CONCURRENCY,
                    keepalive_expiry=KEEPALIVE_EXPIRY_S,
                ),
                # As urllib did: HTTP(S)_PROXY, NO_PROXY and SSL_CERT_FILE from the environment
                trust_env=True,
            )
            _clients[origin] = client
        return client


def endpoint_semaphore(url: str, model: str, limit: int) -> threading.BoundedSemaphore:
    """Return this process's semaphore for an endpoint (server URL, model, limit)."""
    key = (url, model, limit)
    with _lock:
        if _pid != os.getpid():
            _forget_after_fork()
        semaphore = _semaphores.get(key)
        if semaphore is None:
            semaphore = _semaphores[key] = threading.BoundedSemaphore(limit)
        return semaphore


@atexit.register
def clients_close() -> None:
    """Close this process's clients (their kept-alive connections); later calls make new ones."""
    with _lock:
        clients = list(_clients.values()) if _pid == os.getpid() else []
        _clients.clear()
    for client in clients:
        client.close()


def retry_after_s(value: str | None, *, now: float | None = None) -> float | None:
    """Return the wait a ``Retry-After`` header asks for, in seconds (never negative), or None
    when it is absent or unreadable. It is either seconds or an HTTP-date (RFC 9110 §10.2.3)."""
    if not value or not value.strip():
        return None
    value = value.strip()
    if re.fullmatch(r"\d+(\.\d+)?", value):
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # "-0000" and the asctime form: an HTTP-date is always GMT
        when = when.replace(tzinfo=datetime.UTC)
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def backoff_s(attempt: int, base_s: float) -> float:
    """Return the jittered exponential wait before retry ``attempt`` (1, 2, …): between half
    and all of ``base_s * 2**(attempt-1)``, so clients that failed together retry apart."""
    full = base_s * 2 ** (attempt - 1)
    return full / 2 + random.uniform(0, full / 2)


def _wait(seconds: float) -> None:
    time.sleep(seconds)  # a seam for tests, which record the waits instead


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long a request is retried."""

    max_retries: int = 3
    backoff_s: float = 0.5
    budget_s: float = 30.0


class _Retryable(Exception):
    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def post_json(
    url: str,
    body: Mapping[str, Any],
    *,
    headers: Mapping[str, str],
    timeout_s: float,
    semaphore: threading.BoundedSemaphore,
    retry: RetryPolicy,
    label: str,
) -> dict[str, Any]:
    """POST ``body`` as JSON and return the JSON object answered, retrying transient failures.

    Raise ``TransientBackendError`` when the retries or their time budget are spent, and
    ``BackendError`` at once for other 4xx and for answers that are not a JSON object.
    A request holds a slot of ``semaphore`` while in flight, not while waiting to retry.
    """
    started = time.monotonic()
    last = ""
    for attempt in range(retry.max_retries + 1):
        try:
            with semaphore:
                return _post_once(url, body, headers, timeout_s, label)
        except _Retryable as exc:
            last = str(exc)
            if attempt == retry.max_retries:
                break
            wait = backoff_s(attempt + 1, retry.backoff_s)
            if exc.retry_after is not None:
                # A little jitter on top, so the clients told the same date come back apart.
                wait = max(wait, exc.retry_after * random.uniform(1.0, 1.1))
            elapsed = time.monotonic() - started
            if elapsed + wait > retry.budget_s:
                raise TransientBackendError(
                    f"{label}: {url} failed {attempt + 1} times in {elapsed:.1f} s; the next "
                    f"try would be in {wait:.1f} s, past retry_budget_s={retry.budget_s:g}; "
                    f"last error: {last}"
                ) from None
            _wait(wait)
    raise TransientBackendError(
        f"{label}: {url} failed {retry.max_retries + 1} times in "
        f"{time.monotonic() - started:.1f} s; last error: {last}"
    )


def _post_once(
    url: str, body: Mapping[str, Any], headers: Mapping[str, str], timeout_s: float, label: str
) -> dict[str, Any]:
    try:
        response = pooled_client(url).post(url, json=body, headers=headers, timeout=timeout_s)
    except httpx.TimeoutException:
        raise _Retryable(f"no answer within timeout_s={timeout_s:g}") from None
    except httpx.TransportError as exc:
        raise _Retryable(f"cannot reach the server: {type(exc).__name__}: {exc}") from None
    if response.status_code in RETRIED_STATUS:
        raise _Retryable(
            f"HTTP {response.status_code}: {error_detail(response.content)}",
            retry_after_s(response.headers.get("Retry-After")),
        )
    if response.status_code >= 400:
        raise BackendError(
            f"{label}: {url} answered HTTP {response.status_code}: {error_detail(response.content)}"
        )
    try:
        answer = json.loads(response.content)
    except (ValueError, UnicodeDecodeError):
        raise BackendError(f"{label}: {url} answered non-JSON: {short(response.content)}") from None
    if not isinstance(answer, dict):
        raise BackendError(f"{label}: {url} answered {short(answer)}, not an object")
    return answer


def error_detail(raw: bytes) -> str:
    """Return the server's error message, truncated: OpenAI's ``{"error": {"message": …}}``
    (with its type, parameter and code when given), ``{"error": "…"}``, ``{"detail": …}``
    (FastAPI), else the body as text."""
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return short(raw, DETAIL_CHARS) or "(empty body)"
    error = data.get("error", data) if isinstance(data, dict) else data
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        extra = [f"{k}={error[k]}" for k in ("type", "param", "code") if error.get(k)]
        text = error["message"] + (f" ({', '.join(extra)})" if extra else "")
        return short(text, DETAIL_CHARS)
    if isinstance(error, dict) and "detail" in error:
        error = error["detail"]
    return short(error if isinstance(error, str) else json.dumps(error), DETAIL_CHARS)


def short(value: Any, limit: int = 200) -> str:
    """Return ``value`` as text, cut to ``limit`` characters (an ellipsis marks the cut)."""
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
    return text if len(text) <= limit else text[:limit] + "…"
