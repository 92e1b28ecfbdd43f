"""Arena chats: the worker's message to two hidden models, their streamed replies, attention
checks, and the fair end when a model fails (docs/chat.md, "Arena"); the votes and the end
with the reveal are ``chat.arena_votes``.

A conversation is two dialogues, one per side (keys ``arena-<seat>-a`` and ``-b``; each
side's model sees only its own), with the same worker turns. Side A's dialogue is the seat's
``dialogue`` and holds the conversation's state in ``metadata["battle"]``: side B's dialogue,
the votes given so far (``votes``, by exchange), when each exchange's two replies were both
in (``replied``), and ``revealed_at``. Every change to the conversation happens under side
A's row lock (``chat.locks.seat_dialogue_lock`` or ``annotation.locks.dialogue_lock``),
side B's rows included.

The votes become Items and Judgments only when the conversation completes
(``chat.arena_votes``), in the same transaction that reveals the models: a vote after the reveal
cannot be given (the conversation is over), and a conversation a model failed never adds a
vote to the ranking (``arena_fail``: both sides partial, the worker paid).
"""

from __future__ import annotations

import logging
import random
import time
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.translation import gettext

from annotation.locks import dialogue_lock
from annotation.models import Dialogue, Utterance
from annotation.services.dialogues import dialogue_set_status, dialogue_update, utterance_add
from chat.arena_moderation import message_moderate
from chat.frames import OutOfTurn, Sent
from chat.locks import seat_dialogue_lock
from chat.messages import message_store
from chat.models import ChatSeat
from chat.notify import seats_notify
from chat.seats import older_than, protocol_of, seat_finish
from chat.streaming import reply_awaited, reply_streamed
from evalsite.celery import task_send
from modelhub.models import ModelEndpoint

logger = logging.getLogger(__name__)
# The signal that marks an answer as an attention check, not a model's reply.
ATTENTION = "attention"


# --- the conversation's state --------------------------------------------------------------


def battle(dialogue_a: Dialogue) -> dict[str, Any]:
    """Return the conversation's state kept on side A's dialogue."""
    return dict(dialogue_a.metadata.get("battle") or {})


def arena_locked(seat_id: int) -> tuple[ChatSeat, Dialogue, Dialogue]:
    """Return the seat and both sides' dialogues, side A's row locked."""
    seat = seat_dialogue_lock(seat_id)
    if seat is None or seat.dialogue is None:
        ChatSeat.objects.get(pk=seat_id)
        raise OutOfTurn("This chat has no conversation.")
    side_b = Dialogue.objects.get(pk=battle(seat.dialogue)["b"])
    return seat, seat.dialogue, side_b


def turns_of(dialogue: Dialogue) -> list[Utterance]:
    """Return a side's turns, oldest first."""
    return list(dialogue.utterances.order_by("index"))


def exchanges(utterances: list[Utterance]) -> int:
    """Return how many exchanges have both the worker's message and this side's reply."""
    return sum(1 for u in utterances if u.speaker == "bot")


# --- the worker's message ------------------------------------------------------------------


def _turn_check(
    seat: ChatSeat, side_a: Dialogue, side_b: Dialogue, parameters: dict, now: datetime
) -> int:
    """Return the new message's index if the worker may write now; raise OutOfTurn."""
    state = battle(side_a)
    if side_a.metadata.get("pending") or side_b.metadata.get("pending"):
        raise OutOfTurn(gettext("Please wait for both answers."))
    utterances = turns_of(side_a)
    done = exchanges(utterances)
    if done and exchanges(turns_of(side_b)) != done:
        raise OutOfTurn(gettext("Please wait for both answers."))
    if parameters["vote"] == "each" and done and str(done) not in state["votes"]:
        raise OutOfTurn(gettext("Please vote on the last answers before you continue."))
    if done >= parameters["max_turns"]:
        raise OutOfTurn(gettext("The conversation has reached its longest; please end it."))
    recent = [
        u for u in utterances if u.speaker == "user" and u.created_at > now - timedelta(minutes=1)
    ]
    if len(recent) >= parameters["messages_per_minute"]:
        raise OutOfTurn(gettext("You are sending messages very fast; please wait a moment."))
    return len(utterances)


