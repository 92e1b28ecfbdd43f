"""Interactive SSA: the worker's turns, the bot's turns (a Celery task), labels, the end,
and the closing ratings when the campaign asks for them (``end_ratings``).

A worker's message is stored and, in the same transaction, the dialogue is marked as waiting
for the bot's turn (``metadata["pending"]``); the task ``chat_bot_turn`` is queued on commit.
The task stores the bot's turn only if that turn is still awaited (so a redelivered or late
task never adds a turn twice or after the deadline), together with the Item its labels hang
on, then tells the seat. Locks: the Dialogue row, for every change to one conversation.
"""

from __future__ import annotations

import logging
import time
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.translation import gettext

from annotation.locks import dialogue_lock
from annotation.models import Dialogue, Judgment, Utterance
from annotation.protocols.ssa_interactive import end_ratings_clean
from annotation.services import items_add, judgment_label
from annotation.services.dialogues import (
    dialogue_set_status,
    dialogue_update,
    utterance_add,
)
from chat.frames import (
    Frame,
    NotYours,
    Outcome,
    OutOfTurn,
    Sent,
    frame_unknown,
    message_fields,
    message_outcome,
)
from chat.locks import seat_dialogue_lock
from chat.messages import message_store
from chat.models import ChatSeat
from chat.notify import seats_notify
from chat.seats import bot_turn_enqueue, older_than, protocol_of, seat_finish
from chat.snapshot import bot_labels, bot_turn_item, bot_turn_key, reply_fits
from chat.states import seat_set_stage
from chat.streaming import reply_awaited, reply_streamed
from evalsite.errors import Conflict, NotFound
from modelhub.models import ModelEndpoint

logger = logging.getLogger(__name__)


def frame_handle(*, seat_id: int, frame: Frame, now: datetime) -> Outcome:
    """Carry out one validated frame of a bot chat (interactive SSA): a message, a bot turn's
    labels, a retry of a failed bot turn, the end; raise AnnotationError to refuse."""
    if frame.type == "message":
        fields = message_fields(frame)
        sent = ssa_message_send(seat_id=seat_id, now=now, **fields)
        return message_outcome(fields["client_id"], sent)
    if frame.type == "label":
        index = frame.int_field("index")
        assert index is not None
        answers = {k: frame.data.get(k) for k in ("sensible", "specific")}
        notify = label_submit(seat_id=seat_id, index=index, answers=answers, now=now)
        return Outcome(ack={"type": "ack", "what": "label", "index": index}, notify=notify)
    if frame.type == "retry":
        return Outcome(notify=bot_turn_retry(seat_id=seat_id, now=now))
    if frame.type == "rating":
        notify = end_ratings_submit(
            seat_id=seat_id,
            ratings=frame.data.get("ratings"),
            comment=frame.data.get("comment"),
            now=now,
        )
        return Outcome(ack={"type": "ack", "what": "rating"}, notify=notify)
    if frame.type == "end":
        dialogue = frame.int_field("dialogue", required=False)
        seat_dialogue = ChatSeat.objects.values_list("dialogue", flat=True).get(pk=seat_id)
        if dialogue is not None and dialogue != seat_dialogue:
            raise NotYours("This names a conversation you are not in.")
        return Outcome(notify=ssa_end(seat_id=seat_id, now=now))
    raise frame_unknown(frame)


def _locked(seat_id: int) -> tuple[ChatSeat, Dialogue]:
    """Return the seat and its dialogue, the dialogue's row locked (one query)."""
    seat = seat_dialogue_lock(seat_id)
    if seat is None or seat.dialogue is None:
        ChatSeat.objects.get(pk=seat_id)  # DoesNotExist for a seat that is not there
        raise OutOfTurn("This chat has no conversation.")
    return seat, seat.dialogue


