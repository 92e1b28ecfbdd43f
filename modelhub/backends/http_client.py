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

Streams (``post_sse``, server-sent events): the same client, semaphore and retries, the slot
held until the stream ends or its reader closes it. A failure is retried only while the reader
has been given nothing (before the first event that carries content); after that it is a
``TransientBackendError`` at once, and the reader drops the pieces it got.
"""

from __future__ import annotations

import atexit
import contextlib
import datetime
import email.utils
import json
import os
import random
import re
import threading
import time
from collections.abc import Callable, Generator, Iterator, Mapping
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
    failures = 0
    while True:
        try:
            with semaphore:
                return _post_once(url, body, headers, timeout_s, label)
        except _Retryable as exc:
            failures += 1
            _wait(_retry_wait(exc, failures, retry, started, url, label))


def _retry_wait(
    exc: _Retryable, failures: int, retry: RetryPolicy, started: float, url: str, label: str
) -> float:
    """Return how long to wait before the next try, or raise ``TransientBackendError`` when
    the retries are spent or the wait would pass the time budget."""
    elapsed = time.monotonic() - started
    if failures > retry.max_retries:
        raise TransientBackendError(
            f"{label}: {url} failed {failures} times in {elapsed:.1f} s; last error: {exc}"
        ) from None
    wait = backoff_s(failures, retry.backoff_s)
    if exc.retry_after is not None:
        # A little jitter on top, so the clients told the same date come back apart.
        wait = max(wait, exc.retry_after * random.uniform(1.0, 1.1))
    if elapsed + wait > retry.budget_s:
        raise TransientBackendError(
            f"{label}: {url} failed {failures} times in {elapsed:.1f} s; the next try would be "
            f"in {wait:.1f} s, past retry_budget_s={retry.budget_s:g}; last error: {exc}"
        ) from None
    return wait


def _post_once(
    url: str, body: Mapping[str, Any], headers: Mapping[str, str], timeout_s: float, label: str
) -> dict[str, Any]:
    try:
        response = pooled_client(url).post(url, json=body, headers=headers, timeout=timeout_s)
    except httpx.TimeoutException:
        raise _Retryable(f"no answer within timeout_s={timeout_s:g}") from None
    except httpx.TransportError as exc:
        raise _Retryable(f"cannot reach the server: {type(exc).__name__}: {exc}") from None
    _status_check(response.status_code, response.headers, response.content, url, label)
    try:
        answer = json.loads(response.content)
    except (ValueError, UnicodeDecodeError):
        raise BackendError(f"{label}: {url} answered non-JSON: {short(response.content)}") from None
    if not isinstance(answer, dict):
        raise BackendError(f"{label}: {url} answered {short(answer)}, not an object")
    return answer


def _status_check(
    status: int, headers: httpx.Headers, content: bytes, url: str, label: str
) -> None:
    """Raise ``_Retryable`` for a status worth retrying and ``BackendError`` for another
    error status, naming the server's message."""
    if status in RETRIED_STATUS:
        raise _Retryable(
            f"HTTP {status}: {error_detail(content)}", retry_after_s(headers.get("Retry-After"))
        )
    if status >= 400:
        raise BackendError(f"{label}: {url} answered HTTP {status}: {error_detail(content)}")


def post_sse(
    url: str,
    body: Mapping[str, Any],
    *,
    headers: Mapping[str, str],
    timeout_s: float,
    semaphore: threading.BoundedSemaphore,
    retry: RetryPolicy,
    label: str,
    carries_content: Callable[[Mapping[str, Any]], bool] = lambda event: True,
) -> Generator[dict[str, Any], None, None]:
    """POST ``body`` (a request with ``stream: true``) and yield the JSON object of each
    server-sent event as it arrives, until ``data: [DONE]`` or the end of the body.

    The stream holds a slot of ``semaphore`` from the request until it ends, breaks or the
    caller closes the generator; closing it (stopping early: use ``contextlib.closing``) closes
    the response too, so the server sees the disconnect and stops generating. Events before
    the first that ``carries_content`` are held back, so that failures until then (connection
    errors, retried statuses, a stream that breaks or stalls) are retried like ``post_json``'s:
    the caller has seen nothing yet. After it, a broken stream or no event within ``timeout_s``
    raises ``TransientBackendError`` at once (the caller drops what it got). Malformed events
    raise ``BackendError``, and so does an error event (``TransientBackendError`` when its code
    is a retried status).
    """
    started = time.monotonic()
    failures = 0
    while True:
        committed = False
        try:
            with (
                semaphore,
                contextlib.closing(_stream_open(url, body, headers, timeout_s, label)) as response,
                contextlib.closing(_sse_events(response, url, label)) as events,
            ):
                held = _events_until_content(events, carries_content, timeout_s)
                committed = True
                yield from held
                while (event := _event_next(events, timeout_s)) is not None:
                    yield event
                return
        except _Retryable as exc:
            if committed:
                raise TransientBackendError(
                    f"{label}: {url}: the stream broke after it began: {exc}"
                ) from None
            failures += 1
            _wait(_retry_wait(exc, failures, retry, started, url, label))


