"""Fixtures shared by the whole suite."""

import pytest
from django.db import connection

from annotation.models import Campaign
from tests.factories import CampaignFactory, ItemFactory


@pytest.fixture
def campaign(db) -> Campaign:
    """A live Likert campaign with 6 items, redundancy 3, 5 items per assignment."""
    campaign = CampaignFactory()
    ItemFactory.create_batch(6, campaign=campaign)
    return campaign


def postgres_only() -> pytest.MarkDecorator:
    """Skip unless the test database is PostgreSQL (DATABASE_URL set)."""
    return pytest.mark.skipif(
        connection.vendor != "postgresql", reason="needs PostgreSQL: set DATABASE_URL"
    )


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
