"""Users and a campaign with a simulated crowd's judgments for the dashboard's tests."""

import pytest
from django.contrib.auth.models import User

from annotation.models import Campaign
from annotation.simulation import crowd_make, crowd_run
from tests.factories import CampaignFactory, ItemFactory


@pytest.fixture
def researcher(db) -> User:
    return User.objects.create_user("ada", password="pw-ada-123", is_staff=True)


@pytest.fixture
def other_researcher(db) -> User:
    return User.objects.create_user("bob", password="pw-bob-123", is_staff=True)


@pytest.fixture
def superuser(db) -> User:
    return User.objects.create_superuser("root", password="pw-root-123")


@pytest.fixture
def crowd_worker_user(db) -> User:
    """An account without staff status, as a crowd worker might have."""
    return User.objects.create_user("walt", password="pw-walt-123")


@pytest.fixture
def filled(researcher) -> Campaign:
    """Ada's live Likert campaign: 6 items, 3 workers each, judged by a simulated crowd."""
    campaign = CampaignFactory(owner=researcher, items_per_assignment=2, budget="50.00")
    ItemFactory.create_batch(6, campaign=campaign)
    crowd_run(campaign=campaign, workers=crowd_make(good=3, noisy=1, spammer=0), seed=3)
    return campaign
