"""Browser tests: Playwright driving Debian's Chromium against a live server.

Every test here is marked ``browser`` (and ``axe`` where it runs the accessibility check), so
a machine without Chromium or axe-core skips it before it starts (tests/environment.py).
"""

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.environment import CHROMIUM

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"

# Playwright's sync API runs an event loop in this thread; the test's own ORM calls are
# ordinary synchronous ones, so Django's async-safety guard does not apply to them.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.fixture(scope="session")
def browser() -> Iterator:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=["--no-sandbox", "--disable-background-networking", "--disable-gpu"],
        )
        yield browser
        browser.close()


@pytest.fixture
def artifacts() -> Path:
    """The folder where browser tests save screenshots (kept by CI as test artefacts)."""
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS
