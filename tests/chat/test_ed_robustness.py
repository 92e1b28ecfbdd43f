"""What goes wrong in live chats: bad frames, spoofing, reloads, closed tabs, dead sockets,
the lobby's timeout, resends and the per-worker cap."""

from __future__ import annotations

import json
import re
import time
from datetime import timedelta
from html import unescape

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.utils import timezone

from annotation.models import Assignment, Dialogue, Situation, Utterance
from chat.empathetic import lobby_release_expired
from chat.frames import MAX_FRAME_BYTES
from chat.models import ChatSeat
from chat.seats import chat_arrive
from chat.snapshot import chat_state
from providers import Arrival
from tests.chat.helpers import SITUATION, Client, ed_campaign, paired, ws_path

pytestmark = pytest.mark.django_db(transaction=True)


async def _two_short_conversations(path_a: str, path_b: str) -> None:
    """Pair two workers and hold both conversations of one message each way to the end."""
    speaker, listener, _, _ = await paired(path_a, path_b)
    for _ in range(2):
        await speaker.say("One.")
        await listener.say("Two.")
        speaker, listener = listener, speaker
    await speaker.state(lambda s: s["stage"] == "done")
    await speaker.close()
    await listener.close()


def _counts() -> tuple[int, int, int]:
    return Utterance.objects.count(), Situation.objects.count(), Dialogue.objects.count()


def test_malformed_oversized_out_of_turn_and_spoofed_frames_are_refused_and_change_nothing():
    campaign = ed_campaign()
    other = ed_campaign(slug="ed-other")
    paths = [ws_path(campaign, "sam"), ws_path(campaign, "lea")]
    other_paths = [ws_path(other, "x1"), ws_path(other, "x2")]

    async def scenario():
        speaker, listener, state, _ = await paired(*paths)
        o1, o2, other_state, _ = await paired(*other_paths)
        assert (await speaker.say("Hello!"))["type"] == "ack"
        before = await sync_to_async(_counts)()
        bad_texts = [
            "not json",
            "[1, 2]",
            json.dumps({"type": "nope"}),
            json.dumps({"type": "message", "text": "no client id"}),
            json.dumps({"type": "message", "client_id": "z", "text": 5}),
            json.dumps({"type": "message", "client_id": "z", "text": "hi", "extra": 1}),
            json.dumps({"type": "message", "client_id": "z", "text": "hi", "signals": {"x": 1}}),
            json.dumps({"type": "message", "client_id": "z", "text": "x" * (MAX_FRAME_BYTES + 1)}),
        ]
        codes = []
        for text in bad_texts:
            await listener.communicator.send_to(text_data=text)
            codes.append((await listener.until(lambda f: f["type"] == "error"))["code"])
        await listener.communicator.send_to(bytes_data=b"\x00\x01")
        codes.append((await listener.until(lambda f: f["type"] == "error"))["code"])
        assert codes == ["malformed"] * 2 + ["unknown_type"] + ["malformed"] * 4 + ["too_large"] + [
            "malformed"
        ]
        too_long = await listener.say("y" * 700)
        assert too_long["code"] == "invalid"
        out_of_turn = await speaker.say("Me again, before my partner answered.")
        assert out_of_turn["code"] == "out_of_turn"
        spoofed_dialogue = await listener.say("Into their chat", dialogue=other_state["dialogue"])
        assert spoofed_dialogue["code"] == "not_yours"
        spoofed_role = await listener.say("As the speaker", role="speaker")
        assert spoofed_role["code"] == "not_yours"
        spoofed_end = await o1.send(type="end", dialogue=state["dialogue"])
        assert spoofed_end is None
        assert (await o1.until(lambda f: f["type"] == "error"))["code"] == "not_yours"
        situation_again = await speaker.send(type="situation", emotion="sad", text=SITUATION)
        assert situation_again is None
        assert (await speaker.until(lambda f: f["type"] == "error"))["code"] == "out_of_turn"
        assert await sync_to_async(_counts)() == before
        ok = await listener.say("Congratulations!", dialogue=state["dialogue"], role="listener")
        assert ok["type"] == "ack" and ok["index"] == 1
        for client in (speaker, listener, o1, o2):
            await client.close()

    async_to_sync(scenario)()


