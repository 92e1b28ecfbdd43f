"""A chat seat's stage and the one place it moves.

Like an assignment's status (``annotation.services.assignments``) and a dialogue's
(``annotation.services.dialogues``), a seat moves only along ``SEAT_TRANSITIONS``, through
``seat_set_stage``: an ended seat stays ended. A move the table does not allow raises Conflict
and changes nothing. Seats are created in ``situation`` (ED) or ``chatting`` (SSA)
(``chat.seats``). docs/chat.md, "States", tells who moves them.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from django.utils import timezone

from chat.models import ChatSeat
from evalsite.errors import Conflict

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
