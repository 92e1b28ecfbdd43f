"""A bot turn's state travels with its channel-layer event (the task read it after its commit),
and the consumer sends it without a read of its own only when it answers the awaited turn."""

from __future__ import annotations

from unittest import mock

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.layers import get_channel_layer

from annotation import consumers
from annotation.chat.bot import bot_turn_run
from annotation.chat.notify import changed_event, seat_group
from annotation.chat.seats import chat_state
from annotation.models import ChatSeat
from evalsite.celery import app
from tests.annotation.chat.helpers import Client, ssa_campaign, ws_path

pytestmark = pytest.mark.django_db(transaction=True)


def _reads():
    """Count the consumer's own state reads."""
    return mock.patch.object(consumers, "chat_state", wraps=chat_state)


def test_the_reply_state_comes_from_the_task_without_a_read_in_the_consumer(generic_bot):
    campaign = ssa_campaign(slug="ssa-push")
    path = ws_path(campaign, "pia")
    queued: list[tuple] = []

    async def scenario():
        client = Client(path)
        await client.connect()
        with mock.patch(
            "annotation.tasks.chat_bot_turn.delay", side_effect=lambda *a: queued.append(a)
        ):
            assert (await client.say("How are you?"))["type"] == "ack"
            await client.state(lambda s: s["pending"] and s["turns"] == 2)
        with _reads() as reads:
            result = await sync_to_async(bot_turn_run)(
                dialogue_id=queued[0][0], index=queued[0][1], attempt=queued[0][2]
            )
            state = await client.state(lambda s: "bot" in s)
            assert reads.call_count == 0
        await client.close()
        return result, state

    result, state = async_to_sync(scenario)()
    assert result["stored"] is True
    seat = ChatSeat.objects.get(campaign=campaign)
    stored = chat_state(seat_id=seat.pk)
    assert {k: v for k, v in state.items() if k != "bot"} == stored
    assert state["bot"]["index"] == 2 and state["needs_label"] == 2 and not state["pending"]
    assert [u["text"] for u in state["utterances"]] == ["Hi!", "How are you?", "I don't know."]


def test_a_state_that_does_not_answer_the_awaited_turn_is_read_afresh(generic_bot):
    campaign = ssa_campaign(slug="ssa-stale")
    path = ws_path(campaign, "sam")
    seat = ChatSeat.objects.get(campaign=campaign)
    stale = {**chat_state(seat_id=seat.pk), "turns": 2, "stale": True}

    async def scenario():
        client = Client(path)
        await client.connect()  # nothing awaited: the last state shown is not pending
        with _reads() as reads:
            await get_channel_layer().group_send(
                seat_group(seat.pk), changed_event(bot={"index": 2, "model_ms": 1.0}, state=stale)
            )
            state = await client.state(lambda s: "bot" in s)
            assert reads.call_count == 1
        await client.close()
        return state

    state = async_to_sync(scenario)()
    assert "stale" not in state and state["turns"] == 1


def test_bot_turns_keep_no_result_and_stay_on_the_inference_queue():
    from annotation.tasks import chat_bot_turn

    assert chat_bot_turn.ignore_result is True
    assert chat_bot_turn.acks_late is True
    assert app.amqp.router.route({}, chat_bot_turn.name)["queue"].name == "inference"