def _stream_open(
    url: str, body: Mapping[str, Any], headers: Mapping[str, str], timeout_s: float, label: str
) -> httpx.Response:
    """Send the request and return the response once its headers are in, its body unread;
    raise as ``_post_once`` does for statuses, and ``BackendError`` for a JSON answer (a
    server that ignored ``stream: true``)."""
    client = pooled_client(url)
    request = client.build_request("POST", url, json=body, headers=headers, timeout=timeout_s)
    try:
        response = client.send(request, stream=True)
    except httpx.TimeoutException:
        raise _Retryable(f"no answer within timeout_s={timeout_s:g}") from None
    except httpx.TransportError as exc:
        raise _Retryable(f"cannot reach the server: {type(exc).__name__}: {exc}") from None
    try:
        if response.status_code >= 400 or _is_json(response):
            content = _read_or_nothing(response)
            _status_check(response.status_code, response.headers, content, url, label)
            raise BackendError(
                f"{label}: {url} answered JSON, not a stream of server-sent events (does it "
                f"take stream: true?): {short(content)}"
            )
    except BaseException:
        response.close()
        raise
    return response


def _is_json(response: httpx.Response) -> bool:
    return response.headers.get("Content-Type", "").startswith("application/json")


def _read_or_nothing(response: httpx.Response) -> bytes:
    # An error's body only names the error: losing it must not hide the status.
    try:
        return response.read()
    except httpx.TransportError:
        return b""


def _events_until_content(
    events: Iterator[dict[str, Any]],
    carries_content: Callable[[Mapping[str, Any]], bool],
    timeout_s: float,
) -> list[dict[str, Any]]:
    """Read events up to and including the first that carries content (or to the end)."""
    held: list[dict[str, Any]] = []
    while (event := _event_next(events, timeout_s)) is not None:
        held.append(event)
        if carries_content(event):
            break
    if not held:
        raise _Retryable("the stream ended before its first event")
    return held


def _event_next(events: Iterator[dict[str, Any]], timeout_s: float) -> dict[str, Any] | None:
    """Return the next event, or None at the end; a transport failure is ``_Retryable`` (the
    caller decides whether it may still retry)."""
    try:
        return next(events, None)
    except httpx.TimeoutException:
        raise _Retryable(f"no event within timeout_s={timeout_s:g}") from None
    except httpx.TransportError as exc:
        raise _Retryable(f"the stream broke: {type(exc).__name__}: {exc}") from None


def _sse_events(
    response: httpx.Response, url: str, label: str
) -> Generator[dict[str, Any], None, None]:
    """Yield the JSON object of each server-sent event (its ``data`` lines joined) until
    ``data: [DONE]``, then read the body to its end so the connection can be kept alive.

    Comments and the ``event``, ``id`` and ``retry`` fields are ignored; any other line is
    malformed. An event not dispatched by a blank line when the body ends is dropped (the
    SSE rule): a stream cut in the middle of an event is broken, not malformed.
    """
    data: list[str] = []
    lines = response.iter_lines()
    for line in lines:
        if line:
            field, _, value = line.partition(":")
            if field == "data":
                data.append(value[1:] if value.startswith(" ") else value)
            elif field not in ("", "event", "id", "retry"):
                raise BackendError(f"{label}: {url} sent a malformed event line: {short(line)}")
            continue
        payload, data = "\n".join(data), []
        if payload == "[DONE]":
            with contextlib.suppress(httpx.TransportError):
                for _ in lines:
                    pass
            return
        if payload:
            yield _sse_json(payload, url, label)


def _sse_json(payload: str, url: str, label: str) -> dict[str, Any]:
    """Return an event's JSON object; raise for one that is not, or that is an error."""
    try:
        event = json.loads(payload)
    except ValueError:
        raise BackendError(
            f"{label}: {url} sent an event that is not JSON: {short(payload)}"
        ) from None
    if not isinstance(event, dict):
        raise BackendError(f"{label}: {url} sent an event that is not an object: {short(payload)}")
    error = event.get("error")
    if error is None:
        return event
    # vLLM and OpenAI report a failure during generation as an event: {"error": {...}}.
    detail = error_detail(payload.encode())
    fields = error if isinstance(error, dict) else {}
    if fields.get("code") in RETRIED_STATUS or fields.get("type") == "server_error":
        raise _Retryable(f"error event: {detail}")
    raise BackendError(f"{label}: {url} sent an error event: {detail}")


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
