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
