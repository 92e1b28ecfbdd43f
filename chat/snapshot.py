"""What a worker sees of their chat: ``chat_state``, the whole view of one seat recomputed from
the database for every frame the browser gets (so a reload or a reconnect shows exactly what is
stored), with the stage messages, the conversations of a pair and a bot chat's turn labels."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from django.utils import timezone
from django.utils.translation import gettext, gettext_lazy

from annotation.models import (
    Dialogue,
    Item,
    Judgment,
)
from annotation.protocols.ssa_interactive import END_SCALE
from chat.arena_view import arena_state
from chat.models import ChatSeat
from chat.seats import protocol_of

# Shown to the worker, in the campaign's language (the consumer activates it).
STAGE_MESSAGES = {
    ChatSeat.Stage.PARTNER_LEFT: gettext_lazy(
        "Your partner left the chat. The conversation so far is saved, and you will be paid "
        "for your time as the study's policy says. Thank you!"
    ),
    ChatSeat.Stage.LEFT: gettext_lazy(
        "You were disconnected for too long, so the conversation ended and your partner was "
        "told. What you wrote is saved, and you will be paid for it as the study's policy "
        "says: finish below to get your completion code."
    ),
    ChatSeat.Stage.RELEASED: gettext_lazy(
        "Sorry, no partner arrived in time. Your situation is saved and you will be paid for "
        "your waiting time as the study's policy says. Thank you for waiting!"
    ),
    ChatSeat.Stage.FAILED: gettext_lazy(
        "The chatbot stopped answering, so this conversation ended early. It is saved, and "
        "you will be paid as the study's policy says."
    ),
    ChatSeat.Stage.DONE: gettext_lazy("You finished the conversations. Thank you!"),
}


# An arena's end: one conversation, voted or not counted.
ARENA_MESSAGES = {
    ChatSeat.Stage.FAILED: gettext_lazy(
        "One of the chatbots stopped answering, so this conversation ended early. It will not "
        "be counted, and you will be paid as the study's policy says."
    ),
    ChatSeat.Stage.DONE: gettext_lazy(
        "You finished the conversation; your votes are saved. Thank you!"
    ),
}


# When a chat ended during or just after an outage of ours (``ended_reason`` "outage").
OUTAGE_MESSAGES = {
    ChatSeat.Stage.PARTNER_LEFT: gettext_lazy(
        "The chat ended because our server lost its connection, not because of anything you "
        "did. The conversation so far is saved, and you will be paid for your time as the "
        "study's policy says. Thank you!"
    ),
    ChatSeat.Stage.LEFT: gettext_lazy(
        "The chat ended because our server lost its connection, not because of anything you "
        "did. What you wrote is saved, and you will be paid for it as the study's policy says: "
        "finish below to get your completion code."
    ),
}


def chat_state(*, seat_id: int, now: datetime | None = None) -> dict[str, Any]:
    """Return everything the seat's page shows, as the ``state`` frame (docs/chat.md)."""
    now = now or timezone.now()
    seat = ChatSeat.objects.select_related("campaign", "situation", "dialogue").get(pk=seat_id)
    protocol, parameters = protocol_of(seat.campaign)
    state: dict[str, Any] = {
        "type": "state",
        "protocol": protocol.name,
        "chat": protocol.chat_mode,
        "stage": seat.stage,
        "heartbeat_s": parameters["heartbeat_s"],
        "message": stage_message(seat),
        "max_chars": parameters["utterance_max_chars"],
    }
    if protocol.chat_mode == "pair":
        state.update(_ed_state(seat, parameters, now))
    elif protocol.chat_mode == "side_by_side":
        state.update(arena_state(seat, parameters))
        ended = ARENA_MESSAGES.get(ChatSeat.Stage(seat.stage))
        if ended is not None:
            state["message"] = str(ended)
    else:
        state.update(_ssa_state(seat, parameters))
    return state


def stage_message(seat: ChatSeat) -> str:
    """Return what the seat's page says about its stage (why the chat ended, if it did)."""
    stage = ChatSeat.Stage(seat.stage)
    if seat.ended_reason == "outage" and stage in OUTAGE_MESSAGES:
        return str(OUTAGE_MESSAGES[stage])
    return str(STAGE_MESSAGES.get(stage, ""))


def pair_dialogues(seat: ChatSeat) -> list[Dialogue]:
    """Return the seat's pair's conversations, first round first."""
    if seat.pair_id is None:
        return []
    keys = [f"pair-{seat.pair_id}-{n}" for n in (1, 2)]
    return list(Dialogue.objects.filter(campaign_id=seat.campaign_id, key__in=keys).order_by("key"))


def role_in(seat: ChatSeat, dialogue: Dialogue) -> str:
    """Return the seat's role in one of its pair's conversations."""
    return "speaker" if dialogue.metadata.get("speaker_seat") == seat.pk else "listener"


