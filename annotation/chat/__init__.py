"""Live chats over websockets: ED collection between two workers and interactive SSA.

Modules: ``frames`` (what the browser may send, validated), ``seats`` (arrival, sockets,
the state a worker sees), ``empathetic`` (situations, lobby, turns, departures), ``bot``
(interactive SSA: bot turns as Celery tasks, labels), ``notify`` (channel-layer groups),
``human_ssa`` (collected conversations into a static SSA campaign). The consumer
(``annotation.consumers``) parses a frame and calls ``frame_handle``; docs/chat.md tells the
whole story.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.utils import timezone

from annotation.chat import bot, empathetic
from annotation.chat.frames import Frame, FrameError, client_id_clean, signals_clean
from annotation.chat.seats import ED, chat_state, protocol_of
from annotation.models import ChatSeat


@dataclass(frozen=True)
class Outcome:
    """What a handled frame gives back: an ack for the sender and the seats to tell."""

    ack: dict[str, Any] | None = None
    notify: list[int] = field(default_factory=list)


def frame_handle(
    *, seat_id: int, frame: Frame, protocol: str = "", now: datetime | None = None
) -> Outcome:
    """Carry out one validated frame from the seat's socket; raise AnnotationError to refuse.

    ``protocol`` is the seat's campaign's protocol if the caller knows it (the consumer does,
    from the state it sent). A refused frame changes nothing (each service checks before it
    writes, in one transaction).
    """
    now = now or timezone.now()
    if not protocol:
        protocol = protocol_of(
            ChatSeat.objects.select_related("campaign").get(pk=seat_id).campaign
        )[0].name
    ed = protocol == ED
    if frame.type == "message":
        client_id = client_id_clean(frame.str_field("client_id", max_length=64))
        send = empathetic.utterance_send if ed else bot.ssa_message_send
        sent = send(
            seat_id=seat_id,
            client_id=client_id,
            text=frame.str_field("text"),
            signals=signals_clean(frame.data.get("signals")),
            dialogue_id=frame.int_field("dialogue", required=False),
            role=frame.str_field("role", required=False, max_length=20),
            now=now,
        )
        ack = {"type": "ack", "client_id": client_id, "index": sent.index, "stored": sent.created}
        return Outcome(ack=ack, notify=sent.notify)
    if frame.type == "situation" and ed:
        notify = empathetic.situation_submit(
            seat_id=seat_id,
            emotion=frame.str_field("emotion", max_length=32),
            text=frame.str_field("text"),
            signals=signals_clean(frame.data.get("signals")),
            now=now,
        )
        return Outcome(ack={"type": "ack", "what": "situation"}, notify=notify)
    if frame.type == "end":
        dialogue = frame.int_field("dialogue", required=False)
        if ed:
            return Outcome(
                notify=empathetic.conversation_end(seat_id=seat_id, dialogue_id=dialogue, now=now)
            )
        seat_dialogue = ChatSeat.objects.values_list("dialogue", flat=True).get(pk=seat_id)
        if dialogue is not None and dialogue != seat_dialogue:
            from annotation.chat.frames import NotYours

            raise NotYours("This names a conversation you are not in.")
        return Outcome(notify=bot.ssa_end(seat_id=seat_id, now=now))
    if frame.type == "label" and not ed:
        index = frame.int_field("index")
        assert index is not None
        answers = {k: frame.data.get(k) for k in ("sensible", "specific")}
        notify = bot.label_submit(seat_id=seat_id, index=index, answers=answers, now=now)
        return Outcome(ack={"type": "ack", "what": "label", "index": index}, notify=notify)
    if frame.type == "retry" and not ed:
        return Outcome(notify=bot.bot_turn_retry(seat_id=seat_id, now=now))
    raise FrameError(f"A {frame.type!r} frame has no meaning in this study.", code="unknown_type")


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
        if seat.dialogue_id is not None:
            return bot.bot_turn_expire(seat_id=seat_id, now=now)
    return []


__all__ = ["Frame", "FrameError", "Outcome", "chat_state", "frame_handle", "seat_tick"]