def test_a_socket_with_another_workers_token_or_campaign_is_refused():
    campaign = ed_campaign()
    other = ed_campaign(slug="ed-else")
    path = ws_path(campaign, "owner")
    ws_path(campaign, "intruder")
    token = path.split("token=")[1]

    async def refused(p: str) -> dict:
        client = Client(p)
        connected, _ = await client.communicator.connect()
        assert connected
        frame = await client.receive()
        output = await client.communicator.receive_output()
        assert output["type"] == "websocket.close" and output["code"] == 4403
        return frame

    async def scenario():
        frame = await refused(f"/ws/chat/{campaign.slug}/?workerId=intruder&token={token}")
        assert frame["type"] == "error" and frame["code"] == "not_allowed"
        frame = await refused(f"/ws/chat/{other.slug}/?workerId=owner&token={token}")
        assert frame["code"] == "not_allowed"
        frame = await refused(f"/ws/chat/{campaign.slug}/?workerId=owner&token=forged")
        assert frame["code"] == "not_allowed"

    async_to_sync(scenario)()


def test_a_reload_mid_chat_shows_the_same_conversation_and_the_chat_goes_on():
    campaign = ed_campaign(heartbeat_s=2)
    paths = [ws_path(campaign, "rita"), ws_path(campaign, "tom")]

    async def scenario():
        speaker, listener, state, _ = await paired(*paths)
        assert (await speaker.say("I got the job!"))["type"] == "ack"
        assert (await listener.say("Wow, congratulations!"))["type"] == "ack"
        speaker_path = (
            speaker.communicator.scope["path"]
            + "?"
            + (speaker.communicator.scope["query_string"].decode())
        )
        await speaker.close()  # the page reloads: a new socket, same URL
        again = Client(speaker_path)
        again.client_ids = speaker.client_ids  # the page's message ids are never reused
        restored = await again.connect()
        assert restored["stage"] == "chatting" and restored["dialogue"] == state["dialogue"]
        assert [u["text"] for u in restored["utterances"]] == [
            "I got the job!",
            "Wow, congratulations!",
        ]
        assert restored["your_turn"] and restored["role"] == "speaker"
        assert (await again.say("Thanks, I start Monday."))["index"] == 2
        seen = await listener.state(lambda s: len(s["utterances"]) == 3)
        assert seen["stage"] == "chatting"  # the partner was never told anything else
        await again.close()
        await listener.close()

    async_to_sync(scenario)()
    assert not Dialogue.objects.filter(flagged=True).exists()


def test_a_resent_message_is_stored_once_and_acknowledged_again():
    campaign = ed_campaign()
    paths = [ws_path(campaign, "ida"), ws_path(campaign, "jon")]

    async def scenario():
        speaker, listener, _, _ = await paired(*paths)
        frame = {"type": "message", "client_id": "same-id", "text": "Guess what happened!"}
        for _ in range(2):
            await speaker.communicator.send_to(text_data=json.dumps(frame))
        first = await speaker.until(lambda f: f["type"] == "ack")
        second = await speaker.until(lambda f: f["type"] == "ack")
        assert (first["index"], first["stored"]) == (0, True)
        assert (second["index"], second["stored"]) == (0, False)
        await speaker.close()
        await listener.close()

    async_to_sync(scenario)()
    assert Utterance.objects.count() == 1


