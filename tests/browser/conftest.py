"""Browser tests: Playwright driving Debian's Chromium against a live server."""

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"

# Playwright's sync API runs an event loop in this thread; the test's own ORM calls are
# ordinary synchronous ones, so Django's async-safety guard does not apply to them.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.fixture(scope="session")
def browser() -> Iterator:
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
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
