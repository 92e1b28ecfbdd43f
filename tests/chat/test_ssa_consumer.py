"""Interactive SSA over real websocket frames: bot turns, labels, deadlines, failures."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync

from annotation.models import Dialogue, Item, Judgment, Utterance
from annotation.selectors import campaign_report
from chat.models import ChatSeat
from modelhub.services import endpoint_register
from tests.chat.helpers import Client, ssa_campaign, ws_path

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("celery_eager")]


async def _turn(client: Client, text: str) -> dict:
    """Send a message; return the state in which the bot's reply has arrived."""
    ack = await client.say(text)
    assert ack["type"] == "ack", ack
    return await client.state(lambda s: s["needs_label"] is not None or s["failed"])


def test_a_worker_chats_14_turns_with_generic_bot_and_labels_every_bot_turn(generic_bot):
    campaign = ssa_campaign()
    path = ws_path(campaign, "ann")

    async def scenario():
        client = Client(path)
        state = await client.connect()
        assert [u["text"] for u in state["utterances"]] == ["Hi!"]
        assert state["your_turn"] and not state["can_end"]
        n = 0
        while True:
            n += 1
            question = n % 2 == 0
            state = await _turn(client, f"Message {n}{'?' if question else '.'}")
            bot = state["utterances"][-1]
            assert bot["role"] == "bot" and state["needs_label"] == bot["index"]
            assert bot["text"] == ("I don't know." if question else "ok")
            await client.send(type="label", index=bot["index"], sensible="yes", specific="no")
            state = await client.state(lambda s: s["needs_label"] is None)
            if state["can_end"]:
                break
        assert state["turns"] >= 14
        await client.send(type="end")
        await client.state(lambda s: s["stage"] == "done")
        await client.close()

    async_to_sync(scenario)()
    dialogue = Dialogue.objects.get(campaign=campaign)
    turns = list(Utterance.objects.filter(dialogue=dialogue).order_by("index"))
    assert len(turns) == 15 and dialogue.status == "complete"
    assert [u.speaker for u in turns] == ["bot", "user"] * 7 + ["bot"]
    bot_turns = [u for u in turns if u.speaker == "bot" and u.index > 0]
    assert len(bot_turns) == 7
    for u in bot_turns:
        item = Item.objects.get(campaign=campaign, key=f"{dialogue.key}/{u.index}")
        assert item.payload["response"] == u.text and item.payload["model"] == "generic-bot"
        values = dict(Judgment.objects.filter(item=item).values_list("question", "value"))
        assert values == {"sensible": "yes", "specific": "no"}
    report = campaign_report(campaign)
    scores = report.tables["scores"].set_index("model")
    assert scores.loc["generic-bot", "responses"] == 7
    assert scores.loc["generic-bot", "sensibleness"] == 100
    assert scores.loc["generic-bot", "specificity"] == 0
    assert report.tables["conversations"].set_index("model").loc["generic-bot", "complete"] == 1
    assert campaign.assignments.get().status == "submitted"


def test_the_worker_cannot_write_before_labeling_nor_label_twice_differently(generic_bot):
    campaign = ssa_campaign(slug="ssa-order")
    path = ws_path(campaign, "ben")

    async def scenario():
        client = Client(path)
        await client.connect()
        state = await _turn(client, "Do you like tea?")
        index = state["needs_label"]
        refused = await client.say("Another message")
        assert refused["type"] == "error" and refused["code"] == "out_of_turn"
        await client.send(type="label", index=index, sensible="no", specific="yes")
        error = await client.until(lambda f: f["type"] == "error")
        assert error["code"] == "invalid"  # not sensible ⇒ not specific
        await client.send(type="label", index=index, sensible="no")
        assert (await client.until(lambda f: f["type"] in ("ack", "error")))["type"] == "ack"
        await client.send(type="label", index=index, sensible="yes", specific="yes")
        assert (await client.until(lambda f: f["type"] == "error"))["code"] == "conflict"
        await client.send(type="label", index=0, sensible="yes", specific="yes")  # the opener
        assert (await client.until(lambda f: f["type"] == "error"))["code"] == "invalid"
        await client.send(type="end")
        assert (await client.until(lambda f: f["type"] == "error"))["code"] == "out_of_turn"
        await client.close()

    async_to_sync(scenario)()
    item = Item.objects.get(campaign=campaign)
    assert dict(Judgment.objects.filter(item=item).values_list("question", "value")) == {
        "sensible": "no",
        "specific": "no",
    }
    assert Utterance.objects.filter(dialogue__campaign=campaign).count() == 3


def test_a_failing_model_flags_the_chat_and_the_worker_may_end_it(transactional_db):
    endpoint_register(name="broken", backend="generic_bot")
    campaign = ssa_campaign(slug="ssa-broken", models=["broken"])
    path = ws_path(campaign, "cat")
    # The model's configuration is broken after registration (e.g. its server went away).
    from modelhub.models import ModelEndpoint

    ModelEndpoint.objects.filter(name="broken").update(config={"delay_s": -1})

    async def scenario():
        client = Client(path)
        await client.connect()
        ack = await client.say("Hello there.")
        assert ack["type"] == "ack"
        state = await client.state(lambda s: s["failed"])
        assert state["can_end"] and not state["your_turn"] and not state["pending"]
        await client.send(type="end")
        await client.state(lambda s: s["stage"] == "failed")
        await client.close()

    async_to_sync(scenario)()
    dialogue = Dialogue.objects.get(campaign=campaign)
    assert dialogue.flagged and "bot_failed" in dialogue.flags and dialogue.status == "partial"
    assert ChatSeat.objects.get().stage == "failed"
    assert campaign.assignments.get().status == "submitted"  # paid by policy


def test_a_bot_turn_past_its_deadline_is_dropped_and_can_be_asked_again(generic_bot):
    campaign = ssa_campaign(slug="ssa-slow", bot_deadline_s=1)
    path = ws_path(campaign, "dan")
    from unittest import mock

    from chat.bot import bot_turn_run

    queued = []  # the tasks asked for; none runs until the test runs it

    async def scenario():
        client = Client(path)
        await client.connect()
        with mock.patch("chat.tasks.chat_bot_turn.delay", side_effect=lambda *a: queued.append(a)):
            assert (await client.say("Are you there?"))["type"] == "ack"
            await client.state(lambda s: s["pending"])
            state = await client.state(lambda s: s["failed"], timeout=5)
            assert not state["pending"]
            await client.send(type="retry")
            await client.state(lambda s: s["pending"])
        await client.close()

    async_to_sync(scenario)()
    dialogue = Dialogue.objects.get(campaign=campaign)
    assert "bot_timeout" in dialogue.flags
    (first, retried) = queued
    assert first[:2] == retried[:2] == (dialogue.pk, 2) and first[2] != retried[2]
    # The late reply to the request given up is dropped; the one asked again is stored once.
    assert bot_turn_run(dialogue_id=dialogue.pk, index=2, attempt=first[2])["stored"] is False
    assert bot_turn_run(dialogue_id=dialogue.pk, index=2, attempt=retried[2])["stored"] is True
    assert bot_turn_run(dialogue_id=dialogue.pk, index=2, attempt=retried[2])["stored"] is False
    texts = list(dialogue.utterances.order_by("index").values_list("text", flat=True))
    assert texts == ["Hi!", "Are you there?", "I don't know."]
