"""The transition tables of live chats (docs/chat.md, "States"): a seat's stage and a
dialogue's status move only as their tables allow, and a refused move changes nothing."""

from __future__ import annotations

from collections import deque
from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.models import Dialogue
from annotation.services.dialogues import DIALOGUE_TRANSITIONS, dialogue_set_status
from chat.models import ChatSeat
from chat.seats import chat_arrive
from chat.states import SEAT_TRANSITIONS, seat_set_stage
from evalsite.errors import Conflict
from providers import Arrival
from tests.chat.helpers import ed_campaign

pytestmark = pytest.mark.django_db

Stage = ChatSeat.Stage
Status = Dialogue.Status


def _path(start: str, goal: str) -> list[str]:
    """Return the stages after ``start`` on a shortest allowed way to ``goal``."""
    came_from: dict[str, str] = {start: start}
    queue = deque([start])
    while queue:
        stage = queue.popleft()
        for after in SEAT_TRANSITIONS[stage]:
            if after not in came_from:
                came_from[after] = stage
                queue.append(after)
    path = [goal]
    while path[-1] != start:
        path.append(came_from[path[-1]])
    return path[-2::-1]


def _seat_in(stage: str) -> ChatSeat:
    """An ED seat moved to ``stage`` through the allowed transitions."""
    visit = chat_arrive(campaign=ed_campaign(), arrival=Arrival(provider="local", worker_id="w1"))
    seat = visit.seat
    assert seat is not None and seat.stage == Stage.SITUATION
    for step in _path(seat.stage, stage):
        seat_set_stage(seat=seat, stage=step, reason="test")
    return seat


def test_the_seat_table_names_every_stage_and_ends_exactly_the_paid_stages():
    assert set(SEAT_TRANSITIONS) == set(Stage.values)
    assert all(to <= set(Stage.values) for to in SEAT_TRANSITIONS.values())
    ended = {stage for stage, to in SEAT_TRANSITIONS.items() if not to}
    assert ended == set(ChatSeat.PAID_STAGES)
    for stage in Stage.values:  # an open seat can still move; an ended one never
        assert ChatSeat(stage=stage).is_open == (stage not in ended)


def test_the_dialogue_table_keeps_a_complete_or_partial_conversation_as_it_is():
    assert set(DIALOGUE_TRANSITIONS) == set(Status.values)
    ended = {status for status, to in DIALOGUE_TRANSITIONS.items() if not to}
    assert ended == {Status.COMPLETE, Status.PARTIAL}
    assert DIALOGUE_TRANSITIONS[Status.ACTIVE] == ended


@pytest.mark.parametrize(
    ("current", "target"),
    [
        (Stage.DONE, Stage.WAITING),
        (Stage.DONE, Stage.CHATTING),
        (Stage.LEFT, Stage.CHATTING),
        (Stage.RELEASED, Stage.WAITING),
        (Stage.RATING, Stage.CHATTING),
        (Stage.CHATTING, Stage.SITUATION),
        (Stage.WAITING, Stage.DONE),
        (Stage.SITUATION, Stage.CHATTING),
        (Stage.CHATTING, Stage.CHATTING),
    ],
)
def test_a_forbidden_seat_move_is_refused_and_changes_nothing(current, target):
    seat = _seat_in(current)
    before = ChatSeat.objects.values().get(pk=seat.pk)
    seat.waiting_since = timezone.now() - timedelta(days=1)  # would be saved with the move
    with pytest.raises(Conflict, match=f"'{current}' cannot move to '{target}'"):
        seat_set_stage(seat=seat, stage=target, reason="nope", fields=["waiting_since"])
    assert seat.stage == current
    assert ChatSeat.objects.values().get(pk=seat.pk) == before


def test_an_ending_stage_records_why_and_when_and_an_open_one_neither():
    seat = _seat_in(Stage.CHATTING)
    assert seat.ended_at is None and seat.ended_reason == ""
    seat_set_stage(seat=seat, stage=Stage.RATING)
    seat.refresh_from_db()
    assert seat.stage == Stage.RATING and seat.ended_at is None and seat.ended_reason == ""
    moment = timezone.now() - timedelta(minutes=3)
    seat_set_stage(seat=seat, stage=Stage.DONE, reason="complete", now=moment)
    seat.refresh_from_db()
    assert (seat.stage, seat.ended_reason, seat.ended_at) == (Stage.DONE, "complete", moment)


def test_the_caller_s_other_fields_are_saved_with_the_move():
    seat = _seat_in(Stage.SITUATION)
    since = timezone.now() - timedelta(seconds=5)
    seat.waiting_since = since
    seat_set_stage(seat=seat, stage=Stage.WAITING, fields=["waiting_since"])
    stored = ChatSeat.objects.get(pk=seat.pk)
    assert (stored.stage, stored.waiting_since) == (Stage.WAITING, since)


def _dialogue(status: str) -> Dialogue:
    campaign = ed_campaign()
    dialogue = Dialogue.objects.create(campaign=campaign, key="d-1", status=Status.ACTIVE)
    if status != Status.ACTIVE:
        dialogue_set_status(dialogue=dialogue, status=status)
    return dialogue


@pytest.mark.parametrize(
    ("current", "target"),
    [
        (Status.COMPLETE, Status.ACTIVE),
        (Status.COMPLETE, Status.PARTIAL),
        (Status.PARTIAL, Status.ACTIVE),
        (Status.PARTIAL, Status.COMPLETE),
        (Status.ACTIVE, Status.ACTIVE),
    ],
)
def test_a_forbidden_dialogue_move_is_refused_and_changes_nothing(current, target):
    dialogue = _dialogue(current)
    before = Dialogue.objects.values().get(pk=dialogue.pk)
    dialogue.flagged = True  # would be saved with the move
    with pytest.raises(Conflict, match=f"'{current}' dialogue cannot become '{target}'"):
        dialogue_set_status(dialogue=dialogue, status=target, fields=["flagged"])
    assert dialogue.status == current
    assert Dialogue.objects.values().get(pk=dialogue.pk) == before


def test_ending_a_conversation_records_when_with_the_caller_s_fields():
    dialogue = _dialogue(Status.ACTIVE)
    moment = timezone.now() - timedelta(minutes=1)
    dialogue.flags = ["partner_left"]
    dialogue_set_status(dialogue=dialogue, status=Status.PARTIAL, now=moment, fields=["flags"])
    stored = Dialogue.objects.get(pk=dialogue.pk)
    assert (stored.status, stored.ended_at, stored.flags) == (
        Status.PARTIAL,
        moment,
        ["partner_left"],
    )