def ssa_message_send(
    *,
    seat_id: int,
    client_id: str,
    text: str,
    signals: dict[str, int],
    dialogue_id: int | None = None,
    role: str = "",
    now: datetime | None = None,
) -> Sent:
    """Store the worker's turn and ask the bot for its reply (idempotent per ``client_id``).

    ``message_store`` does what both chat modes do (a resend stored once, the frame's
    conversation and role, the text, pasted text flagged); the bot's turn rule refuses a turn
    while the bot is answering, before its last turn is labeled, or whose reply would not fit
    within ``max_turns``.
    """
    now = now or timezone.now()
    with transaction.atomic():
        seat, dialogue = _locked(seat_id)
        _, parameters = protocol_of(seat.campaign)
        utterances = list(dialogue.utterances.order_by("index"))

        def turn() -> int:
            if dialogue.metadata.get("pending"):
                raise OutOfTurn(gettext("Please wait for the bot's reply."))
            if utterances[-1].speaker != "bot":
                raise OutOfTurn(
                    gettext("The bot has not answered yet: ask it again or end the chat.")
                )
            if _unlabeled(seat, dialogue, utterances):
                raise OutOfTurn(gettext("Please label the bot's last reply before you continue."))
            if not reply_fits(len(utterances), parameters):
                raise OutOfTurn(gettext("The conversation has reached its longest; please end it."))
            return len(utterances)

        sent = message_store(
            seat=seat,
            dialogue=dialogue,
            conversations={dialogue.pk},
            speaker="user",
            known=next((u for u in utterances if u.client_id == client_id), None),
            turn=turn,
            client_id=client_id,
            text=text,
            signals=signals,
            dialogue_id=dialogue_id,
            role=role,
            max_chars=parameters["utterance_max_chars"],
            now=now,
        )
        if sent.created:
            since = now.isoformat()
            dialogue_update(
                dialogue, metadata={"pending": {"index": sent.index + 1, "since": since}}
            )
            bot_turn_enqueue(dialogue.pk, sent.index + 1, since)
    return sent


def _unlabeled(seat: ChatSeat, dialogue: Dialogue, utterances: list[Utterance]) -> list[int]:
    labels = bot_labels(seat, dialogue)
    return [
        u.index for u in utterances if u.speaker == "bot" and u.index >= 1 and u.index not in labels
    ]


def bot_turn_run(*, dialogue_id: int, index: int, attempt: str | None = None) -> dict[str, Any]:
    """Generate and store the bot's turn ``index`` if it is still awaited; tell the seat.

    Runs in the Celery task (the ``inference`` queue): the model answers with its own
    decoding parameters (preset, repetition filter), streamed: the text so far goes to the
    worker's page as partial frames while the model writes (``reply_streamed``), and the turn is
    stored once, whole, when the reply ends. A model error, mid-stream too, flags the
    dialogue and tells the worker; nothing is stored for that turn. ``attempt`` (when the turn
    was asked for) ties the task to one request: a late reply to a request given up is dropped.
    """
    # The turns so far and the dialogue's state in one read (a bot turn has turns before it).
    rows = list(
        Utterance.objects.filter(dialogue_id=dialogue_id, index__lt=index)
        .order_by("index")
        .values_list("text", "dialogue__metadata")
    )
    metadata = rows[-1][1] if rows else {}
    if not reply_awaited(metadata, index, attempt):
        return {"stored": False, "reason": "not awaited"}
    seat_id = int(metadata["seat"])
    turns = [text for text, _ in rows]
    started = time.perf_counter()
    try:
        endpoint = ModelEndpoint.objects.get(name=metadata["model"])
        reply, first_ms = reply_streamed(endpoint, turns, seat_id=seat_id, index=index)
        if not reply.text.strip():
            raise ValueError("the model returned an empty turn")
    except Exception as exc:  # any model failure ends this turn with a flag, never a crash
        logger.warning("bot turn %s of dialogue %s failed: %s", index, dialogue_id, exc)
        if bot_turn_fail(
            dialogue_id=dialogue_id,
            index=index,
            error=f"{type(exc).__name__}: {exc}",
            attempt=attempt,
        ):
            seats_notify([seat_id])
        return {"stored": False, "reason": "failed"}
    model_ms = (time.perf_counter() - started) * 1000
    stored = bot_turn_store(
        dialogue_id=dialogue_id,
        index=index,
        text=reply.text.strip(),
        model_ms=model_ms,
        context=turns,
        attempt=attempt,
        reply={
            "finish_reason": reply.finish_reason,
            "prompt_format": reply.prompt_format,
            "first_piece_ms": first_ms,
        },
    )
    if stored:
        seats_notify([seat_id], bot={"index": index, "model_ms": model_ms})
    return {"stored": stored, "model_ms": model_ms, "finish_reason": reply.finish_reason}


