"""The wizard makes an arena from registered models: at least two, each a ModelEndpoint,
through the protocol's own parameters (docs/dashboard.md, "Launch wizard")."""

from __future__ import annotations

import html
import json

import pytest
from django.test import Client
from django.urls import reverse

from annotation.models import Campaign
from annotation.protocols import registry
from annotation.study_pages import STUDY_FIELDS
from chat.seats import chat_arrive
from dashboard import drafts
from modelhub.services import endpoint_register
from providers import Arrival

pytestmark = pytest.mark.django_db
ARENA_NEEDS = registry.get("arena").parameter_help["models"]


@pytest.fixture
def ada(client, researcher) -> Client:
    client.force_login(researcher)
    return client


@pytest.fixture
def bots(db) -> None:
    for name in ("bot-x", "bot-y"):
        endpoint_register(name=name, backend="generic_bot")


def url(name: str, campaign: Campaign | None = None) -> str:
    return reverse(f"dashboard:{name}", args=[campaign.slug] if campaign else [])


def messages_of(response) -> list[str]:
    return [str(m) for m in response.context["messages"]]


def text_of(response) -> str:
    return html.unescape(response.content.decode())


def start(ada: Client, models: list[str] | None):
    data = {"protocol": "arena", "slug": "duel", "name": "Duel"}
    if models is not None:
        data["parameters"] = json.dumps({"models": models})
    return ada.post(url("wizard"), data)


def settings_data(campaign: Campaign, **changes) -> dict:
    data = {name: getattr(campaign, name) for name in (*drafts.SETTINGS, *STUDY_FIELDS)}
    data["max_items_per_worker"] = data["max_items_per_worker"] or ""
    data["parameters"] = json.dumps(campaign.parameters)
    return data | changes


def test_the_wizard_makes_a_live_arena_of_two_registered_models(ada, bots) -> None:
    page = text_of(ada.get(url("wizard")))
    assert "<code>bot-x</code>, <code>bot-y</code>" in page  # the names to give
    refused = start(ada, None)
    assert refused.status_code == 400 and not Campaign.objects.exists()
    assert any("Name 2–64 different registered models" in m for m in messages_of(refused))

    assert start(ada, ["bot-x", "bot-y"]).url == url("wizard_settings", Campaign(slug="duel"))
    draft = Campaign.objects.get(slug="duel")
    assert (draft.protocol, draft.status, draft.owner.username) == ("arena", "draft", "ada")
    settings_page = text_of(ada.get(url("wizard_settings", draft)))
    assert 'Registered models, to name in "models":' in settings_page
    assert "<code>bot-x</code> (generic_bot)" in settings_page and ARENA_NEEDS in settings_page
    saved = ada.post(url("wizard_settings", draft), settings_data(draft, redundancy=1))
    assert saved.url == url("wizard_items", draft)
    assert "nothing to import" in text_of(ada.get(url("wizard_items", draft)))
    review = text_of(ada.get(url("wizard_review", draft)))
    assert '<td id="models">bot-x, bot-y</td>' in review and "Not registered" not in review

    launched = ada.post(url("wizard_launch", draft))
    assert launched.url == url("campaign", draft)
    draft.refresh_from_db()
    assert draft.status == Campaign.Status.LIVE
    assert draft.parameters["models"] == ["bot-x", "bot-y"]
    # A worker arriving gets a conversation with the two models, hidden as A and B.
    visit = chat_arrive(campaign=draft, arrival=Arrival(provider="local", worker_id="w1"))
    assert visit.kind == "chat"
    assert {visit.seat.endpoint, visit.seat.endpoint_b} == {"bot-x", "bot-y"}
    board = ada.get(reverse("dashboard:leaderboard", args=[draft.slug]))
    assert board.status_code == 200 and 'id="no-votes"' in board.content.decode()


def test_one_model_is_refused_saying_an_arena_needs_two(ada, bots) -> None:
    refused = start(ada, ["bot-x"])
    assert refused.status_code == 400 and not Campaign.objects.exists()
    assert any("Name 2–64 different registered models" in m for m in messages_of(refused))
    assert any("each conversation draws two of them" in m for m in messages_of(refused))


def test_an_unregistered_model_is_flagged_and_going_live_refused(ada, bots) -> None:
    start(ada, ["bot-x", "bot-q"])
    draft = Campaign.objects.get(slug="duel")
    saved = ada.post(url("wizard_settings", draft), settings_data(draft), follow=True)
    warned = " ".join(messages_of(saved))
    assert "Not registered: bot-q." in warned and "Going live needs them." in warned
    assert ARENA_NEEDS in warned and "manage.py register_model" in warned
    review = text_of(ada.get(url("wizard_review", draft)))
    assert "Not registered: bot-q. Going live is refused until they are." in review
    refused = ada.post(url("wizard_launch", draft), follow=True)
    said = " ".join(messages_of(refused))
    assert "Not registered: bot-q." in said and "(at least two)" in said
    draft.refresh_from_db()
    assert draft.status == Campaign.Status.DRAFT

    endpoint_register(name="bot-q", backend="generic_bot")
    assert ada.post(url("wizard_launch", draft)).url == url("campaign", draft)
    draft.refresh_from_db()
    assert draft.status == Campaign.Status.LIVE


def test_a_chat_without_models_goes_live_as_before(ada) -> None:
    ada.post(url("wizard"), {"protocol": "empathetic_chat", "slug": "ed"})
    campaign = Campaign.objects.get(slug="ed")
    assert drafts.models_unregistered(campaign) == []
    assert ada.post(url("wizard_launch", campaign)).url == url("campaign", campaign)
