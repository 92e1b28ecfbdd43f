"""A pytest plugin loaded before Django (``-p tests.environment`` in pyproject.toml) that fits
the suite to the machine it runs on.

With no broker configured, the suite runs Celery tasks inside the test process, which the
settings allow only when ``EVALSITE_TASKS_INLINE`` asks for it (as ``manage.py`` does for
commands); and the translations are compiled if they are not yet.

A test that needs more than Python names it with a marker (declared in pyproject.toml):
``postgres``, ``broker``, ``redis``, ``browser`` or ``axe``. Whether the machine has it is
decided here, once, when the tests are collected: a marked test is skipped with the reason
and what to set or install, never part-way through its work.
"""

import importlib.util
import os
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from evalsite.env import tasks_inline_unless_brokered
from evalsite.translations import catalogs_compile

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# Installed from the npm registry by `make install-dev` (the tests inject this file, never a CDN's).
AXE_JS = ROOT / ".cache" / "axe" / "node_modules" / "axe-core" / "axe.min.js"

tasks_inline_unless_brokered()
# The translations' .mo files are generated (not committed): write any missing or outdated
# one before Django reads its catalogs, so that `pytest` alone works on a fresh clone.
catalogs_compile()
# Each run's cache keys apart from earlier runs' in a shared Redis: a fresh test database
# gives its campaigns the ids an earlier run used, and their counters (rate limits, open-link
# arrivals per hour) must not carry over.
os.environ["EVALSITE_CACHE_PREFIX"] = f"evalsite-test-{uuid.uuid4().hex[:12]}"


def _postgres() -> bool:
    return connection.vendor == "postgresql"


def _broker() -> bool:
    # Without CELERY_BROKER_URL the suite runs tasks inline (above); a test waiting for a
    # real worker's result also needs the result backend.
    return not settings.CELERY_TASK_ALWAYS_EAGER and bool(settings.CELERY_RESULT_BACKEND)


def _redis() -> bool:
    return bool(settings.REDIS_URL)


def _browser() -> bool:
    return Path(CHROMIUM).exists() and importlib.util.find_spec("playwright") is not None


def _axe() -> bool:
    return AXE_JS.exists()


def _libreoffice() -> bool:
    return shutil.which("soffice") is not None


# marker: (whether this machine has it, what the skip says the test needs)
NEEDS: dict[str, tuple[Callable[[], bool], str]] = {
    "postgres": (_postgres, "PostgreSQL: set DATABASE_URL"),
    "broker": (_broker, "a Celery broker: set CELERY_BROKER_URL and CELERY_RESULT_BACKEND"),
    "redis": (_redis, "Redis: set REDIS_URL"),
    "browser": (_browser, "Chromium and Playwright: apt-get install chromium"),
    "axe": (_axe, "axe-core in .cache/axe: make install-dev (with npm)"),
    "libreoffice": (_libreoffice, "LibreOffice: apt-get install libreoffice-calc-nogui"),
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test whose markers name what this machine lacks to be skipped, saying what
    it needs: it is skipped before its fixtures run, and the summary names the test."""
    lacking = {marker: need for marker, (present, need) in NEEDS.items() if not present()}
    for item in items:
        needs = [need for marker, need in lacking.items() if item.get_closest_marker(marker)]
        if needs:
            item.add_marker(pytest.mark.skip(reason="needs " + "; ".join(needs)))