def arena_message_send(
    *,
    seat_id: int,
    client_id: str,
    text: str,
    signals: dict[str, int],
    dialogue_id: int | None = None,
    role: str = "",
    now: datetime | None = None,
) -> Sent:
    """Store the worker's message on both sides and ask both models (idempotent per
    ``client_id``). A moderation hook, when the study names one, may refuse the message
    before anything is stored or sent to a model."""
    now = now or timezone.now()
    seat = ChatSeat.objects.select_related("campaign").get(pk=seat_id)
    _, parameters = protocol_of(seat.campaign)
    message_moderate(parameters["moderation"], text)
    with transaction.atomic():
        seat, side_a, side_b = arena_locked(seat_id)
        a_turns = turns_of(side_a)
        sent = message_store(
            seat=seat,
            dialogue=side_a,
            conversations={side_a.pk, side_b.pk},
            speaker="user",
            known=next((u for u in a_turns if u.client_id == client_id), None),
            turn=lambda: _turn_check(seat, side_a, side_b, parameters, now),
            client_id=client_id,
            text=text,
            signals=signals,
            dialogue_id=dialogue_id,
            role=role,
            max_chars=parameters["utterance_max_chars"],
            now=now,
        )
        if sent.created:
            stored = text.strip()
            utterance_add(
                dialogue=side_b,
                index=sent.index,
                speaker="user",
                worker=seat.worker,
                text=stored,
                signals=signals,
                client_id=client_id,
            )
            since = now.isoformat()
            checked = _attention_side(parameters, side_a, side_b)
            for side in (side_a, side_b):
                if side is checked:
                    attention_add(side, sent.index + 1, parameters)
                    continue
                dialogue_update(
                    side, metadata={"pending": {"index": sent.index + 1, "since": since}}
                )
                _reply_enqueue(side.pk, sent.index + 1, since)
    return sent


def _attention_side(
    parameters: dict[str, Any], side_a: Dialogue, side_b: Dialogue
) -> Dialogue | None:
    """Return the side whose answer to this message is an attention check (drawn at the
    study's ``attention_rate``), or None."""
    if random.random() >= parameters["attention_rate"]:
        return None
    return random.choice((side_a, side_b))


def attention_add(side: Dialogue, index: int, parameters: dict[str, Any]) -> None:
    """Store an attention check as the side's answer ``index``: no model writes it, and the
    side's model never sees that exchange (``model_turns``)."""
    label = side.metadata["side"].upper()
    text = gettext(parameters["attention_text"]) % {"side": label}
    utterance_add(dialogue=side, index=index, speaker="bot", text=text, signals={ATTENTION: True})


def model_turns(rows: list[tuple[str, str, dict[str, Any]]]) -> list[str]:
    """Return the texts a side's model is given from its turns (text, speaker, signals),
    oldest first: an exchange answered by an attention check is left out whole."""
    turns: list[str] = []
    for text, speaker, signals in rows:
        if speaker == "bot" and (signals or {}).get(ATTENTION):
            turns.pop()  # the worker's message this check answered
            continue
        turns.append(text)
    return turns


def _reply_enqueue(dialogue_id: int, index: int, attempt: str) -> None:
    transaction.on_commit(
        lambda: task_send("chat.tasks.chat_arena_turn", dialogue_id, index, attempt)
    )


# --- the models' replies (the Celery task) ---------------------------------------------------


def arena_reply_run(*, dialogue_id: int, index: int, attempt: str | None = None) -> dict[str, Any]:
    """Generate and store one side's reply ``index`` if it is still awaited; tell the seat.

    Runs in the Celery task on the ``inference`` queue, one task per side, so the two
    models answer at once; each streams its text to its pane (partials carry the side). A
    model error ends the conversation fairly (``arena_fail``).
    """
    rows = list(
        Utterance.objects.filter(dialogue_id=dialogue_id, index__lt=index)
        .order_by("index")
        .values_list("text", "speaker", "signals", "dialogue__metadata")
    )
    metadata = rows[-1][3] if rows else {}
    if not reply_awaited(metadata, index, attempt):
        return {"stored": False, "reason": "not awaited"}
    seat_id, side = int(metadata["seat"]), str(metadata["side"])
    turns = model_turns([row[:3] for row in rows])
    started = time.perf_counter()
    try:
        endpoint = ModelEndpoint.objects.get(name=metadata["model"])
        reply, first_ms = reply_streamed(endpoint, turns, seat_id=seat_id, index=index, side=side)
        if not reply.text.strip():
            raise ValueError("the model returned an empty reply")
    except Exception as exc:  # any model failure ends the conversation fairly, never a crash
        logger.warning("arena reply %s of dialogue %s failed: %s", index, dialogue_id, exc)
        error = f"{type(exc).__name__}: {exc}"
        if arena_fail(dialogue_id=dialogue_id, index=index, error=error, attempt=attempt):
            seats_notify([seat_id])
        return {"stored": False, "reason": "failed"}
    model_ms = (time.perf_counter() - started) * 1000
    signals = {
        "model_ms": round(model_ms, 3),
        "finish_reason": reply.finish_reason,
        "prompt_format": reply.prompt_format,
        "first_piece_ms": first_ms,
    }
    stored = arena_reply_store(
        dialogue_id=dialogue_id,
        index=index,
        text=reply.text.strip(),
        signals=signals,
        attempt=attempt,
    )
    if stored:
        seats_notify([seat_id], bot={"index": index, "side": side, "model_ms": model_ms})
    return {"stored": stored, "model_ms": model_ms, "finish_reason": reply.finish_reason}


