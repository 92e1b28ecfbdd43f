"""Fixtures of the live chat tests."""

import pytest

from modelhub.services import endpoint_register


@pytest.fixture
def celery_eager():
    """Run queued tasks (bot turns) in this process even when a broker is configured."""
    from evalsite.celery import app

    before = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = before


@pytest.fixture
def generic_bot(transactional_db):
    """Meena's GenericBot, registered as ``generic-bot``."""
    return endpoint_register(name="generic-bot", backend="generic_bot")
