"""Live chats over websockets: ED collection between two workers, interactive SSA, the arena.

Modules: ``frames`` (what the browser may send, validated), ``seats`` (arrival, sockets,
the state a worker sees), ``states`` (the transition tables of seat stages and dialogue
statuses), ``messages`` (a worker's message, stored the same way in every mode),
``empathetic`` (situations, lobby, turns, departures), ``bot`` (interactive SSA: bot turns as
Celery tasks, labels), ``streaming`` (a model's reply streamed to the page), ``arena_start``,
``arena``, ``arena_votes``, ``arena_view`` and ``arena_moderation`` (two hidden models: the
pair draw, both replies, votes, the reveal, what the page shows, the moderation hook),
``notify`` (channel-layer groups), ``human_ssa`` (collected
conversations into a static SSA campaign). The consumer
(``chat.consumers``) parses a frame and calls ``frame_handle``; docs/chat.md tells the
whole story.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from django.utils import timezone

from chat import arena, arena_votes, bot, empathetic
from chat.frames import Frame, FrameError, Outcome
from chat.models import ChatSeat
from chat.seats import protocol_of
from chat.snapshot import chat_state

# How each chat mode a protocol declares (``LiveChat.chat_mode``) handles a frame.
HANDLERS: dict[str, Callable[..., Outcome]] = {
    "pair": empathetic.frame_handle,
    "bot": bot.frame_handle,
    "side_by_side": arena_votes.frame_handle,
}


def frame_handle(
    *, seat_id: int, frame: Frame, mode: str = "", now: datetime | None = None
) -> Outcome:
    """Carry out one validated frame from the seat's socket; raise AnnotationError to refuse.

    ``mode`` is the seat's campaign's chat mode if the caller knows it (the consumer does,
    from the state it sent). A refused frame changes nothing (each service checks before it
    writes, in one transaction).
    """
    now = now or timezone.now()
    if not mode:
        seat = ChatSeat.objects.select_related("campaign").get(pk=seat_id)
        mode = protocol_of(seat.campaign)[0].chat_mode
    return HANDLERS[mode](seat_id=seat_id, frame=frame, now=now)


def seat_tick(*, seat_id: int, now: datetime | None = None) -> list[int]:
    """Do what time decides for a seat (its consumer calls this a few times per heartbeat):
    pair it or release it from the lobby, notice a departed partner, expire a late bot turn.
    Return the seats whose view changed."""
    now = now or timezone.now()
    seat = ChatSeat.objects.select_related("campaign").get(pk=seat_id)
    if seat.stage == ChatSeat.Stage.WAITING:
        return empathetic.lobby_release_expired(seat_id=seat_id, now=now) or (
            empathetic.lobby_pair(seat_id=seat_id, now=now)
        )
    if seat.stage == ChatSeat.Stage.CHATTING:
        if seat.pair_id is not None:
            return empathetic.partner_check(seat_id=seat_id, now=now)
        if seat.endpoint_b:
            return arena.arena_expire(seat_id=seat_id, now=now)
        if seat.dialogue_id is not None:
            return bot.bot_turn_expire(seat_id=seat_id, now=now)
    return []


__all__ = ["Frame", "FrameError", "Outcome", "chat_state", "frame_handle", "seat_tick"]