def _ed_state(seat: ChatSeat, parameters: Mapping[str, Any], now: datetime) -> dict[str, Any]:
    state: dict[str, Any] = {}
    if seat.stage == ChatSeat.Stage.SITUATION:
        state["offered"] = list(seat.offered)
        state["limits"] = {
            k: parameters[k]
            for k in ("situation_min_words", "situation_max_words", "situation_max_sentences")
        }
    if seat.stage == ChatSeat.Stage.WAITING and seat.waiting_since:
        state["waited_s"] = max(0.0, (now - seat.waiting_since).total_seconds())
        state["lobby_timeout_s"] = parameters["lobby_timeout_s"]
    dialogues = pair_dialogues(seat)
    state["conversations"] = len([d for d in dialogues if d.status != Dialogue.Status.ACTIVE])
    current = next((d for d in dialogues if d.status == Dialogue.Status.ACTIVE), None)
    if seat.stage == ChatSeat.Stage.CHATTING and current is not None:
        role = role_in(seat, current)
        utterances = list(current.utterances.order_by("index"))
        count = len(utterances)
        state.update(
            dialogue=current.pk,
            round=current.metadata.get("round", 1),
            rounds=2,
            role=role,
            utterances=[
                {"index": u.index, "role": u.speaker, "text": u.text, "mine": u.speaker == role}
                for u in utterances
            ],
            your_turn=count < parameters["max_utterances"]
            and ("speaker" if count % 2 == 0 else "listener") == role,
            can_end=count >= parameters["min_utterances"],
            min_utterances=parameters["min_utterances"],
            max_utterances=parameters["max_utterances"],
        )
        if role == "speaker" and seat.situation is not None:
            # The Speaker's own label and situation, as a reminder; never the partner's.
            state["situation"] = {"emotion": seat.situation.emotion, "text": seat.situation.text}
    return state


def _ssa_state(seat: ChatSeat, parameters: Mapping[str, Any]) -> dict[str, Any]:
    dialogue = seat.dialogue
    if dialogue is None:
        return {}
    utterances = list(dialogue.utterances.order_by("index"))
    labels = bot_labels(seat, dialogue)
    pending = dialogue.metadata.get("pending")
    failed = dialogue.metadata.get("failed")
    unlabeled = [
        u.index for u in utterances if u.speaker == "bot" and u.index >= 1 and u.index not in labels
    ]
    count = len(utterances)
    idle = not pending and not unlabeled
    return {
        "dialogue": dialogue.pk,
        "role": "user",
        "utterances": [
            {
                "index": u.index,
                "role": u.speaker,
                "text": u.text,
                "mine": u.speaker == "user",
                "labels": labels.get(u.index),
                "labelable": u.speaker == "bot" and u.index >= 1,
            }
            for u in utterances
        ],
        "pending": bool(pending),
        "failed": bool(failed),
        "needs_label": unlabeled[0] if unlabeled else None,
        "your_turn": seat.stage == ChatSeat.Stage.CHATTING
        and idle
        and not failed
        and reply_fits(count, parameters)
        and utterances[-1].speaker == "bot",
        "can_end": seat.stage == ChatSeat.Stage.CHATTING
        and idle
        and (count >= parameters["min_turns"] or bool(failed)),
        "min_turns": parameters["min_turns"],
        "max_turns": parameters["max_turns"],
        "turns": count,
        "questions": {
            # The published wording translated; a researcher's own as written.
            "sensible": gettext(parameters["sensible_question"]),
            "specific": gettext(parameters["specific_question"]),
        },
        "end_ratings": _end_ratings_state(seat, parameters),
    }


def _end_ratings_state(seat: ChatSeat, parameters: Mapping[str, Any]) -> dict[str, Any] | None:
    """Return the closing questions while the seat is rating the bot (else None)."""
    if seat.stage != ChatSeat.Stage.RATING:
        return None
    return {
        "questions": [
            {"key": q["key"], "text": gettext(q["text"])} for q in parameters["end_questions"]
        ],
        "scale": list(END_SCALE),
        "comment": parameters["end_comment"],
    }


def reply_fits(count: int, parameters: Mapping[str, Any]) -> bool:
    """Tell whether the worker may write turn ``count``: only when the bot's reply to it also
    fits within ``max_turns``, so a conversation at the limit ends on a bot turn (Meena's
    released logs all do). Opened by the bot, an even limit is reached one turn short."""
    return count + 2 <= parameters["max_turns"]


def bot_turn_key(dialogue: Dialogue, index: int) -> str:
    """Return the key of the Item that holds a bot turn for labeling."""
    return f"{dialogue.key}/{index}"


def bot_labels(seat: ChatSeat, dialogue: Dialogue) -> dict[int, dict[str, Any]]:
    """Return the seat's worker's labels of the dialogue's bot turns, by turn index."""
    prefix = f"{dialogue.key}/"
    rows = Judgment.objects.filter(
        item__campaign_id=seat.campaign_id, item__key__startswith=prefix, worker_id=seat.worker_id
    ).values_list("item__key", "question", "value")
    labels: dict[int, dict[str, Any]] = {}
    for key, question, value in rows:
        labels.setdefault(int(key[len(prefix) :]), {})[question] = value
    return labels


def bot_turn_item(dialogue: Dialogue, index: int) -> Item | None:
    """Return the Item of a bot turn, if it is stored."""
    assert dialogue.campaign_id is not None  # a live chat's dialogue is a campaign's
    return Item.objects.filter(
        campaign_id=dialogue.campaign_id, key=bot_turn_key(dialogue, index)
    ).first()
