"""ED collection between two live workers: situations, the lobby, turns, ends and departures.

Locks: the lobby locks the campaign row while it pairs (two workers can never both take the
same partner); everything inside a pair's conversations locks the ChatPair row, which
serialises the two workers' messages, so utterance indexes and turn-taking are decided one
message at a time. Every function returns the seats whose view changed; the caller tells
their sockets (``chat.notify``).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone
from django.utils.translation import gettext

from annotation.locks import campaign_lock
from annotation.models import Dialogue, Utterance
from annotation.protocols.empathetic_chat import EmpatheticChatProtocol
from annotation.services.dialogues import (
    dialogue_flag,
    dialogue_set_status,
    dialogue_start,
    situation_create,
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
    signals_clean,
)
from chat.layer import layer_troubled, outage_seconds
from chat.locks import pair_lock, seat_lock, seat_lock_first
from chat.messages import message_store
from chat.models import ChatPair, ChatSeat
from chat.seats import older_than, protocol_of, seat_finish
from chat.snapshot import pair_dialogues, role_in
from chat.states import seat_set_stage


def frame_handle(*, seat_id: int, frame: Frame, now: datetime) -> Outcome:
    """Carry out one validated frame of a pair chat (ED): a message, the situation, the end
    of a conversation; raise AnnotationError to refuse (nothing is then stored)."""
    if frame.type == "message":
        fields = message_fields(frame)
        return message_outcome(
            fields["client_id"], utterance_send(seat_id=seat_id, now=now, **fields)
        )
    if frame.type == "situation":
        notify = situation_submit(
            seat_id=seat_id,
            emotion=frame.str_field("emotion", max_length=32),
            text=frame.str_field("text"),
            signals=signals_clean(frame.data.get("signals")),
            now=now,
        )
        return Outcome(ack={"type": "ack", "what": "situation"}, notify=notify)
    if frame.type == "end":
        dialogue = frame.int_field("dialogue", required=False)
        return Outcome(notify=conversation_end(seat_id=seat_id, dialogue_id=dialogue, now=now))
    raise frame_unknown(frame)


def situation_submit(
    *,
    seat_id: int,
    emotion: Any,
    text: Any,
    signals: dict[str, int],
    now: datetime | None = None,
) -> list[int]:
    """Store the worker's label and situation and put them in the lobby; return seats to tell.

    The same situation sent again changes nothing. Pasted text flags the situation for review.
    """
    now = now or timezone.now()
    with transaction.atomic():
        seat = seat_lock(seat_id, with_campaign=True)
        protocol, parameters = protocol_of(seat.campaign)
        assert isinstance(protocol, EmpatheticChatProtocol)
        if seat.stage != ChatSeat.Stage.SITUATION:
            raise OutOfTurn(gettext("Your situation is already saved."))
        emotion, text = protocol.clean_situation(parameters, seat.offered, emotion, text)
        seat.situation = situation_create(
            campaign=seat.campaign, worker=seat.worker, emotion=emotion, text=text, signals=signals
        )
        seat.waiting_since = now
        seat_set_stage(
            seat=seat, stage=ChatSeat.Stage.WAITING, fields=["situation", "waiting_since"]
        )
    return [seat_id, *lobby_pair(seat_id=seat_id, now=now)]


def lobby_pair(*, seat_id: int, now: datetime | None = None) -> list[int]:
    """Pair a waiting seat with the longest-waiting other live worker; return both seats.

    A candidate must have a socket open and have been heard from within two heartbeats, and
    be another person. The one who waited longer speaks first. Returns [] if no one waits.
    """
    now = now or timezone.now()
    with transaction.atomic():
        campaign_id = ChatSeat.objects.values_list("campaign", flat=True).get(pk=seat_id)
        campaign = campaign_lock(campaign_id)
        seat = seat_lock(seat_id)
        if seat.stage != ChatSeat.Stage.WAITING or not seat.channel_name:
            return []
        _, parameters = protocol_of(campaign)
        partner = seat_lock_first(
            ChatSeat.objects.filter(campaign=campaign, stage=ChatSeat.Stage.WAITING)
            .exclude(pk=seat.pk)
            .exclude(worker=seat.worker)
            .exclude(channel_name="")
            .filter(last_seen_at__gte=now - timedelta(seconds=2 * parameters["heartbeat_s"]))
            .order_by("waiting_since", "pk")
        )
        if partner is None:
            return []
        first, second = sorted((seat, partner), key=lambda s: (s.waiting_since or now, s.pk))
        pair = ChatPair.objects.create(campaign=campaign)
        for slot, member in enumerate((first, second)):
            member.pair, member.slot = pair, slot
            seat_set_stage(seat=member, stage=ChatSeat.Stage.CHATTING, fields=["pair", "slot"])
        _round_start(pair, 1, speaker=first, listener=second)
    return [first.pk, second.pk]


def _round_start(pair: ChatPair, number: int, *, speaker: ChatSeat, listener: ChatSeat) -> None:
    situation = speaker.situation
    assert situation is not None
    dialogue_start(
        campaign_id=pair.campaign_id,
        key=f"pair-{pair.pk}-{number}",
        situation=situation,
        metadata={
            "pair": pair.pk,
            "round": number,
            "speaker_seat": speaker.pk,
            "listener_seat": listener.pk,
            "speaker": speaker.worker.pseudonym,
            "listener": listener.worker.pseudonym,
        },
    )


def lobby_release_expired(*, seat_id: int, now: datetime | None = None) -> list[int]:
    """Release a seat that waited past the lobby timeout (its assignment is submitted, so the
    waiting is paid); return [seat] if released."""
    now = now or timezone.now()
    with transaction.atomic():
        seat = seat_lock(seat_id, with_campaign=True)
        _, parameters = protocol_of(seat.campaign)
        if (
            seat.stage != ChatSeat.Stage.WAITING
            or seat.waiting_since is None
            or not older_than(seat.waiting_since, now, parameters["lobby_timeout_s"])
        ):
            return []
        seat_finish(seat, ChatSeat.Stage.RELEASED, "lobby_timeout", now)
    return [seat_id]


def _pair_locked(seat_id: int) -> tuple[ChatSeat, ChatSeat, ChatPair]:
    """Return the seat, its partner and their pair, the pair's row locked."""
    pair_id = ChatSeat.objects.values_list("pair", flat=True).get(pk=seat_id)
    if pair_id is None:
        raise OutOfTurn(gettext("You have no partner yet; please wait."))
    pair = pair_lock(pair_id)
    seats = {
        s.pk: s
        for s in ChatSeat.objects.select_related("campaign", "worker", "assignment").filter(
            pair=pair
        )
    }
    seat = seats.pop(seat_id)
    (partner,) = seats.values()
    return seat, partner, pair


