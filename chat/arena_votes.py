"""Arena votes and the end of a conversation: a vote is held on the conversation until it
completes; completing turns every vote into an Item (the voted exchange) and a Judgment, and
reveals the models, in one transaction (docs/chat.md, "Arena")."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.translation import gettext

from annotation.locks import dialogue_lock
from annotation.models import Dialogue, Item, Utterance, Worker
from annotation.quality import answer_time_check
from annotation.services import WITHDRAWN, items_add, judgment_label
from annotation.services.dialogues import dialogue_set_status, dialogue_update
from chat.arena import (
    ATTENTION,
    arena_locked,
    arena_message_send,
    battle,
    exchanges,
    turns_of,
)
from chat.frames import Frame, Outcome, OutOfTurn, frame_unknown, message_fields, message_outcome
from chat.models import ChatSeat
from chat.seats import protocol_of, seat_finish, seconds_since
from evalsite.errors import Conflict
from evalstats.style import style_features

STYLE_KEYS = ("chars", "headers", "lists", "bold")


def frame_handle(*, seat_id: int, frame: Frame, now: datetime) -> Outcome:
    """Carry out one validated frame of an arena chat: a message, a vote, the end."""
    if frame.type == "message":
        fields = message_fields(frame)
        return message_outcome(
            fields["client_id"], arena_message_send(seat_id=seat_id, now=now, **fields)
        )
    if frame.type == "vote":
        turn = frame.int_field("turn")
        assert turn is not None
        answers = {"winner": frame.data.get("winner"), "reason": frame.data.get("reason")}
        if answers["reason"] is None:
            del answers["reason"]
        notify = vote_submit(seat_id=seat_id, turn=turn, answers=answers, now=now)
        return Outcome(ack={"type": "ack", "what": "vote", "turn": turn}, notify=notify)
    if frame.type == "end":
        return Outcome(notify=arena_end(seat_id=seat_id, now=now))
    raise frame_unknown(frame)


def _ended_message(seat: ChatSeat, side_a: Dialogue) -> str:
    if battle(side_a).get("revealed_at"):
        return gettext(
            "The models were revealed: this conversation is over, and votes are no longer taken."
        )
    return gettext("This conversation has ended.")


def vote_submit(
    *, seat_id: int, turn: int, answers: Mapping[str, Any], now: datetime | None = None
) -> list[int]:
    """Hold the worker's vote on exchange ``turn`` (idempotent: the same vote again stores
    nothing; another one is refused). With ``vote: "end"`` the vote is the conversation's
    one vote and completes it; with ``"each"``, the vote on the last allowed exchange does.
    A vote once the conversation is over (revealed, failed) is refused and stores nothing."""
    now = now or timezone.now()
    with transaction.atomic():
        seat, side_a, side_b = arena_locked(seat_id)
        protocol, parameters = protocol_of(seat.campaign)
        cleaned = protocol.clean_answers(parameters, answers)  # a bad vote is said so first
        state = battle(side_a)
        held = state["votes"].get(str(turn))
        if held is not None:
            if {k: v for k, v in held.items() if k != "at"} != cleaned:
                raise Conflict(
                    gettext("You already voted on these answers; votes cannot be changed.")
                )
            return []
        if seat.stage != ChatSeat.Stage.CHATTING:
            raise OutOfTurn(_ended_message(seat, side_a))
        done = min(exchanges(turns_of(side_a)), exchanges(turns_of(side_b)))
        if (
            side_a.metadata.get("pending")
            or side_b.metadata.get("pending")
            or turn != done
            or not done
        ):
            raise OutOfTurn(gettext("Vote on the two answers to your last message."))
        if parameters["vote"] == "end":
            _end_check(state, parameters, done, now)
        # The one vote ("end"), or the last exchange's when the conversation may end now
        # (else the worker ends it once ``min_seconds`` have passed).
        final = parameters["vote"] == "end" or (
            done >= parameters["max_turns"] and not _end_refusal(state, parameters, done, now)
        )
        shown = parse_datetime(state["replied"].get(str(turn), "")) or now
        answer_time_check(campaign=seat.campaign, spent_ms=int(seconds_since(shown, now) * 1000))
        state["votes"] = {**state["votes"], str(turn): {**cleaned, "at": now.isoformat()}}
        dialogue_update(side_a, metadata={"battle": state})
        if final:
            _complete(seat, side_a, side_b, now)
    return [seat_id]


def _end_refusal(
    state: Mapping[str, Any], parameters: Mapping[str, Any], done: int, now: datetime
) -> str:
    """Return why the conversation may not end yet (before ``min_turns`` exchanges or
    ``min_seconds``), or "" when it may."""
    if done < parameters["min_turns"]:
        return gettext(
            "Please keep chatting: the conversation can end after %(least)s exchanges."
        ) % {"least": parameters["min_turns"]}
    started = parse_datetime(state["started"])
    if started and seconds_since(started, now) < parameters["min_seconds"]:
        return gettext("Please take a little more time with the answers before you end.")
    return ""


def _end_check(
    state: Mapping[str, Any], parameters: Mapping[str, Any], done: int, now: datetime
) -> None:
    """Refuse to end (OutOfTurn) while ``_end_refusal`` says why."""
    refusal = _end_refusal(state, parameters, done, now)
    if refusal:
        raise OutOfTurn(refusal)


def arena_end(*, seat_id: int, now: datetime | None = None) -> list[int]:
    """End the conversation (``vote: "each"``): every exchange voted, at least ``min_turns``
    of them and ``min_seconds`` spent. With ``vote: "end"`` the end is the vote itself."""
    now = now or timezone.now()
    with transaction.atomic():
        seat, side_a, side_b = arena_locked(seat_id)
        _, parameters = protocol_of(seat.campaign)
        if seat.stage != ChatSeat.Stage.CHATTING:
            raise OutOfTurn(_ended_message(seat, side_a))
        if parameters["vote"] == "end":
            raise OutOfTurn(gettext("Vote on the last answers to end the conversation."))
        if side_a.metadata.get("pending") or side_b.metadata.get("pending"):
            raise OutOfTurn(gettext("Please wait for both answers."))
        state = battle(side_a)
        done = exchanges(turns_of(side_a))
        if any(str(t) not in state["votes"] for t in range(1, done + 1)):
            raise OutOfTurn(gettext("Please vote on the last answers first."))
        _end_check(state, parameters, done, now)
        _complete(seat, side_a, side_b, now)
    return [seat_id]


def _conversation(utterances: list[Utterance], upto: int) -> list[dict[str, str]]:
    """Return a side's turns through exchange ``upto`` as public-format messages."""
    return [
        {"role": "user" if u.speaker == "user" else "assistant", "content": u.text}
        for u in utterances
        if u.index < 2 * upto
    ]


