"""What an arena worker sees of their conversation (part of ``chat.snapshot.chat_state``):
both panes, whose turn it is, the vote asked for, and the two models once revealed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.utils.translation import gettext

from annotation.models import Dialogue
from annotation.protocols.arena import CHOICES
from chat.arena import battle, exchanges
from chat.models import ChatSeat


def arena_state(seat: ChatSeat, parameters: Mapping[str, Any]) -> dict[str, Any]:
    """Return the arena part of the seat's ``state`` frame (docs/chat.md, "Arena")."""
    side_a = seat.dialogue
    if side_a is None:
        return {}
    side_b = Dialogue.objects.get(pk=battle(side_a)["b"])
    state = battle(side_a)
    sides, replies = [], []
    for label, dialogue in (("A", side_a), ("B", side_b)):
        turns = list(dialogue.utterances.order_by("index"))
        replies.append(exchanges(turns))
        sides.append(
            {
                "side": label.lower(),
                "label": label,
                "pending": bool(dialogue.metadata.get("pending")),
                "utterances": [
                    {
                        "index": u.index,
                        "role": u.speaker,
                        "text": u.text,
                        "mine": u.speaker == "user",
                    }
                    for u in turns
                ],
            }
        )
    chatting = seat.stage == ChatSeat.Stage.CHATTING
    pending = any(bool(s["pending"]) for s in sides)
    done = min(replies)
    votes = {int(k): v["winner"] for k, v in state["votes"].items()}
    each = parameters["vote"] == "each"
    needs_vote = done if chatting and not pending and done and done not in votes and each else None
    idle = chatting and not pending and needs_vote is None
    revealed = state.get("revealed_at") and seat.stage == ChatSeat.Stage.DONE
    return {
        "dialogue": side_a.pk,
        "role": "user",
        "sides": sides,
        "turns": done,
        "pending": pending,
        "votes": votes,
        "vote_mode": parameters["vote"],
        "needs_vote": needs_vote,
        "your_turn": idle and done < parameters["max_turns"],
        "can_end": idle and each and done >= parameters["min_turns"],
        "can_vote_end": chatting and not pending and not each and done >= parameters["min_turns"],
        "min_turns": parameters["min_turns"],
        "max_turns": parameters["max_turns"],
        "question": gettext(parameters["question"]),
        "choices": [[value, gettext(label)] for value, label in CHOICES],
        "reason": parameters["reason"],
        "revealed": {"a": side_a.metadata["model"], "b": side_b.metadata["model"]}
        if revealed
        else None,
    }
