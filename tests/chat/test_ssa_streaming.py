"""Bot replies stream into the worker's websocket as the model writes them: partial frames,
then the stored turn once, whole; a stream that breaks stores nothing. The model is the
OpenAI-compatible loopback server (tests/modelhub/fake_openai.py) streaming real SSE."""

from __future__ import annotations

import time

import pytest
from asgiref.sync import async_to_sync

from annotation.models import Dialogue, Item, Utterance
from modelhub.services import endpoint_register
from tests.chat.helpers import Client, ssa_campaign, ws_path
from tests.modelhub.fake_openai import FakeServer

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("celery_eager")]
TOKEN_DELAY_S = 0.05


@pytest.fixture
def server():
    fake = FakeServer()
    fake.token_delay_s = TOKEN_DELAY_S
    yield fake
    fake.close()


def _campaign(server, slug: str, **decoding):
    endpoint_register(
        name="streamer",
        backend="openai_http",
        config={"base_url": server.url, "model": "tiny-chat", "max_retries": 0},
        decoding=decoding or None,
    )
    return ssa_campaign(slug=slug, models=["streamer"], bot_deadline_s=30)


async def _frames_until_reply(client: Client, text: str | None = None) -> list[tuple[float, dict]]:
    """Send ``text`` (if given) and return every frame after it (with arrival times) up to the
    state with the bot's turn or failure. Without a broker the turn runs inside the message's
    frame, so its partials come before the message's ack: every frame is kept."""
    if text is not None:
        client.client_ids += 1
        await client.send(type="message", client_id=f"m{client.client_ids}", text=text)
    frames = []
    while True:
        frame = await client.receive(timeout=10)
        frames.append((time.monotonic(), frame))
        if frame["type"] == "state" and (frame["needs_label"] is not None or frame["failed"]):
            return frames


def test_a_reply_streams_to_the_page_and_is_stored_once_whole(server):
    campaign = _campaign(server, "ssa-stream")
    path = ws_path(campaign, "ann")

    async def scenario():
        client = Client(path)
        await client.connect()
        frames = await _frames_until_reply(client, "Tell me about your weekend.")
        await client.close()
        return frames

    frames = async_to_sync(scenario)()
    partials = [(t, f) for t, f in frames if f["type"] == "partial"]
    final_at, final = frames[-1]
    stored = final["utterances"][-1]
    # "reply 0 to Tell me about your weekend." is 7 tokens, 50 ms apart: several partials,
    # each the text so far, the first well before the stored turn.
    assert stored["text"] == "reply 0 to Tell me about your weekend."
    assert len(partials) >= 3
    texts = [f["text"] for _, f in partials]
    assert all(b.startswith(a) and len(b) > len(a) for a, b in zip(texts, texts[1:], strict=False))
    assert stored["text"].startswith(texts[-1]) and texts[0] == "reply"
    assert final_at - partials[0][0] >= 3 * TOKEN_DELAY_S
    assert [f["seq"] for _, f in partials] == sorted({f["seq"] for _, f in partials})
    # The server was sent a valid conversation: the bot's "Hi!" opener after a user turn.
    roles = [m["role"] for m in server.requests[-1]["messages"]]
    assert roles == ["user", "assistant", "user"] and server.requests[-1]["stream"] is True
    bot = Utterance.objects.get(speaker="bot", index=2)
    assert bot.text == stored["text"]
    assert bot.signals["finish_reason"] == "stop" and bot.signals["first_piece_ms"] > 0
    item = Item.objects.get(campaign=campaign, key=f"{Dialogue.objects.get().key}/2")
    assert item.payload["finish_reason"] == "stop"
    assert (
        item.payload["prompt_format"]
        == "messages:leading_bot=user,opening='Hello.',system_role=yes"
    )


def test_a_reply_cut_at_max_new_tokens_is_stored_as_truncated(server):
    campaign = _campaign(server, "ssa-cut", max_new_tokens=3)
    path = ws_path(campaign, "bea")

    async def scenario():
        client = Client(path)
        await client.connect()
        frames = await _frames_until_reply(client, "Tell me about your weekend.")
        await client.close()
        return frames[-1][1]

    final = async_to_sync(scenario)()
    assert final["utterances"][-1]["text"] == "reply 0 to"
    bot = Utterance.objects.get(speaker="bot", index=2)
    assert bot.signals["finish_reason"] == "length"
    item = Item.objects.get(campaign=campaign, key=f"{Dialogue.objects.get().key}/2")
    assert item.payload["finish_reason"] == "length"


def test_a_stream_that_breaks_stores_nothing_and_the_worker_may_ask_again(server):
    server.stream_break_after = 3
    campaign = _campaign(server, "ssa-break")
    path = ws_path(campaign, "cat")

    async def scenario():
        client = Client(path)
        await client.connect()
        broken = await _frames_until_reply(client, "Tell me about your weekend.")
        server.stream_break_after = None
        await client.send(type="retry")
        retried = await client.state(lambda s: s["needs_label"] is not None, timeout=10)
        await client.close()
        return broken, retried

    broken, retried = async_to_sync(scenario)()
    assert any(f["type"] == "partial" for _, f in broken)  # the worker saw it begin
    failed = broken[-1][1]
    assert failed["failed"] and not failed["pending"]
    assert [u["role"] for u in failed["utterances"]] == ["bot", "user"]  # nothing half-stored
    assert retried["utterances"][-1]["text"] == "reply 0 to Tell me about your weekend."
    assert Utterance.objects.filter(speaker="bot").count() == 2  # "Hi!" and the whole reply


def test_an_arena_s_two_replies_stream_to_their_own_panes(server):
    from annotation.services import campaign_create, campaign_set_status

    for name in ("streamer-a", "streamer-b"):
        endpoint_register(
            name=name,
            backend="openai_http",
            config={"base_url": server.url, "model": "tiny-chat", "max_retries": 0},
        )
    campaign = campaign_create(
        slug="arena-stream",
        name="Arena",
        protocol="arena",
        parameters={"models": ["streamer-a", "streamer-b"], "heartbeat_s": 1},
        controls={"open_links": True},
    )
    path = ws_path(campaign_set_status(campaign=campaign, status="live"), "ann")

    async def scenario():
        client = Client(path)
        await client.connect()
        await client.send(type="message", client_id="m1", text="Tell me about your weekend.")
        frames, stored = [], set()
        while stored != {"a", "b"}:  # each side's stored reply is told with its side
            frames.append(await client.receive(timeout=10))
            if frames[-1]["type"] == "state" and frames[-1].get("bot"):
                stored.add(frames[-1]["bot"]["side"])
        await client.close()
        return frames

    frames = async_to_sync(scenario)()
    replies = [s["utterances"][-1]["text"] for s in frames[-1]["sides"]]
    assert replies == ["reply 0 to Tell me about your weekend."] * 2  # each side's first reply
    partials = [f for f in frames if f["type"] == "partial"]
    for side, reply in zip("ab", replies, strict=True):
        texts = [f["text"] for f in partials if f["side"] == side]
        assert len(texts) >= 3 and reply.startswith(texts[-1]), (side, texts)