def _style(utterances: list[Utterance], upto: int) -> dict[str, int]:
    """Return a side's style features summed over its replies through exchange ``upto``."""
    total = dict.fromkeys(STYLE_KEYS, 0)
    for u in utterances:
        if u.speaker == "bot" and u.index < 2 * upto and not u.signals.get(ATTENTION):
            for key, value in style_features(u.text).items():
                total[key] += value
    return total


def exchange_payload(
    side_a: Dialogue,
    side_b: Dialogue,
    a: list[Utterance],
    b: list[Utterance],
    turn: int,
    language: str,
) -> dict[str, Any]:
    """Return the Item payload of voted exchange ``turn`` (``annotation.protocols.arena``)."""
    reply = {
        side: next(u for u in turns if u.index == 2 * turn - 1)
        for side, turns in (("a", a), ("b", b))
    }
    return {
        "context": [u.text for u in a if u.speaker == "user" and u.index < 2 * turn],
        "model_a": side_a.metadata["model"],
        "model_b": side_b.metadata["model"],
        "response_a": reply["a"].text,
        "response_b": reply["b"].text,
        "conversation_a": _conversation(a, turn),
        "conversation_b": _conversation(b, turn),
        "turn": turn,
        # Side A's dialogue names the conversation: its votes are one cluster, and erasing a
        # worker finds the payloads that quote them by it (services.worker_forget).
        "example": side_a.key,
        "language": language,
        "style_a": _style(a, turn),
        "style_b": _style(b, turn),
        "finish_a": str(reply["a"].signals.get("finish_reason", "stop")),
        "finish_b": str(reply["b"].signals.get("finish_reason", "stop")),
    }


def _attention_of(a: list[Utterance], b: list[Utterance], turn: int) -> str | None:
    """Return the side whose answer to exchange ``turn`` was an attention check, or None."""
    for side, turns in (("a", a), ("b", b)):
        if any(u.index == 2 * turn - 1 and u.signals.get(ATTENTION) for u in turns):
            return side
    return None


def _complete(seat: ChatSeat, side_a: Dialogue, side_b: Dialogue, now: datetime) -> None:
    """Turn the held votes into Items and Judgments, complete both sides, reveal the models
    (when the study says so) and finish the seat (done, paid)."""
    campaign = seat.campaign
    state = battle(side_a)
    a, b = turns_of(side_a), turns_of(side_b)
    for turn_key, vote in sorted(state["votes"].items(), key=lambda kv: int(kv[0])):
        turn = int(turn_key)
        key = f"{side_a.key.removesuffix('-a')}/{turn}"
        payload = exchange_payload(side_a, side_b, a, b, turn, campaign.language)
        checked = _attention_of(a, b, turn)
        # An exchange answered by an attention check is that check (its text said which side
        # to vote for): a hidden check for quality control, never a vote counted.
        row = (key, payload) if checked is None else (key, payload, {"winner": [checked]}, True)
        items_add(campaign=campaign, items=[row])
        item = Item.objects.get(campaign=campaign, key=key)
        shown = parse_datetime(state["replied"].get(turn_key, "")) or now
        voted = parse_datetime(vote["at"]) or now
        answers = {k: v for k, v in vote.items() if k != "at"}
        judgment_label(
            assignment=seat.assignment, item=item, answers=answers, shown_at=shown, now=voted
        )
    _, parameters = protocol_of(campaign)
    if parameters["reveal"]:
        state["revealed_at"] = now.isoformat()
    dialogue_update(side_a, metadata={"battle": state})
    for side in (side_a, side_b):
        dialogue_set_status(dialogue=side, status=Dialogue.Status.COMPLETE, now=now)
    seat_finish(seat, ChatSeat.Stage.DONE, "complete", now)


def worker_forgotten(*, worker: Worker, campaigns: list[int], **_: object) -> None:
    """Receiver of the core's ``worker_forgotten`` signal: the reasons of the worker's votes
    still held on an arena conversation (one that never completed) of the campaigns the forget
    reached read ``WITHDRAWN``, as their stored reasons do (the protocol's ``text_questions``)."""
    seats = ChatSeat.objects.filter(
        worker=worker, dialogue__isnull=False, dialogue__campaign_id__in=campaigns
    ).exclude(endpoint_b="")
    for dialogue_id in seats.values_list("dialogue_id", flat=True):
        with transaction.atomic():
            side_a = dialogue_lock(dialogue_id)
            state = battle(side_a)
            votes = {
                turn: {**vote, "reason": WITHDRAWN} if vote.get("reason") else vote
                for turn, vote in state.get("votes", {}).items()
            }
            if votes != state.get("votes", {}):
                dialogue_update(side_a, metadata={"battle": {**state, "votes": votes}})
