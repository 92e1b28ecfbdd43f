"""Interactive SSA: who says the opener (bot | human) and the turn limit ending on a bot turn."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import async_to_sync

from annotation.admin.campaigns import CampaignForm
from annotation.models import Campaign, Dialogue, Item, Judgment, Utterance
from annotation.protocols import registry
from annotation.selectors import campaign_report
from annotation.services import campaign_create
from chat.snapshot import reply_fits
from evalsite.errors import InvalidParameters
from tests.chat.helpers import Client, ssa_campaign, ws_path

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("celery_eager")]
SSA = registry.get("ssa_interactive")


def _actionable(state: dict) -> bool:
    return state["stage"] != "chatting" or state["your_turn"] or state["needs_label"] is not None


async def _chat_to_the_limit(client: Client) -> dict:
    """Label every bot turn and write whenever allowed; return the final state."""
    n = 0
    state = await client.connect()
    while True:
        if not _actionable(state):
            state = await client.state(_actionable)
        if state["stage"] != "chatting":
            return state
        if state["needs_label"] is not None:
            await client.send(
                type="label", index=state["needs_label"], sensible="yes", specific="no"
            )
        else:
            n += 1
            ack = await client.say(f"Message {n}.")
            assert ack["type"] == "ack", ack
        state = await client.state(_actionable)


def test_by_default_the_bot_opens_with_hi_as_in_meenas_section_2_3():
    params = SSA.clean_parameters({"models": ["generic-bot"]})
    assert (params["opened_by"], params["opener"]) == ("bot", "Hi!")


@pytest.mark.parametrize("value", ["robot", "Human", "", None, 1, ["bot"]])
def test_a_bad_opener_role_is_refused_naming_it_and_no_campaign_is_created(value):
    with pytest.raises(InvalidParameters) as exc:
        campaign_create(
            slug="ssa-bad",
            name="x",
            protocol="ssa_interactive",
            parameters={"models": ["generic-bot"], "opened_by": value},
        )
    assert set(exc.value.fields) == {"opened_by"}
    assert "'bot'" in exc.value.fields["opened_by"] and "'human'" in exc.value.fields["opened_by"]
    assert not Campaign.objects.filter(slug="ssa-bad").exists()


def test_a_bot_opened_chat_needs_room_for_one_labeled_bot_turn():
    with pytest.raises(InvalidParameters) as exc:
        SSA.clean_parameters({"models": ["m"], "min_turns": 2, "max_turns": 2})
    assert set(exc.value.fields) == {"max_turns"}
    params = SSA.clean_parameters(
        {"models": ["m"], "opened_by": "human", "min_turns": 2, "max_turns": 2}
    )
    assert params["max_turns"] == 2


def test_the_admin_refuses_a_bad_opener_role_and_leaves_the_campaign_as_it_was(generic_bot):
    campaign = ssa_campaign(slug="ssa-admin")
    fields = {
        "slug": campaign.slug,
        "name": campaign.name,
        "protocol": "ssa_interactive",
        "status": campaign.status,
        "redundancy": 1,
        "items_per_assignment": 1,
        "lease_seconds": 60,
        "reward": "0",
        "budget": "0",
        "gold_rate": "0",
        "gold_min_accuracy": "0.7",
        "gold_min_answered": "3",
        "min_seconds_per_item": "0",
        "parameters": json.dumps({**campaign.parameters, "opened_by": "robot"}),
    }
    form = CampaignForm(instance=campaign, data=fields)
    assert not form.is_valid()
    assert "opened_by" in " ".join(form.errors["parameters"])
    campaign.refresh_from_db()
    assert campaign.parameters["opened_by"] == "bot"


def test_the_worker_may_write_only_when_the_bots_reply_still_fits():
    params = {"max_turns": 28}
    assert reply_fits(26, params) and not reply_fits(27, params) and not reply_fits(28, params)


def test_when_the_human_opens_the_worker_says_hi_and_the_bot_answers_at_once(generic_bot):
    campaign = ssa_campaign(slug="ssa-human", opened_by="human")
    path = ws_path(campaign, "hana")

    async def scenario():
        client = Client(path)
        state = await client.connect()  # the bot's reply was stored as the seat was made
        assert [(u["role"], u["text"], u["mine"]) for u in state["utterances"]] == [
            ("user", "Hi!", True),
            ("bot", "ok", False),
        ]
        assert state["needs_label"] == 1 and state["utterances"][1]["labelable"]
        assert not state["utterances"][0]["labelable"] and not state["your_turn"]
        await client.close()

    async_to_sync(scenario)()
    dialogue = Dialogue.objects.get(campaign=campaign)
    assert dialogue.metadata["opened_by"] == "human"
    opener = Utterance.objects.get(dialogue=dialogue, index=0)
    assert opener.speaker == "user" and opener.signals == {"opener": True}
    item = Item.objects.get(campaign=campaign, key=f"{dialogue.key}/1")
    assert item.payload["context"] == ["Hi!"] and item.payload["response"] == "ok"


@pytest.mark.parametrize(
    ("opened_by", "max_turns", "turns"),
    [("human", 6, 6), ("human", 7, 6), ("bot", 6, 5), ("bot", 7, 7)],
)
def test_a_chat_at_the_turn_limit_ends_on_a_labeled_bot_turn(
    generic_bot, opened_by, max_turns, turns
):
    campaign = ssa_campaign(
        slug=f"ssa-{opened_by}-{max_turns}", opened_by=opened_by, min_turns=4, max_turns=max_turns
    )
    path = ws_path(campaign, "lim")

    async def scenario():
        client = Client(path)
        state = await _chat_to_the_limit(client)
        await client.close()
        return state

    final = async_to_sync(scenario)()
    assert final["stage"] == "done" and not final["can_end"] and not final["your_turn"]
    dialogue = Dialogue.objects.get(campaign=campaign)
    speakers = list(dialogue.utterances.order_by("index").values_list("speaker", flat=True))
    assert len(speakers) == turns and speakers[-1] == "bot" and dialogue.status == "complete"
    assert speakers[0] == ("user" if opened_by == "human" else "bot")
    labeled = [u for u in range(1, turns) if speakers[u] == "bot"]
    assert Judgment.objects.filter(item__campaign=campaign, question="sensible").count() == len(
        labeled
    )


def test_the_report_says_which_opening_it_used_and_notes_a_mix(generic_bot):
    campaign = ssa_campaign(slug="ssa-report", opened_by="human", min_turns=2, max_turns=3)
    for worker in ("w1", "w2"):
        ws_path(campaign, worker)
    assert any("opened by the worker" in n for n in campaign_report(campaign).notes)
    assert not any("mix both openings" in n for n in campaign_report(campaign).notes)
    campaign.parameters = {**campaign.parameters, "opened_by": "bot"}
    campaign.save(update_fields=["parameters"])
    ws_path(campaign, "w3")
    notes = campaign_report(campaign).notes
    assert any("opened by the bot (Meena §2.3)" in n for n in notes)
    mix = next(n for n in notes if "mix both openings" in n)
    assert "1 opened by the bot" in mix and "2 opened by the worker" in mix