def test_a_closed_tab_is_told_to_the_partner_within_the_heartbeat_and_the_chat_kept_flagged():
    heartbeat = 1
    campaign = ed_campaign(heartbeat_s=heartbeat)
    paths = [ws_path(campaign, "ana"), ws_path(campaign, "leo")]

    async def scenario():
        speaker, listener, _, _ = await paired(*paths)
        assert (await speaker.say("My dog learned a trick."))["type"] == "ack"
        await listener.close()  # the tab closes
        closed = time.monotonic()
        state = await speaker.state(lambda s: s["stage"] == "partner_left", timeout=heartbeat)
        assert time.monotonic() - closed <= heartbeat
        assert "partner left" in state["message"]
        await speaker.close()

    async_to_sync(scenario)()
    dialogue = Dialogue.objects.get(key__endswith="-1")
    assert dialogue.status == "partial" and dialogue.flagged and "partner_left" in dialogue.flags
    assert dialogue.utterances.count() == 1
    stages = dict(ChatSeat.objects.values_list("worker__external_id", "stage"))
    assert stages == {"ana": "partner_left", "leo": "left"}
    remaining = campaign.assignments.get(worker__external_id="ana")
    assert remaining.status == "submitted"  # paid by policy
    gone = campaign.assignments.get(worker__external_id="leo")
    assert gone.status == "submitted"  # so is the one who left (docs/chat.md, "Payment policy")


def test_a_silent_socket_is_closed_by_the_heartbeat_and_the_partner_told():
    campaign = ed_campaign(heartbeat_s=1)
    paths = [ws_path(campaign, "eve"), ws_path(campaign, "max")]

    async def scenario():
        speaker, listener, _, _ = await paired(*paths)

        async def ping_until_told():
            while True:
                await speaker.send(type="ping")
                frame = await speaker.receive(timeout=5)
                if frame["type"] == "state" and frame["stage"] == "partner_left":
                    return frame

        # The listener's browser is frozen: its socket stays open but sends nothing.
        told = await ping_until_told()
        assert told["stage"] == "partner_left"
        closed = await listener.communicator.receive_output(timeout=5)
        while closed["type"] != "websocket.close":
            closed = await listener.communicator.receive_output(timeout=5)
        assert closed["code"] == 4408
        await speaker.close()

    async_to_sync(scenario)()
    assert Dialogue.objects.get(key__endswith="-1").flags == ["partner_left"]


def test_a_worker_alone_in_the_lobby_is_released_after_the_timeout_and_paid():
    campaign = ed_campaign(lobby_timeout_s=30)
    path = ws_path(campaign, "solo")

    async def scenario():
        client = Client(path)
        state = await client.connect()
        await client.send(type="situation", emotion=state["offered"][1], text=SITUATION)
        waiting = await client.state(lambda s: s["stage"] == "waiting")
        assert waiting["waited_s"] < 5 and waiting["lobby_timeout_s"] == 30
        await client.close()

    async_to_sync(scenario)()
    seat = ChatSeat.objects.get()
    assert lobby_release_expired(seat_id=seat.pk, now=timezone.now()) == []
    later = timezone.now() + timedelta(seconds=31)
    assert lobby_release_expired(seat_id=seat.pk, now=later) == [seat.pk]
    seat.refresh_from_db()
    assert seat.stage == "released" and seat.ended_reason == "lobby_timeout"
    assert seat.assignment.status == "submitted"
    assert "no partner arrived" in chat_state(seat_id=seat.pk)["message"]
    assert Situation.objects.get().worker_id == seat.worker_id  # the situation is kept


def test_the_conversation_cap_counts_conversations_and_may_change_while_live():
    campaign = ed_campaign(min_utterances=2, max_utterances=2)
    campaign.max_items_per_worker = 2
    campaign.save()
    paths = [ws_path(campaign, "kim"), ws_path(campaign, "lou")]

    async_to_sync(_two_short_conversations)(*paths)
    arrival = Arrival(provider="local", worker_id="kim")
    # Back by the link: the end screen of the chat they finished; "Start another chat": capped.
    assert chat_arrive(campaign=campaign, arrival=arrival).kind == "done"
    assert chat_arrive(campaign=campaign, arrival=arrival, another=True).stop == "capped"
    campaign.max_items_per_worker = 4
    campaign.save()
    assert chat_arrive(campaign=campaign, arrival=arrival, another=True).kind == "chat"