def utterance_send(
    *,
    seat_id: int,
    client_id: str,
    text: str,
    signals: dict[str, int],
    dialogue_id: int | None = None,
    role: str = "",
    now: datetime | None = None,
) -> Sent:
    """Store one message of the current conversation if it is the sender's turn.

    ``message_store`` does what both chat modes do (a resend stored once, the frame's
    conversation and role, the text, pasted text flagged); ED's turn rule: the Speaker opens,
    then the two alternate up to ``max_utterances``, and the last one completes the round.
    """
    now = now or timezone.now()
    with transaction.atomic():
        seat, partner, pair = _pair_locked(seat_id)
        _, parameters = protocol_of(seat.campaign)
        dialogues = pair_dialogues(seat)
        current = next((d for d in dialogues if d.status == Dialogue.Status.ACTIVE), None)
        mine = role_in(seat, current) if current is not None else ""

        def turn() -> int:
            assert current is not None  # message_store refuses a message with none under way
            count = current.utterances.count()
            if count >= parameters["max_utterances"]:
                raise OutOfTurn(gettext("This conversation has reached its length."))
            if ("speaker" if count % 2 == 0 else "listener") != mine:
                raise OutOfTurn(gettext("Please wait for your partner's message."))
            return count

        sent = message_store(
            seat=seat,
            dialogue=current,
            conversations={d.pk for d in dialogues},
            speaker=mine,
            known=Utterance.objects.filter(dialogue__in=dialogues, client_id=client_id).first(),
            turn=turn,
            client_id=client_id,
            text=text,
            signals=signals,
            dialogue_id=dialogue_id,
            role=role,
            max_chars=parameters["utterance_max_chars"],
            now=now,
        )
        if not sent.created:
            return sent
        assert current is not None
        if sent.index + 1 >= parameters["max_utterances"]:
            _round_finish(pair, current, seat, partner, now)
    return Sent(index=sent.index, created=True, notify=[seat.pk, partner.pk])


def conversation_end(
    *, seat_id: int, dialogue_id: int | None = None, now: datetime | None = None
) -> list[int]:
    """End the current conversation once it has its minimum length; return seats to tell."""
    now = now or timezone.now()
    with transaction.atomic():
        seat, partner, pair = _pair_locked(seat_id)
        _, parameters = protocol_of(seat.campaign)
        dialogues = pair_dialogues(seat)
        if dialogue_id is not None and dialogue_id not in {d.pk for d in dialogues}:
            raise NotYours("This names a conversation you are not in.")
        current = next((d for d in dialogues if d.status == Dialogue.Status.ACTIVE), None)
        if seat.stage != ChatSeat.Stage.CHATTING or current is None:
            raise OutOfTurn(gettext("This conversation has ended."))
        if dialogue_id is not None and dialogue_id != current.pk:
            raise NotYours("This names a conversation you are not in.")
        if current.utterances.count() < parameters["min_utterances"]:
            raise OutOfTurn(
                gettext("A conversation needs at least %(least)s messages.")
                % {"least": parameters["min_utterances"]}
            )
        _round_finish(pair, current, seat, partner, now)
    return [seat.pk, partner.pk]