def bot_turn_store(
    *,
    dialogue_id: int,
    index: int,
    text: str,
    model_ms: float,
    context: list[str],
    attempt: str | None = None,
    reply: dict[str, Any] | None = None,
    now: datetime | None = None,
) -> bool:
    """Store the bot's turn and its Item if the turn is still awaited; return whether stored.

    ``context`` is the turns the model answered (they cannot change while the turn is
    awaited: the worker may not write then). ``reply`` is what the model said of its reply
    (``finish_reason``: "length" when cut at ``max_new_tokens``; ``prompt_format``;
    ``first_piece_ms``), kept in the utterance's signals; a truncated turn's item says so.
    """
    reply = reply or {}
    now = now or timezone.now()
    with transaction.atomic():
        dialogue = dialogue_lock(dialogue_id, with_campaign=True)
        assert dialogue.campaign is not None  # a live chat's dialogue is a campaign's
        if not reply_awaited(dialogue.metadata, index, attempt):
            return False
        utterance_add(
            dialogue=dialogue,
            index=index,
            speaker="bot",
            text=text,
            signals={"model_ms": round(model_ms, 3), **reply},
        )
        payload = {
            "context": context,
            "response": text,
            "model": dialogue.metadata["model"],
            "example": dialogue.key,
            "index": index,
            "finish_reason": reply.get("finish_reason", "stop"),
            "prompt_format": reply.get("prompt_format", ""),
        }
        items_add(campaign=dialogue.campaign, items=[(bot_turn_key(dialogue, index), payload)])
        dialogue_update(dialogue, metadata={"pending": None, "failed": None})
    return True


def bot_turn_fail(
    *,
    dialogue_id: int,
    index: int,
    error: str,
    reason: str = "bot_failed",
    attempt: str | None = None,
) -> bool:
    """Give up on the awaited bot turn ``index``: flag the dialogue; return whether it was
    still awaited."""
    with transaction.atomic():
        dialogue = dialogue_lock(dialogue_id)
        if not reply_awaited(dialogue.metadata, index, attempt):
            return False
        failed = {"index": index, "error": error[:500], "reason": reason}
        dialogue_update(dialogue, metadata={"pending": None, "failed": failed}, flag=reason)
    return True


def bot_turn_expire(*, seat_id: int, now: datetime | None = None) -> list[int]:
    """Fail the awaited bot turn if it is past the campaign's per-turn deadline."""
    now = now or timezone.now()
    seat = ChatSeat.objects.select_related("campaign", "dialogue").get(pk=seat_id)
    pending = seat.dialogue.metadata.get("pending") if seat.dialogue else None
    if not pending:
        return []
    _, parameters = protocol_of(seat.campaign)
    since = parse_datetime(pending["since"])
    if since is None or not older_than(since, now, parameters["bot_deadline_s"]):
        return []
    error = f"no reply within {parameters['bot_deadline_s']} s"
    assert seat.dialogue_id is not None
    if bot_turn_fail(
        dialogue_id=seat.dialogue_id, index=pending["index"], error=error, reason="bot_timeout"
    ):
        return [seat_id]
    return []


def bot_turn_retry(*, seat_id: int, now: datetime | None = None) -> list[int]:
    """Ask the bot again for the turn that failed."""
    now = now or timezone.now()
    with transaction.atomic():
        seat, dialogue = _locked(seat_id)
        failed = dialogue.metadata.get("failed")
        if seat.stage != ChatSeat.Stage.CHATTING or not failed:
            raise OutOfTurn(gettext("There is no failed bot turn to ask again."))
        index = dialogue.utterances.count()
        pending = {"index": index, "since": now.isoformat()}
        dialogue_update(dialogue, metadata={"failed": None, "pending": pending})
        bot_turn_enqueue(dialogue.pk, index, now.isoformat())
    return [seat_id]


def label_submit(
    *, seat_id: int, index: int, answers: dict[str, Any], now: datetime | None = None
) -> list[int]:
    """Store the worker's sensible/specific labels of bot turn ``index`` (idempotent).

    The labels are Judgments on the turn's Item, unique per (item, worker, question): the same
    labels again store nothing; different ones are refused.
    """
    now = now or timezone.now()
    with transaction.atomic():
        seat, dialogue = _locked(seat_id)
        protocol, parameters = protocol_of(seat.campaign)
        utterance = dialogue.utterances.filter(index=index).first()
        item = bot_turn_item(dialogue, index)
        if utterance is None or utterance.speaker != "bot" or index < 1 or item is None:
            raise NotFound("There is no bot turn to label at this position.")
        ended = seat.stage != ChatSeat.Stage.CHATTING
        if ended and not Judgment.objects.filter(item=item, worker=seat.worker).exists():
            protocol.clean_answers(parameters, answers)  # bad labels are said so first
            raise OutOfTurn(gettext("This conversation has ended."))
        # The labels pass every check a submitted answer passes, and count where it counts;
        # the same labels again (also after the chat ended) store nothing.
        stored = judgment_label(
            assignment=seat.assignment,
            item=item,
            answers=answers,
            shown_at=utterance.created_at,
            now=now,
        )
        if not stored.created:
            return []
        count = dialogue.utterances.count()
        if (
            not reply_fits(count, parameters)
            and not dialogue.metadata.get("pending")
            and not _unlabeled(seat, dialogue, list(dialogue.utterances.all()))
        ):
            _complete(seat, dialogue, now)
    return [seat_id]


