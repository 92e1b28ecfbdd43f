"""Conversations written live: the one write path of a chat's dialogues, their utterances and
ED situations (``chat`` calls these; data set imports write theirs in
``annotation.services.datasets``).

A dialogue's status moves only along ``DIALOGUE_TRANSITIONS``, through ``dialogue_set_status``:
live dialogues start ``active`` and end ``complete`` or ``partial``, for good; imported ones
are ``complete`` from the start. The caller holds the lock its conversation hangs on (the
pair's row in an ED chat, the dialogue's in a bot chat: ``annotation.locks``, steps 5–6).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from django.utils import timezone

from annotation.models import Campaign, Dialogue, Situation, Utterance, Worker
from evalsite.errors import Conflict

_Ds = Dialogue.Status
DIALOGUE_TRANSITIONS: dict[str, set[str]] = {
    _Ds.ACTIVE: {_Ds.COMPLETE, _Ds.PARTIAL},
    _Ds.COMPLETE: set(),
    _Ds.PARTIAL: set(),
}


def situation_create(
    *, campaign: Campaign, worker: Worker, emotion: str, text: str, signals: Mapping[str, Any]
) -> Situation:
    """Store an ED Speaker's situation (cleaned by the protocol); pasted text flags it."""
    return Situation.objects.create(
        campaign=campaign,
        worker=worker,
        emotion=emotion,
        text=text,
        signals=dict(signals),
        flagged=bool(signals.get("pastes")),
    )


def dialogue_start(
    *,
    campaign_id: int,
    key: str,
    metadata: Mapping[str, Any],
    situation: Situation | None = None,
) -> Dialogue:
    """Create a live chat's conversation, ``active``; an ED round takes its emotion from the
    Speaker's situation. The key is unique per campaign (IntegrityError on a second)."""
    return Dialogue.objects.create(
        campaign_id=campaign_id,
        key=key,
        situation=situation,
        emotion=situation.emotion if situation is not None else "",
        status=Dialogue.Status.ACTIVE,
        metadata=dict(metadata),
    )


def utterance_add(
    *,
    dialogue: Dialogue,
    index: int,
    speaker: str,
    text: str,
    signals: Mapping[str, Any],
    worker: Worker | None = None,
    client_id: str = "",
) -> Utterance:
    """Store turn ``index`` of a live conversation (a worker's message or the bot's reply)."""
    return Utterance.objects.create(
        dialogue=dialogue,
        index=index,
        speaker=speaker,
        worker=worker,
        text=text,
        signals=dict(signals),
        client_id=client_id,
    )


def dialogue_update(
    dialogue: Dialogue, *, metadata: Mapping[str, Any] | None = None, flag: str = ""
) -> None:
    """Merge ``metadata`` into the dialogue's (a bot turn awaited or failed, the closing
    ratings) and flag it for review with ``flag`` if given, in one UPDATE."""
    fields = []
    if metadata is not None:
        dialogue.metadata = {**dialogue.metadata, **metadata}
        fields.append("metadata")
    if flag:
        dialogue_flag(dialogue, flag)
        fields += ["flagged", "flags"]
    if fields:
        dialogue.save(update_fields=fields)


def dialogue_set_status(
    *,
    dialogue: Dialogue,
    status: str,
    now: datetime | None = None,
    fields: Sequence[str] = (),
) -> None:
    """Move the dialogue to ``status`` if ``DIALOGUE_TRANSITIONS`` allows it, else raise
    Conflict; a status that ends the conversation records when.

    ``fields`` are other fields the caller set on the dialogue (``dialogue_flag``), saved in
    the same UPDATE. The caller holds the pair's row lock (ED) or the dialogue's (bot chat).
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
    that failed), each reason once; the caller saves ``flagged`` and ``flags``
    (``dialogue_set_status`` or ``dialogue_update``)."""
    dialogue.flagged = True
    if reason not in dialogue.flags:
        dialogue.flags = [*dialogue.flags, reason]