def _round_finish(
    pair: ChatPair, dialogue: Dialogue, seat: ChatSeat, partner: ChatSeat, now: datetime
) -> None:
    """Complete a conversation: start the second with the roles swapped, or end the pair."""
    dialogue_set_status(dialogue=dialogue, status=Dialogue.Status.COMPLETE, now=now)
    first, second = sorted((seat, partner), key=lambda s: s.slot or 0)
    if dialogue.metadata.get("round") == 1:
        _round_start(pair, 2, speaker=second, listener=first)
        return
    pair.ended_at = now
    pair.save(update_fields=["ended_at"])
    for member in (first, second):
        seat_finish(member, ChatSeat.Stage.DONE, "complete", now)


# How long a channel-layer outage may last before a silence counts again (docs/chat.md).
OUTAGE_PATIENCE_S = 150.0
# A departure this soon after the last layer error is the platform's fault, not the worker's.
OUTAGE_BLAME_S = 60.0


def _heard_from(seat: ChatSeat, now: datetime) -> datetime:
    """Return when the seat was last heard from, counting a channel-layer outage (and the
    ``CLEAR_AFTER_S`` after it, time for the page to reconnect) as contact: a silence then is
    the platform's, not the worker's. After ``OUTAGE_PATIENCE_S`` of outage, silences count."""
    moment = now.timestamp()
    if layer_troubled(now=moment) and outage_seconds(now=moment) <= OUTAGE_PATIENCE_S:
        return now
    return seat.last_seen_at


def partner_check(*, seat_id: int, now: datetime | None = None) -> list[int]:
    """Declare the seat's partner gone if their page closed its socket more than half a
    heartbeat ago (a reload is back sooner), if their connection was lost more than
    ``reconnect_grace_s`` ago (a dropped network comes back), or if their socket went silent
    for two heartbeats; return the seats to tell.

    The conversation under way is kept as partial and flagged ``partner_left``; both workers'
    assignments are submitted (paid by policy); the one who left sees why on return. Time in
    a channel-layer outage does not count (``_heard_from``); a departure during or just after
    one is the platform's (reason ``outage``, the dialogue flagged ``outage``).
    """
    now = now or timezone.now()
    seat = ChatSeat.objects.select_related("campaign").get(pk=seat_id)
    if seat.stage != ChatSeat.Stage.CHATTING or seat.pair_id is None:
        return []
    _, parameters = protocol_of(seat.campaign)
    heartbeat = parameters["heartbeat_s"]

    def gone(other: ChatSeat) -> bool:
        heard = _heard_from(other, now)
        if other.channel_name == "":
            grace = heartbeat / 2 if other.closed_by_page else parameters["reconnect_grace_s"]
            return older_than(heard, now, grace)
        return older_than(heard, now, 2 * heartbeat + 1)

    partner = ChatSeat.objects.filter(pair_id=seat.pair_id).exclude(pk=seat.pk).first()
    if partner is None or not gone(partner):
        return []
    with transaction.atomic():
        seat, partner, pair = _pair_locked(seat_id)
        if seat.stage != ChatSeat.Stage.CHATTING or not gone(partner):
            return []
        platform = layer_troubled(now=now.timestamp(), within_s=OUTAGE_BLAME_S)
        for dialogue in pair_dialogues(seat):
            if dialogue.status == Dialogue.Status.ACTIVE:
                dialogue_flag(dialogue, "partner_left")
                if platform:
                    dialogue_flag(dialogue, "outage")
                dialogue.metadata = {**dialogue.metadata, "left_seat": partner.pk}
                dialogue_set_status(
                    dialogue=dialogue,
                    status=Dialogue.Status.PARTIAL,
                    now=now,
                    fields=["flagged", "flags", "metadata"],
                )
        pair.ended_at = now
        pair.save(update_fields=["ended_at"])
        reasons = ("outage", "outage") if platform else ("partner_left", "disconnected")
        seat_finish(seat, ChatSeat.Stage.PARTNER_LEFT, reasons[0], now)
        seat_finish(partner, ChatSeat.Stage.LEFT, reasons[1], now)
    return [seat.pk, partner.pk]


def chats_sweep(*, now: datetime | None = None) -> int:
    """End pairs whose workers both went away (no consumer is left to notice); return how
    many. Run by the housekeeping task. The one seen last stayed longer: they are the one
    whose partner left (and are paid by policy), the other left."""
    now = now or timezone.now()
    ended = 0
    seats = ChatSeat.objects.filter(stage=ChatSeat.Stage.CHATTING, pair__isnull=False)
    for seat in seats.order_by(F("last_seen_at").desc(nulls_last=True), "pk"):
        if partner_check(seat_id=seat.pk, now=now):
            ended += 1
    return ended
