"""Run an action in several threads released at once, as concurrent requests would: each
thread on its own database connection (closed when it is done)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

from django.db import connection

T = TypeVar("T")


def at_once(action: Callable[[], T], n: int) -> list[T | Exception]:
    """Run ``action`` in ``n`` threads that start together; return what each returned, or the
    exception it raised, in the order they finished."""
    barrier = threading.Barrier(n)
    lock = threading.Lock()
    outcomes: list[T | Exception] = []

    def run() -> None:
        outcome: T | Exception
        try:
            barrier.wait()
            outcome = action()
        except Exception as exc:  # noqa: BLE001 - returned for the test to assert on
            outcome = exc
        finally:
            connection.close()
        with lock:
            outcomes.append(outcome)

    threads = [threading.Thread(target=run) for _ in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return outcomes
