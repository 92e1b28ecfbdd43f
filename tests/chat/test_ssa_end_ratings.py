"""Interactive SSA's closing ratings over real websocket frames, and in the report."""

from __future__ import annotations

from datetime import timedelta

import pytest
from asgiref.sync import async_to_sync
from django.utils import timezone

from annotation.models import Dialogue
from annotation.protocols import registry
from annotation.selectors import campaign_report
from annotation.tasks import assignments_housekeeping
from chat.bot import RATINGS_WAIT_S, ratings_sweep
from chat.models import ChatSeat
from evalsite.errors import InvalidParameters
from tests.chat.helpers import Client, ssa_campaign, ws_path

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("celery_eager")]

GOOD = {"engaging": 4, "interesting": 3, "human": 2, "knowledgeable": 5}


async def _chat_to_the_end(client: Client) -> dict:
    """Chat and label every bot turn until the chat may end; end it; return the next state."""
    state = await client.connect()
    n = 0
    while not state["can_end"]:
        n += 1
        assert (await client.say(f"Message {n}."))["type"] == "ack"
        state = await client.state(lambda s: s["needs_label"] is not None)
        await client.send(type="label", index=state["needs_label"], sensible="yes", specific="no")
        state = await client.state(lambda s: s["needs_label"] is None)
    await client.send(type="end")
    return await client.state(lambda s: s["stage"] != "chatting")


def test_with_end_ratings_on_the_seat_rates_the_bot_once_before_it_is_done(generic_bot):
    campaign = ssa_campaign(slug="ssa-rate", end_ratings=True, min_turns=4, max_turns=8)
    path = ws_path(campaign, "eve")

    async def scenario():
        client = Client(path)
        state = await _chat_to_the_end(client)
        assert state["stage"] == "rating" and not state["your_turn"] and not state["can_end"]
        questions = state["end_ratings"]["questions"]
        assert [q["key"] for q in questions] == list(GOOD)
        assert questions[0]["text"].startswith("How engaging was your partner?")
        assert state["end_ratings"]["scale"] == [1, 5] and state["end_ratings"]["comment"]
        # Refused, each with an error frame, and nothing stored: a rating out of the scale,
        # a question missing, a question not asked, a fraction, a comment that is not text.
        for bad in (
            {"ratings": {**GOOD, "human": 6}},
            {"ratings": {k: v for k, v in GOOD.items() if k != "human"}},
            {"ratings": {**GOOD, "funny": 3}},
            {"ratings": {**GOOD, "engaging": 2.5}},
            {"ratings": GOOD, "comment": ["not", "text"]},
            {"ratings": "4"},
        ):
            await client.send(type="rating", **bad)
            error = await client.until(lambda f: f["type"] in ("ack", "error"))
            assert error["type"] == "error" and error["code"] == "invalid", (bad, error)
        await client.send(type="rating", ratings=GOOD, extra=1)
        assert (await client.until(lambda f: f["type"] == "error"))["code"] == "malformed"
        assert (await _stored_ratings(campaign)) is None
        assert (await _seat_stage()) == "rating"
        await client.send(type="message", client_id="late", text="One more?")
        assert (await client.until(lambda f: f["type"] == "error"))["code"] == "out_of_turn"
        await client.send(type="rating", ratings=GOOD, comment="  Friendly but vague.  ")
        assert (await client.until(lambda f: f["type"] in ("ack", "error")))["type"] == "ack"
        await client.state(lambda s: s["stage"] == "done")
        await client.close()

    async_to_sync(scenario)()
    dialogue = Dialogue.objects.get(campaign=campaign)
    stored = dialogue.metadata["ratings"]
    assert stored["values"] == GOOD and stored["comment"] == "Friendly but vague."
    assert dialogue.status == "complete" and ChatSeat.objects.get().stage == "done"
    assert campaign.assignments.get().status == "submitted"

    async def resend():
        client = Client(path)
        await client.connect()
        await client.send(type="rating", ratings=GOOD, comment="Friendly but vague.")
        assert (await client.until(lambda f: f["type"] in ("ack", "error")))["type"] == "ack"
        await client.send(type="rating", ratings={**GOOD, "human": 5})
        assert (await client.until(lambda f: f["type"] == "error"))["code"] == "conflict"
        await client.close()

    async_to_sync(resend)()
    dialogue.refresh_from_db()
    assert dialogue.metadata["ratings"] == stored  # the resend stored nothing new


def test_with_end_ratings_off_the_chat_ends_done_and_a_rating_frame_is_refused(generic_bot):
    campaign = ssa_campaign(slug="ssa-norate", min_turns=4, max_turns=8)
    path = ws_path(campaign, "fay")

    async def scenario():
        client = Client(path)
        state = await _chat_to_the_end(client)
        assert state["stage"] == "done" and state["end_ratings"] is None
        await client.close()
        client = Client(path)
        await client.connect()
        await client.send(type="rating", ratings=GOOD)
        assert (await client.until(lambda f: f["type"] == "error"))["code"] == "out_of_turn"
        await client.close()

    async_to_sync(scenario)()
    assert "ratings" not in Dialogue.objects.get(campaign=campaign).metadata
    assert campaign.assignments.get().status == "submitted"