def ssa_end(*, seat_id: int, now: datetime | None = None) -> list[int]:
    """End the chat: complete after ``min_turns`` with every bot turn labeled, or early after
    the bot failed (kept as partial and flagged; the worker is paid by policy)."""
    now = now or timezone.now()
    with transaction.atomic():
        seat, dialogue = _locked(seat_id)
        _, parameters = protocol_of(seat.campaign)
        if seat.stage != ChatSeat.Stage.CHATTING:
            raise OutOfTurn(gettext("This conversation has ended."))
        if dialogue.metadata.get("pending"):
            raise OutOfTurn(gettext("Please wait for the bot's reply."))
        utterances = list(dialogue.utterances.order_by("index"))
        if _unlabeled(seat, dialogue, utterances):
            raise OutOfTurn(gettext("Please label the bot's last reply first."))
        if len(utterances) >= parameters["min_turns"]:
            _complete(seat, dialogue, now)
        elif dialogue.metadata.get("failed"):
            dialogue_set_status(dialogue=dialogue, status=Dialogue.Status.PARTIAL, now=now)
            seat_finish(seat, ChatSeat.Stage.FAILED, "bot_failed", now)
        else:
            raise OutOfTurn(
                gettext("Please keep chatting: the chat can end after %(least)s turns.")
                % {"least": parameters["min_turns"]}
            )
    return [seat_id]


def _complete(seat: ChatSeat, dialogue: Dialogue, now: datetime) -> None:
    """Complete the conversation; the seat is done, or first rates the bot if asked to."""
    dialogue_set_status(dialogue=dialogue, status=Dialogue.Status.COMPLETE, now=now)
    _, parameters = protocol_of(seat.campaign)
    if parameters["end_ratings"]:
        seat_set_stage(seat=seat, stage=ChatSeat.Stage.RATING)
        return
    seat_finish(seat, ChatSeat.Stage.DONE, "complete", now)


# A worker gone this long from the closing ratings is done without them (the chat is complete
# and labeled: that is the work paid for). Well under the assignments' abandonment time.
RATINGS_WAIT_S = 10 * 60


def ratings_sweep(*, now: datetime | None = None) -> int:
    """Finish the seats whose workers left at the closing ratings; return how many.

    A seat in stage ``rating`` not heard from (socket or assignment) for ``RATINGS_WAIT_S``
    becomes ``done`` with reason ``unrated``: the assignment is submitted, the dialogue keeps
    no ratings. Run by the housekeeping task before open assignments are abandoned.
    """
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=RATINGS_WAIT_S)
    away = Q(last_seen_at__lt=cutoff) | Q(assignment__last_activity_at__lt=cutoff)
    finished = 0
    for seat_id in ChatSeat.objects.filter(away, stage=ChatSeat.Stage.RATING).values_list(
        "pk", flat=True
    ):
        with transaction.atomic():
            seat, _ = _locked(seat_id)
            seat.refresh_from_db(fields=["stage", "last_seen_at"])
            if seat.stage != ChatSeat.Stage.RATING or not (
                (seat.last_seen_at or now) < cutoff or seat.assignment.last_activity_at < cutoff
            ):
                continue
            seat_finish(seat, ChatSeat.Stage.DONE, "unrated", now)
            finished += 1
    return finished


def end_ratings_submit(
    *, seat_id: int, ratings: Any, comment: Any, now: datetime | None = None
) -> list[int]:
    """Store the worker's closing ratings of the bot once, then finish the seat (done, paid).

    Checked first (a rating 1–5 for every closing question, an optional comment), so a bad
    frame changes nothing. Stored in ``Dialogue.metadata["ratings"]`` under the Dialogue's
    row lock: the same ratings again store nothing; different ones are refused.
    """
    now = now or timezone.now()
    with transaction.atomic():
        seat, dialogue = _locked(seat_id)
        _, parameters = protocol_of(seat.campaign)
        cleaned = end_ratings_clean(parameters, ratings, comment)
        stored = dialogue.metadata.get("ratings")
        if stored is not None:
            if {k: stored[k] for k in ("values", "comment")} != cleaned:
                raise Conflict(gettext("You already rated this conversation."))
            return []
        if seat.stage != ChatSeat.Stage.RATING:
            raise OutOfTurn(gettext("There is nothing to rate now."))
        dialogue_update(dialogue, metadata={"ratings": {**cleaned, "at": now.isoformat()}})
        seat_finish(seat, ChatSeat.Stage.DONE, "complete", now)
    return [seat_id]
