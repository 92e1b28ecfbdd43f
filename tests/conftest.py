"""Fixtures shared by the whole suite."""

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from annotation.models import Campaign
from evalsite.celery import app
from tests.factories import CampaignFactory, ItemFactory


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the browser tests last, after pytest-django's own ordering.

    Playwright's sync API keeps an event loop running in the main thread for as long as the
    session's browser is open (tests/browser/conftest.py), and asgiref refuses AsyncToSync in
    a thread with a running loop: a chat test that came after a browser test failed with
    "You cannot use AsyncToSync in the same thread as an async event loop". A stable sort
    keeps every other test's order.
    """
    items.sort(key=lambda item: "/tests/browser/" in str(item.path).replace("\\", "/"))


@pytest.fixture(autouse=True)
def _fresh_local_cache():
    """Forget the in-process cache after each test (rate-limit and arrival counters), as a
    fresh process would: on SQLite a rolled-back test's campaign ids come back. A Redis cache
    (REDIS_URL) is shared with the channel layer and is left alone: within a run PostgreSQL
    never reuses an id, and each run has its own key prefix (tests/environment.py). The
    process's copies of campaigns (annotation.campaign_cache) go too: a rolled-back test's
    campaign left no write behind that would have given the campaigns a new version."""
    yield
    from django.conf import settings
    from django.core.cache import cache

    from annotation.campaign_cache import campaigns_forget

    campaigns_forget()
    if settings.CACHES["default"]["BACKEND"].endswith("LocMemCache"):
        cache.clear()


@pytest.fixture(autouse=True)
def _fresh_channel_layer():
    """Give the next test a new channel layer, as a fresh process would have.

    Each test's ``async_to_sync`` runs its own event loop, and channels-redis keeps state bound
    to the loop that first received (its receive lock and count). A consumer still receiving
    when a test's loop ended (a socket the server had closed and the test never disconnected)
    left that lock held on a dead loop, and every later socket of the run died at its first
    receive ("Lock is bound to a different event loop"): five chat tests failed in CI. In a
    server there is one loop per process, so this is the tests' own hazard.
    """
    yield
    from channels.layers import channel_layers

    channel_layers.backends.clear()


@contextmanager
def tasks_eager() -> Iterator[None]:
    """Run Celery tasks in this process while the block runs, as without a broker, even where
    one is configured (CI's PostgreSQL run)."""
    before = app.conf.task_always_eager
    app.conf.task_always_eager = True
    try:
        yield
    finally:
        app.conf.task_always_eager = before


@pytest.fixture
def celery_eager() -> Iterator[None]:
    """Run Celery tasks in this process (``tasks_eager``): for tests of what a task does, not
    of its delivery."""
    with tasks_eager():
        yield


@pytest.fixture
def campaign(db) -> Campaign:
    """A live Likert campaign with 6 items, redundancy 3, 5 items per assignment."""
    campaign = CampaignFactory()
    ItemFactory.create_batch(6, campaign=campaign)
    return campaign


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix, tmp_path_factory):
    """With SQLite, keep the test database in a file rather than in memory, so that a real
    ASGI server's threads (tests/browser/asgi_server.py) share it like PostgreSQL; with
    PostgreSQL's pool, let the concurrency tests have a connection per thread."""
    from django.conf import settings

    database = settings.DATABASES["default"]
    if database["ENGINE"] == "django.db.backends.sqlite3":
        folder = tmp_path_factory.mktemp("database")
        database.setdefault("TEST", {})["NAME"] = str(folder / "test.sqlite3")
    pool = database.get("OPTIONS", {}).get("pool")
    if isinstance(pool, dict):
        # The concurrency tests run 50 threads with a session each, as 50 requests would
        # from several web processes; a production-sized pool would queue them.
        pool["max_size"] = max(pool["max_size"], 64)