def test_a_chat_that_reaches_max_turns_goes_to_the_rating_step_by_itself(generic_bot):
    campaign = ssa_campaign(slug="ssa-rate-max", end_ratings=True, min_turns=2, max_turns=5)
    path = ws_path(campaign, "gus")

    async def scenario():
        client = Client(path)
        await client.connect()
        for n in (1, 2):
            assert (await client.say(f"Message {n}."))["type"] == "ack"
            state = await client.state(lambda s: s["needs_label"] is not None)
            await client.send(type="label", index=state["needs_label"], sensible="no")
        # The last label completes the conversation: no 'end' frame, and no seat done yet.
        state = await client.state(lambda s: s["stage"] != "chatting")
        assert state["stage"] == "rating" and state["end_ratings"] is not None
        await client.close()

    async_to_sync(scenario)()
    assert Dialogue.objects.get(campaign=campaign).status == "complete"
    assert campaign.assignments.get().status == "accepted"  # submitted only once rated


def test_a_worker_who_leaves_at_the_rating_step_is_done_unrated_and_submitted(generic_bot):
    campaign = ssa_campaign(slug="ssa-rate-left", end_ratings=True, min_turns=2, max_turns=5)
    path = ws_path(campaign, "hal")

    async def scenario():
        client = Client(path)
        await client.connect()
        for n in (1, 2):
            assert (await client.say(f"Message {n}."))["type"] == "ack"
            state = await client.state(lambda s: s["needs_label"] is not None)
            await client.send(type="label", index=state["needs_label"], sensible="no")
        assert (await client.state(lambda s: s["stage"] != "chatting"))["stage"] == "rating"
        await client.close()  # and never comes back

    async_to_sync(scenario)()
    seat = ChatSeat.objects.get()
    soon = seat.last_seen_at + timedelta(seconds=RATINGS_WAIT_S - 60)
    assert ratings_sweep(now=soon) == 0 and ChatSeat.objects.get().stage == "rating"
    # Hours later the housekeeping task runs: the ratings' sweep comes before abandonment.
    hours = timedelta(hours=3)
    ChatSeat.objects.update(last_seen_at=seat.last_seen_at - hours)
    campaign.assignments.update(last_activity_at=timezone.now() - hours)
    counts = assignments_housekeeping.run()
    assert counts["unrated_chats_done"] == 1 and counts["abandoned"] == 0
    seat.refresh_from_db()
    assert (seat.stage, seat.ended_reason) == ("done", "unrated")
    assert campaign.assignments.get().status == "submitted"
    dialogue = Dialogue.objects.get(campaign=campaign)
    assert dialogue.status == "complete" and "ratings" not in dialogue.metadata
    assert ratings_sweep() == 0  # once


def _stored_ratings(campaign):
    from asgiref.sync import sync_to_async

    return sync_to_async(lambda: Dialogue.objects.get(campaign=campaign).metadata.get("ratings"))()


def _seat_stage():
    from asgiref.sync import sync_to_async

    return sync_to_async(lambda: ChatSeat.objects.get().stage)()


def test_the_report_gives_the_closing_ratings_per_model_with_an_interval(generic_bot):
    from modelhub.services import endpoint_register

    endpoint_register(name="other-bot", backend="generic_bot")
    campaign = ssa_campaign(
        slug="ssa-rate-report",
        models=["generic-bot", "other-bot"],
        end_ratings=True,
        min_turns=4,
        max_turns=8,
    )
    given = {"generic-bot": [5, 4, 4], "other-bot": [1, 2]}
    left = {model: list(values) for model, values in given.items()}
    for n in range(5):
        path = ws_path(campaign, f"w{n}")
        value = left[ChatSeat.objects.get(worker__external_id=f"w{n}").endpoint].pop()

        async def scenario(path=path, value=value):
            client = Client(path)
            state = await _chat_to_the_end(client)
            assert state["stage"] == "rating"
            ratings = {**GOOD, "engaging": value}
            await client.send(type="rating", ratings=ratings, comment="ok" * (value > 4))
            await client.state(lambda s: s["stage"] == "done")
            await client.close()

        async_to_sync(scenario)()
    models = [d.metadata["model"] for d in Dialogue.objects.filter(campaign=campaign)]
    assert sorted(models) == sorted(m for m, v in given.items() for _ in v)
    table = campaign_report(campaign).tables["closing_ratings"]
    engaging = table[table["question"] == "engaging"].set_index("model")
    for model, values in given.items():
        row = engaging.loc[model]
        assert row["conversations"] == len(values)
        assert row["mean"] == pytest.approx(sum(values) / len(values))
        assert min(values) <= row["mean_low"] <= row["mean"] <= row["mean_high"] <= max(values)
    assert engaging.loc["generic-bot", "comments"] == 1
    assert set(table["question"]) == set(GOOD)
    # The dialogue export (``export --dialogues``) carries them in each dialogue's metadata.
    from annotation.dataset_reads import campaign_dialogue_records

    exported = [
        r.metadata["ratings"]["values"]["engaging"] for r in campaign_dialogue_records(campaign)
    ]
    assert sorted(exported) == sorted(v for values in given.values() for v in values)


def test_closing_questions_are_validated_with_clear_messages():
    protocol = registry.get("ssa_interactive")
    base = {"models": ["m"]}
    assert protocol.clean_parameters(base)["end_ratings"] is False
    for bad, field in (
        ({"end_ratings": "yes"}, "end_ratings"),
        ({"end_questions": []}, "end_questions"),
        ({"end_questions": [{"key": "Fun!", "text": "Fun?"}]}, "end_questions"),
        (
            {"end_questions": [{"key": "a", "text": "A?"}, {"key": "a", "text": "B?"}]},
            "end_questions",
        ),
        ({"end_questions": [{"key": "a", "text": " "}]}, "end_questions"),
        ({"end_comment": 1}, "end_comment"),
    ):
        with pytest.raises(InvalidParameters) as raised:
            protocol.clean_parameters({**base, **bad})
        assert field in raised.value.fields, bad
