"""Live chat frames of every type, generated and hostile, against an ED seat (writing its
situation, and paired and chatting) and an interactive SSA seat (with a bot turn to label):
parsing and handling refuse with an AnnotationError, and never raise anything else."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from django.utils import timezone
from hypothesis import event, example, given
from hypothesis import strategies as st

from chat import arena, bot, empathetic
from chat.frames import FRAME_FIELDS, frame_parse
from chat.models import ChatSeat
from chat.modes import frame_handle
from chat.seats import chat_arrive, seat_connect
from evalsite.errors import AnnotationError
from providers import Arrival
from tests.fuzz.strategies import bounded, hostile_text, json_text, json_values, nested
from tests.fuzz.studies import studies_create

TYPES = [*sorted(FRAME_FIELDS), "unknown", "", "MESSAGE"]
FIELDS = sorted({f for fields in FRAME_FIELDS.values() for f in fields} | {"type", "extra"})
SITUATION = "I finally finished the marathon I had trained for all year long."
_workers = itertools.count()


def _seat(campaign, worker: str) -> ChatSeat:
    visit = chat_arrive(campaign=campaign, arrival=Arrival(provider="local", worker_id=worker))
    assert visit.seat is not None, visit
    seat_connect(seat_id=visit.seat.pk, channel_name=f"channel-{worker}")
    return visit.seat


@pytest.fixture
def seats(db) -> dict[str, int]:
    """Seats of each kind: ED writing its situation, ED chatting, SSA with a bot turn."""
    studies = studies_create()
    ed, ssa = studies["empathetic_chat"], studies["ssa_interactive"]
    writing = _seat(ed, "ed-writer")
    first, second = _seat(ed, "ed-a"), _seat(ed, "ed-b")
    for seat in (first, second):
        empathetic.situation_submit(
            seat_id=seat.pk, emotion=seat.offered[0], text=SITUATION, signals={}
        )
    first.refresh_from_db()
    assert first.stage == ChatSeat.Stage.CHATTING, first.stage
    labeled = _seat(ssa, "ssa-a")
    sent = bot.ssa_message_send(
        seat_id=labeled.pk, client_id="c1", text="I love hiking.", signals={}
    )
    labeled.refresh_from_db()
    bot.bot_turn_run(dialogue_id=labeled.dialogue_id, index=sent.index + 1)
    # An arena seat whose first exchange awaits its vote.
    voting = _seat(studies["arena"], "arena-a")
    arena.arena_message_send(seat_id=voting.pk, client_id="c1", text="Hello!", signals={})
    return {
        "ed-writing": writing.pk,
        "ed-chatting": first.pk,
        "ssa": labeled.pk,
        "arena": voting.pk,
    }


def _field_value(name: str) -> st.SearchStrategy[Any]:
    plausible = {
        "client_id": st.sampled_from(["c1", "c2", "x" * 65, ""]),
        "text": st.sampled_from([SITUATION, "Hello!", "x" * 10_001]),
        "emotion": st.sampled_from(["proud", "sad", "afraid"]),
        "signals": st.dictionaries(
            st.sampled_from(["typing_ms", "keystrokes", "pastes", "pasted_chars", "other"]),
            json_values,
            max_size=3,
        ),
        "dialogue": st.integers(min_value=-2, max_value=2**60),
        "index": st.integers(min_value=-2, max_value=10),
        "sensible": st.sampled_from(["yes", "no", "maybe"]),
        "specific": st.sampled_from(["yes", "no", "maybe"]),
        "role": st.sampled_from(["speaker", "listener", "bot", "human"]),
        "turn": st.integers(min_value=-2, max_value=4),
        "winner": st.sampled_from(["a", "b", "tie", "both_bad", "c"]),
        "reason": st.sampled_from(["", "clearer", "x" * 2001]),
    }.get(name, st.nothing())
    return st.one_of(plausible, plausible, plausible, hostile_text, json_values)


@st.composite
def frames(draw) -> str:
    """A websocket text message: mostly a JSON object with a type and some fields."""
    kind = draw(st.sampled_from(["object"] * 6 + ["json", "text"]))
    if kind == "text":
        return draw(
            st.sampled_from(["", "{", nested(5000, "{", "}"), nested(100_000)]) | hostile_text
        )
    if kind == "json":
        return json_text(draw(json_values))
    known = st.sampled_from(sorted(FRAME_FIELDS))
    frame_type = draw(st.one_of(known, known, known, st.sampled_from(TYPES), hostile_text))
    own = sorted(FRAME_FIELDS.get(frame_type, ()))
    names = draw(st.sets(st.sampled_from(own), max_size=len(own))) if own else set()
    if draw(st.integers(0, 4)) == 0:  # now and then a field of another type, or none known
        names.add(draw(st.sampled_from(FIELDS) | hostile_text))
    frame = {"type": frame_type} | {name: draw(_field_value(name)) for name in sorted(names)}
    return json_text(frame)


@bounded(200)
@given(seat=st.sampled_from(["ed-writing", "ed-chatting", "ssa", "arena"]), text=frames())
@example(seat="arena", text='{"type": "vote", "turn": 1, "winner": "a", "reason": "clear"}')
@example(seat="arena", text='{"type": "vote", "turn": 1, "winner": ["a"], "reason": 7}')
@example(seat="ssa", text='{"type": "message", "client_id": "c9", "text": "\\ud800"}')
@example(seat="ed-chatting", text=nested(5000, "{", "}"))
@example(seat="ssa", text='{"type": "label", "index": 2, "sensible": ["yes"], "specific": {}}')
@example(seat="ed-writing", text='{"type": "situation", "emotion": "proud", "text": "a\\u0000"}')
@example(seat="ed-chatting", text='{"type": "end", "dialogue": 1e400}')
def test_a_frame_is_handled_or_refused_with_an_annotation_error(seats, seat, text):
    try:
        frame = frame_parse(text)
        outcome = frame_handle(seat_id=seats[seat], frame=frame, now=timezone.now())
    except AnnotationError as refused:
        event(f"refused {type(refused).__name__}")
        assert refused.message
        return
    event(f"handled {frame.type}")
    json.dumps(outcome.ack)  # the ack goes back over the socket as JSON
