"""A worker's message in a live chat: the one path both chat modes store it by.

ED (``chat.empathetic``) and interactive SSA (``chat.bot``) differ in
whom a worker talks to and when it is their turn; storing the message is the same: a resend
under the same ``client_id`` is acknowledged again and stored once, a frame may name only the
sender's own conversation and role, the text is checked, the turn rule of the mode decides,
pasted text flags the dialogue, and the assignment is kept from looking idle.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from datetime import datetime

from django.utils.translation import gettext

from annotation.models import Dialogue, Utterance
from annotation.services.dialogues import dialogue_update, utterance_add
from chat.frames import NotYours, OutOfTurn, Sent
from chat.models import ChatSeat
from chat.seats import activity_touch
from evalsite.errors import Conflict, InvalidAnswer


def message_store(
    *,
    seat: ChatSeat,
    dialogue: Dialogue | None,
    conversations: Collection[int],
    speaker: str,
    known: Utterance | None,
    turn: Callable[[], int],
    client_id: str,
    text: str,
    signals: dict[str, int],
    dialogue_id: int | None,
    role: str,
    max_chars: int,
    now: datetime,
) -> Sent:
    """Store the seat's worker's message as the next turn of ``dialogue``, once per client id.

    The caller holds the lock of the conversation (the pair's row for ED, the dialogue's for
    SSA) and passes what only its mode knows: ``dialogue``, the conversation under way (None
    when none is); ``conversations``, the ids of every conversation of the seat; ``speaker``,
    the sender's role in ``dialogue``; ``known``, the message stored earlier under
    ``client_id`` in those conversations, if any; and ``turn``, which raises OutOfTurn when it
    is not the sender's turn and otherwise returns the new turn's index. ``dialogue_id`` and
    ``role`` are what the frame named, if anything.

    In this order: a resend returns the stored message (Conflict if the id was used for another
    text); a frame naming another conversation or role is refused (NotYours), a message after
    the conversation ended too (OutOfTurn); the text must not be empty nor longer than
    ``max_chars``; then ``turn`` decides. Nothing is written before every check has passed.
    Returns the stored turn, with the seat to tell.
    """
    if known is not None:  # a resend: acknowledged again, stored once
        if known.worker_id != seat.worker_id or known.text != text.strip():
            raise Conflict("This message id was already used for another message.")
        return Sent(index=known.index, created=False)
    if dialogue_id is not None and dialogue_id not in conversations:
        raise NotYours("This message names a conversation you are not in.")
    if seat.stage != ChatSeat.Stage.CHATTING or dialogue is None:
        raise OutOfTurn(gettext("This conversation has ended."))
    if dialogue_id is not None and dialogue_id != dialogue.pk:
        raise NotYours("This message names a conversation you are not in.")
    if role and role != speaker:
        raise NotYours(f"You write as the {speaker} in this conversation, not as {role[:20]!r}.")
    text = _text_clean(text, max_chars)
    index = turn()
    utterance_add(
        dialogue=dialogue,
        index=index,
        speaker=speaker,
        worker=seat.worker,
        text=text,
        signals=signals,
        client_id=client_id,
    )
    if signals.get("pastes"):
        dialogue_update(dialogue, flag="paste")
    activity_touch(seat, now)
    return Sent(index=index, created=True, notify=[seat.pk])


def _text_clean(text: str, max_chars: int) -> str:
    """Return the message without surrounding blanks; refuse it empty or too long."""
    text = text.strip()
    if not text:
        raise InvalidAnswer(
            gettext("Write a message first."), fields={"text": gettext("Empty message.")}
        )
    if len(text) > max_chars:
        raise InvalidAnswer(
            gettext("Please keep a message under %(most)s characters.") % {"most": max_chars},
            fields={"text": gettext("Too long.")},
        )
    return text
