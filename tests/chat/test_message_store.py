"""The one path a worker's message takes into a live chat, whichever the mode (ED, SSA):
stored once per client id, checked before anything is written, the mode's turn rule last."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from annotation.models import Assignment, Dialogue, Utterance
from chat.frames import NotYours, OutOfTurn
from chat.messages import message_store
from chat.models import ChatSeat
from chat.seats import chat_arrive
from chat.states import seat_set_stage
from evalsite.errors import Conflict, InvalidAnswer
from providers import Arrival
from tests.chat.helpers import ed_campaign
from tests.factories import WorkerFactory

pytestmark = pytest.mark.django_db

MAX_CHARS = 50


@pytest.fixture
def chat() -> tuple[ChatSeat, Dialogue]:
    """A seat chatting in an active conversation (the mode's own tables left aside)."""
    visit = chat_arrive(campaign=ed_campaign(), arrival=Arrival(provider="local", worker_id="w1"))
    assert visit.seat is not None
    seat = ChatSeat.objects.select_related("worker", "assignment").get(pk=visit.seat.pk)
    seat_set_stage(seat=seat, stage=ChatSeat.Stage.WAITING)
    seat_set_stage(seat=seat, stage=ChatSeat.Stage.CHATTING)
    dialogue = Dialogue.objects.create(
        campaign=seat.campaign, key="d-1", status=Dialogue.Status.ACTIVE
    )
    return seat, dialogue


class Turns:
    """A mode's turn rule: the next index, or a refusal; counts how often it was asked."""

    def __init__(self, dialogue: Dialogue, refusal: str = "") -> None:
        self.dialogue, self.refusal, self.asked = dialogue, refusal, 0

    def __call__(self) -> int:
        self.asked += 1
        if self.refusal:
            raise OutOfTurn(self.refusal)
        return self.dialogue.utterances.count()


def store(seat: ChatSeat, dialogue: Dialogue | None, **given: Any):
    """Call message_store as a mode does, with a message that passes unless told otherwise."""
    client_id = given.pop("client_id", "m1")
    known_in = dialogue or Dialogue.objects.get()
    arguments: dict[str, Any] = {
        "seat": seat,
        "dialogue": dialogue,
        "conversations": {known_in.pk},
        "speaker": "speaker",
        "known": Utterance.objects.filter(dialogue=known_in, client_id=client_id).first(),
        "turn": Turns(known_in),
        "client_id": client_id,
        "text": "Hello there.",
        "signals": {},
        "dialogue_id": None,
        "role": "",
        "max_chars": MAX_CHARS,
        "now": timezone.now(),
    }
    return message_store(**(arguments | given))


def test_a_message_is_stored_once_under_its_client_id_and_trimmed(chat):
    seat, dialogue = chat
    sent = store(seat, dialogue, text="  Hello there.  ", signals={"typing_ms": 900})
    assert (sent.index, sent.created, sent.notify) == (0, True, [seat.pk])
    again = store(seat, dialogue, text="Hello there. ")
    assert (again.index, again.created, again.notify) == (0, False, [])
    with pytest.raises(Conflict, match="already used for another message"):
        store(seat, dialogue, text="Something else.")
    (stored,) = Utterance.objects.all()
    assert (stored.dialogue_id, stored.index, stored.speaker, stored.worker_id) == (
        dialogue.pk,
        0,
        "speaker",
        seat.worker_id,
    )
    assert (stored.text, stored.signals) == ("Hello there.", {"typing_ms": 900})


def test_another_worker_s_message_id_is_a_conflict(chat):
    seat, dialogue = chat
    Utterance.objects.create(
        dialogue=dialogue,
        index=0,
        speaker="listener",
        worker=WorkerFactory(),
        text="Hi.",
        client_id="theirs",
    )
    with pytest.raises(Conflict):
        store(seat, dialogue, client_id="theirs", text="Hi.")
    assert Utterance.objects.count() == 1


def test_a_resend_is_acknowledged_after_the_conversation_ended(chat):
    seat, dialogue = chat
    store(seat, dialogue)
    seat_set_stage(seat=seat, stage=ChatSeat.Stage.DONE, reason="complete")
    assert not store(seat, dialogue).created
    with pytest.raises(OutOfTurn, match="has ended"):
        store(seat, dialogue, client_id="m2")
    with pytest.raises(OutOfTurn, match="has ended"):
        store(seat, None, client_id="m3")
    assert Utterance.objects.count() == 1


@pytest.mark.parametrize(
    ("given", "refused"),
    [
        ({"dialogue_id": 10**9}, NotYours),
        ({"role": "listener"}, NotYours),
        ({"text": "  \n "}, InvalidAnswer),
        ({"text": "x" * (MAX_CHARS + 1)}, InvalidAnswer),
    ],
)
def test_a_refused_message_stores_nothing_and_the_turn_rule_is_not_asked(chat, given, refused):
    seat, dialogue = chat
    turns = Turns(dialogue)
    with pytest.raises(refused):
        store(seat, dialogue, turn=turns, signals={"pastes": 1}, **given)
    assert turns.asked == 0
    assert Utterance.objects.count() == 0
    dialogue.refresh_from_db()
    assert not dialogue.flagged


def test_the_mode_s_turn_rule_decides_last_and_gives_the_index(chat):
    seat, dialogue = chat
    waiting = Turns(dialogue, refusal="Please wait for your partner's message.")
    with pytest.raises(OutOfTurn, match="wait for your partner"):
        store(seat, dialogue, turn=waiting, dialogue_id=dialogue.pk, role="speaker")
    assert waiting.asked == 1 and Utterance.objects.count() == 0
    sent = store(seat, dialogue, turn=lambda: 7, dialogue_id=dialogue.pk, role="speaker")
    assert sent.index == 7
    assert Utterance.objects.get().index == 7


def test_pasted_text_flags_the_dialogue_and_the_assignment_is_kept_active(chat):
    seat, dialogue = chat
    long_ago = timezone.now() - timedelta(minutes=10)
    Assignment.objects.filter(pk=seat.assignment_id).update(last_activity_at=long_ago)
    seat.assignment.last_activity_at = long_ago
    now = timezone.now()
    store(seat, dialogue, signals={"pastes": 1, "pasted_chars": 12}, now=now)
    dialogue.refresh_from_db()
    assert dialogue.flagged and dialogue.flags == ["paste"]
    assert Assignment.objects.get(pk=seat.assignment_id).last_activity_at == now
