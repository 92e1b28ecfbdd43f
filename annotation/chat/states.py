"""The states of live chats: a seat's stage and a dialogue's status, and the one place each moves.

Like an assignment's status (``annotation.services.assignments``), each moves only along its
transition table, through ``seat_set_stage`` or ``dialogue_set_status``: an ended seat stays
ended and a complete or partial conversation stays so. A move the table does not allow raises
Conflict and changes nothing. Seats are created in ``situation`` (ED) or ``chatting`` (SSA)
and live dialogues in ``active`` (``annotation.chat.seats``, ``annotation.chat.empathetic``);
imported dialogues are ``complete`` from the start. docs/chat.md, "States", tells who moves
them.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from django.utils import timezone

from annotation.exceptions import Conflict
from annotation.models import ChatSeat, Dialogue

_St = ChatSeat.Stage
SEAT_TRANSITIONS: dict[str, set[str]] = {
    _St.SITUATION: {_St.WAITING},
    _St.WAITING: {_St.CHATTING, _St.RELEASED},
    _St.CHATTING: {_St.RATING, _St.DONE, _St.PARTNER_LEFT, _St.LEFT, _St.FAILED},
    _St.RATING: {_St.DONE},
    _St.PARTNER_LEFT: set(),
    _St.LEFT: set(),
    _St.RELEASED: set(),
    _St.FAILED: set(),
    _St.DONE: set(),
}

_Ds = Dialogue.Status
DIALOGUE_TRANSITIONS: dict[str, set[str]] = {
    _Ds.ACTIVE: {_Ds.COMPLETE, _Ds.PARTIAL},
    _Ds.COMPLETE: set(),
    _Ds.PARTIAL: set(),
}


def seat_set_stage(
    *,
    seat: ChatSeat,
    stage: str,
    reason: str = "",
    now: datetime | None = None,
    fields: Sequence[str] = (),
) -> None:
    """Move the seat to ``stage`` if ``SEAT_TRANSITIONS`` allows it, else raise Conflict.

    ``fields`` are other fields the caller set on the seat, saved in the same UPDATE. A stage
    with no way out ends the seat: its ``reason`` and time are recorded. The caller holds the
    lock its conversation hangs on: the seat's row while it writes its situation, the
    campaign's in the lobby, the pair's in an ED chat, the dialogue's in a bot chat.
    """
    if stage not in SEAT_TRANSITIONS[seat.stage]:
        raise Conflict(f"A chat seat in stage '{seat.stage}' cannot move to '{stage}'.")
    seat.stage = stage
    update = ["stage", *fields]
    if not SEAT_TRANSITIONS[stage]:
        seat.ended_reason = reason
        seat.ended_at = now or timezone.now()
        update += ["ended_reason", "ended_at"]
    seat.save(update_fields=update)


def dialogue_set_status(
    *,
    dialogue: Dialogue,
    status: str,
    now: datetime | None = None,
    fields: Sequence[str] = (),
) -> None:
    """Move the dialogue to ``status`` if ``DIALOGUE_TRANSITIONS`` allows it, else raise
    Conflict; a status that ends the conversation records when.

    ``fields`` are other fields the caller set on the dialogue, saved in the same UPDATE. The
    caller holds the pair's row lock (ED) or the dialogue's (interactive SSA).
    """
    if status not in DIALOGUE_TRANSITIONS[dialogue.status]:
        raise Conflict(f"A '{dialogue.status}' dialogue cannot become '{status}'.")
    dialogue.status = status
    update = ["status", *fields]
    if not DIALOGUE_TRANSITIONS[status]:
        dialogue.ended_at = now or timezone.now()
        update.append("ended_at")
    dialogue.save(update_fields=update)


def dialogue_flag(dialogue: Dialogue, reason: str) -> None:
    """Flag the dialogue for review with ``reason`` (pasted text, a partner who left, a bot
    that failed), each reason once; the caller saves ``flagged`` and ``flags``."""
    dialogue.flagged = True
    if reason not in dialogue.flags:
        dialogue.flags = [*dialogue.flags, reason]