def _sides_locked(dialogue_id: int) -> tuple[Dialogue, Dialogue, Dialogue]:
    """Lock side A of the conversation ``dialogue_id`` belongs to; return (side A, side B,
    the dialogue itself)."""
    own = Dialogue.objects.get(pk=dialogue_id)
    side_a = dialogue_lock(own.metadata.get("a", own.pk), with_campaign=True)
    side_b = Dialogue.objects.get(pk=battle(side_a)["b"])
    return side_a, side_b, side_a if own.pk == side_a.pk else side_b


def arena_reply_store(
    *,
    dialogue_id: int,
    index: int,
    text: str,
    signals: dict[str, Any],
    attempt: str | None = None,
    now: datetime | None = None,
) -> bool:
    """Store one side's reply if it is still awaited; return whether stored. When both
    replies of the exchange are in, record when (a vote's time counts from then)."""
    now = now or timezone.now()
    with transaction.atomic():
        side_a, side_b, own = _sides_locked(dialogue_id)
        if not reply_awaited(own.metadata, index, attempt):
            return False
        utterance_add(dialogue=own, index=index, speaker="bot", text=text, signals=signals)
        dialogue_update(own, metadata={"pending": None})
        if not side_a.metadata.get("pending") and not side_b.metadata.get("pending"):
            state = battle(side_a)
            state["replied"] = {**state["replied"], str((index + 1) // 2): now.isoformat()}
            dialogue_update(side_a, metadata={"battle": state})
    return True


def arena_fail(
    *,
    dialogue_id: int,
    index: int,
    error: str,
    reason: str = "bot_failed",
    attempt: str | None = None,
    now: datetime | None = None,
) -> bool:
    """End the conversation because one side's reply ``index`` failed; return whether it was
    still awaited. Both sides become partial (the failing one flagged with ``reason``, the
    other ``other_failed``), the seat ends ``failed`` (paid), and the votes held so far
    never become judgments: the conversation is left out of the ranking whole."""
    now = now or timezone.now()
    with transaction.atomic():
        side_a, side_b, own = _sides_locked(dialogue_id)
        if not reply_awaited(own.metadata, index, attempt):
            return False
        failed = {"index": index, "error": error[:500], "reason": reason}
        for side in (side_a, side_b):
            flag = reason if side.pk == own.pk else "other_failed"
            extra = {"failed": failed} if side.pk == own.pk else {}
            dialogue_update(side, metadata={"pending": None, **extra}, flag=flag)
            dialogue_set_status(dialogue=side, status=Dialogue.Status.PARTIAL, now=now)
        seat = ChatSeat.objects.select_related("assignment").get(pk=side_a.metadata["seat"])
        if seat.stage == ChatSeat.Stage.CHATTING:
            seat_finish(seat, ChatSeat.Stage.FAILED, reason, now)
    return True


def arena_expire(*, seat_id: int, now: datetime | None = None) -> list[int]:
    """Fail a side whose reply is past the campaign's ``reply_deadline_s``."""
    now = now or timezone.now()
    seat = ChatSeat.objects.select_related("campaign", "dialogue").get(pk=seat_id)
    if seat.dialogue is None or seat.stage != ChatSeat.Stage.CHATTING:
        return []
    _, parameters = protocol_of(seat.campaign)
    sides = [seat.dialogue, Dialogue.objects.get(pk=battle(seat.dialogue)["b"])]
    for side in sides:
        pending = side.metadata.get("pending")
        since = parse_datetime(pending["since"]) if pending else None
        if since is None or not older_than(since, now, parameters["reply_deadline_s"]):
            continue
        error = f"no reply within {parameters['reply_deadline_s']} s"
        if arena_fail(
            dialogue_id=side.pk, index=pending["index"], error=error, reason="bot_timeout", now=now
        ):
            return [seat_id]
    return []
