"""Micro-batching for hf_local: single-example requests from many threads, one batched
``generate``.

A Celery inference worker run with ``--pool threads --concurrency 32``, or the chat consumers
of an interactive campaign, ask for one bot turn at a time from many threads. Run one by one,
they queue behind each other and the GPU computes one row where it could compute thirty-two in
about the same time. Here the requests for the same loaded model and the same decoding (a
lane) wait for company until none has come for a few milliseconds (``batch_wait_ms``), up to
``batch_size`` of them, then one worker thread per lane runs them as one batch (requests that
arrive meanwhile form the next); each caller gets its own row (and, when it streams, its own
tokens as they come) through its own queue.

Safety: the worker holds no lock while generating; a batch that fails sends the error to each
of its callers; a caller that goes away (a closed stream) is skipped if its batch has not
started and otherwise ignored (queues are unbounded, the worker never waits on a caller); a
worker that dies is noticed by its callers, which raise instead of waiting forever.
"""

from __future__ import annotations

import copy
import queue
import threading
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

from modelhub.backends.base import BackendError
from modelhub.backends.hf_generate import Listener

BatchRun = Callable[[list[list[int]], list[Listener | None]], list[list[int]]]
IDLE_S = 60.0  # a lane's worker thread ends after this long without requests
POLL_S = 1.0  # how often a waiting caller checks that its worker is still alive
BURST_WAITS = 4  # a batch waits for stragglers at most this many batch_wait_ms


@dataclass(eq=False)
class Request:
    """One prompt waiting for its row. Messages in ``inbox``: ("token", id) while it streams,
    then ("row", new token ids) or ("error", exception)."""

    prompt: list[int]
    stream: bool = False
    inbox: queue.SimpleQueue[tuple[str, Any]] = field(default_factory=queue.SimpleQueue)
    submitted: float = field(default_factory=time.monotonic)
    abandoned: bool = False  # the caller went away: skip it unless its batch has started

    def listener(self) -> Listener | None:
        if not self.stream:
            return None
        put = self.inbox.put
        return lambda token: put(("token", token))

    def next_message(self, alive: Callable[[], bool]) -> tuple[str, Any]:
        """Return the next ("token", id) or ("row", ids); raise the batch's error, or
        BackendError when the thread that was to answer has died."""
        while True:
            try:
                kind, value = self.inbox.get(timeout=POLL_S)
            except queue.Empty:
                if alive():
                    continue
                try:
                    kind, value = self.inbox.get_nowait()
                except queue.Empty:
                    raise BackendError("hf_local: the generation thread died unanswered") from None
            if kind == "error":
                mine = _own_copy(value)
                if mine is value:
                    raise value
                raise mine from value
            return kind, value


def _own_copy(error: BaseException) -> BaseException:
    """Return a copy of a batch's error for one caller (raising one object from several
    threads would interleave their tracebacks)."""
    try:
        return copy.copy(error)
    except Exception:  # noqa: BLE001 - an exception that cannot be copied is raised as is
        return error


def batch_run(run: BatchRun, batch: Sequence[Request]) -> None:
    """Run ``batch`` and send each request its row, or the error to every one of them."""
    try:
        rows = run([r.prompt for r in batch], [r.listener() for r in batch])
    except BaseException as exc:
        for request in batch:
            request.inbox.put(("error", exc))
        if not isinstance(exc, Exception):
            raise
        return
    for request, row in zip(batch, rows, strict=True):
        request.inbox.put(("row", row))


def run_alone(run: BatchRun, request: Request) -> Callable[[], bool]:
    """Run one request in a thread of its own (a stream without micro-batching); return
    whether that thread is still alive."""
    thread = threading.Thread(target=batch_run, args=(run, [request]), daemon=True)
    thread.start()
    return thread.is_alive


class Lane:
    """Requests for one model and one decoding, run in batches by one worker thread."""

    def __init__(self, run: BatchRun, batch_size: int, wait_s: float) -> None:
        self.run, self.batch_size, self.wait_s = run, batch_size, wait_s
        self.pending: list[Request] = []
        self.ready = threading.Condition()
        self.thread: threading.Thread | None = None

    def submit(self, request: Request) -> None:
        """Queue ``request`` (its answer comes through its inbox); start the worker if idle."""
        with self.ready:
            self.pending.append(request)
            self.ready.notify()
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(target=self._work, daemon=True, name="hf-batch")
                self.thread.start()

    def alive(self) -> bool:
        thread = self.thread
        return thread is not None and thread.is_alive()

    def _work(self) -> None:
        while (batch := self._collect()) is not None:
            if batch:
                batch_run(self.run, batch)

    def _collect(self) -> list[Request] | None:
        """Wait for the first request, then for more until none has come for ``wait_s``
        (a burst of callers keeps the batch open; at most ``BURST_WAITS`` × ``wait_s`` after
        the first); return up to ``batch_size`` of them (None: idle, the thread ends)."""
        with self.ready:
            while not self.pending:
                if not self.ready.wait(IDLE_S) and not self.pending:
                    self.thread = None
                    return None
            latest = self.pending[0].submitted + BURST_WAITS * self.wait_s
            while len(self.pending) < self.batch_size:
                deadline = min(latest, self.pending[-1].submitted + self.wait_s)
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self.ready.wait(remaining)
            batch = self.pending[: self.batch_size]
            del self.pending[: self.batch_size]
        return [r for r in batch if not r.abandoned]


_LANES: dict[Hashable, Lane] = {}
_LANES_LOCK = threading.Lock()


def lane_get(key: Hashable, run: BatchRun, batch_size: int, wait_s: float) -> Lane:
    """Return the lane of ``key`` (model, decoding, settings), made on first use with ``run``:
    whoever makes it, requests with the same key would run the same way."""
    with _LANES_LOCK:
        lane = _LANES.get(key)
        if lane is None:
            lane = _LANES[key] = Lane(run, batch_size, wait_s)
        return lane
