"""The provider page: publish after seeing the cost, add places, pause/resume/stop, and why an
operation is unavailable."""

import html

import pytest
from django.urls import reverse

from annotation.models import AuditLog
from recruitment.models import Hit, Publication
from tests.factories import CampaignFactory, ItemFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def ada(client, researcher):
    client.force_login(researcher)
    return client


@pytest.fixture
def study(researcher, settings):
    settings.PROLIFIC_API_TOKEN = ""
    campaign = CampaignFactory(
        owner=researcher, slug="study", reward="0.50", budget="50.00", items_per_assignment=2
    )
    ItemFactory.create_batch(4, campaign=campaign)
    return campaign


def post(ada, name, campaign, data, *args):
    response = ada.post(
        reverse(f"dashboard:{name}", args=[campaign.slug, *args]), data, follow=True
    )
    return response, [str(m) for m in response.context["messages"]]


def published(ada, campaign) -> Publication:
    post(ada, "provider_publish", campaign, {"provider": "local", "confirmed": "1"})
    return Publication.objects.get(campaign=campaign)


def test_publishing_shows_the_cost_first_then_publishes(ada, study) -> None:
    response, _ = post(ada, "provider_publish", study, {"provider": "local", "places": "6"})
    page = html.unescape(response.content.decode())
    assert 'id="publish-total">3.00 USD<' in page  # 6 places x 0.50, no local fee
    assert not Publication.objects.exists()
    response, shown = post(
        ada, "provider_publish", study, {"provider": "local", "places": "6", "confirmed": "1"}
    )
    publication = Publication.objects.get(campaign=study)
    assert publication.provider == "local" and publication.status == Publication.Status.LIVE
    assert any("Published on local: 6 place(s), at most 3.00 USD" in m for m in shown)
    assert AuditLog.objects.filter(action=AuditLog.Action.PUBLISH, actor="ada").exists()


@pytest.mark.parametrize(
    "data, message",
    [
        ({"provider": "ebay"}, "Unknown provider"),
        ({"provider": "local", "places": "-3"}, "Places must be a whole number"),
        ({"provider": "prolific"}, "Set PROLIFIC_API_TOKEN"),
    ],
)
def test_a_bad_publish_says_why_and_publishes_nothing(ada, study, data, message) -> None:
    _, shown = post(ada, "provider_publish", study, data | {"confirmed": "1"})
    assert any(message in m for m in shown), shown
    assert not Publication.objects.exists()


def test_places_are_added_and_a_bad_number_changes_nothing(ada, study) -> None:
    publication = published(ada, study)
    before = Hit.objects.get(publication=publication).max_assignments
    _, shown = post(ada, "provider_extend", study, {"extra": "2"}, publication.pk)
    assert Hit.objects.get(publication=publication).max_assignments == before + 2
    assert any("Added 2 place(s) per HIT for at most 1.00 USD" in m for m in shown), shown
    _, shown = post(ada, "provider_extend", study, {"extra": "two"}, publication.pk)
    assert any("whole number" in m for m in shown)
    assert Hit.objects.get(publication=publication).max_assignments == before + 2


def test_the_provider_side_pauses_resumes_and_stops_only_when_ticked(ada, study) -> None:
    publication = published(ada, study)
    post(ada, "provider_state", study, {"action": "pause"}, publication.pk)
    publication.refresh_from_db()
    assert publication.status == Publication.Status.PAUSED
    post(ada, "provider_state", study, {"action": "resume"}, publication.pk)
    _, shown = post(ada, "provider_state", study, {"action": "stop"}, publication.pk)
    publication.refresh_from_db()
    assert publication.status == Publication.Status.LIVE and any("Tick the box" in m for m in shown)
    post(ada, "provider_state", study, {"action": "stop", "confirmed": "on"}, publication.pk)
    publication.refresh_from_db()
    assert publication.status == Publication.Status.STOPPED
    page = ada.get(reverse("dashboard:provider", args=[study.slug])).content.decode()
    assert "Stopped for good" in page and 'data-action="pause"' not in page


def test_a_provider_this_site_cannot_reach_says_why_and_changes_nothing(ada, study) -> None:
    prolific = Publication.objects.create(
        campaign=study, provider="prolific", status=Publication.Status.LIVE, config={}
    )
    page = html.unescape(ada.get(reverse("dashboard:provider", args=[study.slug])).content.decode())
    assert f'data-why="{prolific.pk}">Set PROLIFIC_API_TOKEN' in page
    assert 'data-unavailable="prolific"' in page
    _, shown = post(ada, "provider_state", study, {"action": "pause"}, prolific.pk)
    assert any("Set PROLIFIC_API_TOKEN" in m for m in shown)
    prolific.refresh_from_db()
    assert prolific.status == Publication.Status.LIVE


def test_another_campaigns_publication_is_not_found(ada, study) -> None:
    other = CampaignFactory(slug="other")
    theirs = Publication.objects.create(campaign=other, provider="local", status="live", config={})
    _, shown = post(ada, "provider_state", study, {"action": "pause"}, theirs.pk)
    assert any("No such publication" in m for m in shown)
    theirs.refresh_from_db()
    assert theirs.status == "live"
