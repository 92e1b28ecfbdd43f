"""Waiting for a condition in the page without ``page.wait_for_function``.

Playwright compiles ``wait_for_function``'s string with ``eval`` inside the page, which the
pages' Content-Security-Policy (``script-src 'self'``, no ``'unsafe-eval'``) refuses, as it
should. ``page.evaluate`` goes through the DevTools protocol, which the policy does not govern,
so the tests poll with it and the policy stays on in every browser test.
"""

from __future__ import annotations

import time
from typing import Any


def wait_js(page: Any, expression: str, timeout: float = 30_000) -> None:
    """Return once the JavaScript ``expression`` (or ``() => …`` function) is truthy in the
    page, across the page's own reloads and navigations (as ``wait_for_function`` waits);
    fail after ``timeout`` milliseconds, naming it."""
    from playwright.sync_api import Error

    deadline = time.monotonic() + timeout / 1000
    while True:
        try:
            if page.evaluate(expression):
                return
        except Error as exc:  # the page navigated while it was asked: ask the new one
            if "context was destroyed" not in str(exc) and "navigat" not in str(exc):
                raise
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} ms waiting for: {expression}")
        page.wait_for_timeout(50)
