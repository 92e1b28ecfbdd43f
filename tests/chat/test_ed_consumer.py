"""ED collection over real websocket frames (channels' communicator, the project's ASGI app)."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync

from annotation.models import Dialogue, Utterance
from chat.models import ChatSeat
from tests.chat.helpers import SITUATION, Client, ed_campaign, ws_path

pytestmark = pytest.mark.django_db(transaction=True)


async def _write_situation(client: Client, state: dict) -> dict:
    await client.send(type="situation", emotion=state["offered"][0], text=SITUATION)
    return await client.until(lambda f: f["type"] in ("ack", "error"))


def test_two_workers_pair_and_hold_both_conversations_with_roles_swapped():
    campaign = ed_campaign(min_utterances=4, max_utterances=4)
    path_a, path_b = ws_path(campaign, "alice"), ws_path(campaign, "bob")

    async def scenario():
        a, b = Client(path_a), Client(path_b)
        state_a, state_b = await a.connect(), await b.connect()
        assert state_a["stage"] == state_b["stage"] == "situation"
        assert len(state_a["offered"]) == 3
        assert (await _write_situation(a, state_a))["type"] == "ack"
        await a.state(lambda s: s["stage"] == "waiting")
        assert (await _write_situation(b, state_b))["type"] == "ack"
        for rnd in (1, 2):
            sa = await a.state(lambda s, rnd=rnd: s["stage"] == "chatting" and s["round"] == rnd)
            sb = await b.state(lambda s, rnd=rnd: s["stage"] == "chatting" and s["round"] == rnd)
            speaker, listener = (a, b) if sa["role"] == "speaker" else (b, a)
            assert {sa["role"], sb["role"]} == {"speaker", "listener"}
            for n in range(4):
                who = speaker if n % 2 == 0 else listener
                ack = await who.say(f"round {rnd} turn {n}")
                assert ack["type"] == "ack" and ack["index"] == n
        await a.state(lambda s: s["stage"] == "done")
        await b.state(lambda s: s["stage"] == "done")
        await a.close()
        await b.close()

    async_to_sync(scenario)()
    dialogues = list(Dialogue.objects.filter(campaign=campaign).order_by("key"))
    assert [d.status for d in dialogues] == ["complete", "complete"]
    first, second = dialogues
    assert first.metadata["speaker_seat"] == second.metadata["listener_seat"]
    for d in dialogues:
        rows = list(Utterance.objects.filter(dialogue=d).order_by("index"))
        assert [u.speaker for u in rows] == ["speaker", "listener"] * 2
        speaker_worker = ChatSeat.objects.get(pk=d.metadata["speaker_seat"]).worker_id
        assert {u.worker_id for u in rows if u.speaker == "speaker"} == {speaker_worker}
    assert set(ChatSeat.objects.values_list("stage", flat=True)) == {"done"}
    assert set(campaign.assignments.values_list("status", flat=True)) == {"submitted"}