def test_pasted_text_flags_the_situation_and_the_dialogue_for_review_and_is_kept():
    campaign = ed_campaign()
    paths = [ws_path(campaign, "pia"), ws_path(campaign, "ray")]

    async def scenario():
        a, b = Client(paths[0]), Client(paths[1])
        for client, pastes in ((a, 1), (b, 0)):
            state = await client.connect()
            signals = {"typing_ms": 900, "keystrokes": 3, "pastes": pastes, "pasted_chars": 60}
            await client.send(
                type="situation", emotion=state["offered"][0], text=SITUATION, signals=signals
            )
            assert (await client.until(lambda f: f["type"] in ("ack", "error")))["type"] == "ack"
        sa = await a.state(lambda s: s["stage"] == "chatting")
        speaker = a if sa["role"] == "speaker" else b
        signals = {"typing_ms": 100, "keystrokes": 0, "pastes": 1, "pasted_chars": 20}
        assert (await speaker.say("Pasted from somewhere.", signals=signals))["type"] == "ack"
        await a.close()
        await b.close()

    async_to_sync(scenario)()
    assert dict(Situation.objects.values_list("worker__external_id", "flagged")) == {
        "pia": True,
        "ray": False,
    }
    dialogue = Dialogue.objects.get()
    assert dialogue.flagged and dialogue.flags == ["paste"] and dialogue.status == "active"
    utterance = Utterance.objects.get()
    assert utterance.signals == {"typing_ms": 100, "keystrokes": 0, "pastes": 1, "pasted_chars": 20}


@pytest.mark.parametrize("last_seen", ["ana", "leo"])
def test_when_both_workers_went_away_the_one_who_stayed_longer_is_the_one_whose_partner_left(
    last_seen,
):
    from chat.empathetic import chats_sweep

    campaign = ed_campaign(heartbeat_s=1)
    paths = [ws_path(campaign, "ana"), ws_path(campaign, "leo")]

    async def scenario():
        speaker, listener, _, _ = await paired(*paths)
        await speaker.close()
        await listener.close()

    async_to_sync(scenario)()
    now = timezone.now()
    for seat in ChatSeat.objects.all():
        stayed = seat.worker.external_id == last_seen
        ChatSeat.objects.filter(pk=seat.pk).update(
            channel_name="", last_seen_at=now - timedelta(seconds=20 if stayed else 40)
        )
    assert chats_sweep(now=now) == 1
    stages = dict(ChatSeat.objects.values_list("worker__external_id", "stage"))
    other = "leo" if last_seen == "ana" else "ana"
    assert stages == {last_seen: "partner_left", other: "left"}
    assert set(campaign.assignments.values_list("status", flat=True)) == {"submitted"}


def test_a_worker_back_by_their_link_after_the_chat_sees_its_end_and_code_then_may_chat_again(
    client,
):
    """The tab closed before the end screen: the task link (a personal local link) leads to the
    finished chat's end screen and its completion code, not to a fresh task; "Start another
    chat" starts one."""
    campaign = ed_campaign(min_utterances=2, max_utterances=2)
    paths = [ws_path(campaign, "kim"), ws_path(campaign, "lou")]

    async_to_sync(_two_short_conversations)(*paths)
    finished = Assignment.objects.get(worker__external_id="kim")
    assert finished.status == "submitted" and finished.completion_code
    back = client.get(f"/task/{campaign.slug}/?workerId=kim", follow=True)
    html = back.content.decode()
    assert back.status_code == 200 and finished.completion_code in html
    another = unescape(re.search(r'href="([^"]+)" id="continue-link"', html).group(1))
    assert "another=1" in another and "workerId=kim" in another
    assert "Start another chat" in html
    again = client.get(another)
    assert again.status_code == 200 and "data-ws-path" in again.content.decode()
    assert Assignment.objects.filter(worker__external_id="kim").count() == 2
    assert ChatSeat.objects.filter(worker__external_id="kim", stage="situation").count() == 1
