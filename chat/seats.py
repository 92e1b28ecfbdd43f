"""Seats: a worker's arrival in a live chat campaign and their websocket.

A seat is created once per assignment, when the worker opens the task link; the page then
opens a websocket that authenticates with the same provider parameters and the signed
assignment token as the rest of the worker pages (no cookies: the page may be in MTurk's
iframe). What the worker sees of their seat is ``chat.snapshot``.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Count, Q
from django.utils import timezone

from annotation.locks import campaign_lock
from annotation.models import (
    Assignment,
    Campaign,
    Dialogue,
    Situation,
    Worker,
)
from annotation.protocols import LiveChat, registry
from annotation.protocols.empathetic_chat import labels_offer
from annotation.quality import worker_soft_blocked
from annotation.services import (
    arrival_admit,
    assignment_authorise,
    assignment_complete,
    assignment_of_arrival,
    assignment_start,
    assignment_touch,
    worker_get_or_create,
)
from annotation.services.dialogues import dialogue_start, utterance_add
from chat.arena_start import arena_open, pair_next
from chat.locks import seat_lock
from chat.models import ChatSeat
from chat.states import seat_set_stage
from evalsite.celery import task_send
from evalsite.errors import NotAllowed, NotFound
from providers import Arrival, arrival_parse


def protocol_of(campaign: Campaign) -> tuple[LiveChat, dict[str, Any]]:
    """Return the campaign's live chat protocol and its cleaned parameters."""
    protocol = registry.get(campaign.protocol)
    if not isinstance(protocol, LiveChat):
        raise NotFound("This study is not a live chat.")
    return protocol, protocol.clean_parameters(campaign.parameters)


# --- arrival -------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChatArrival:
    """What the chat page shows: the chat (a seat), the end screen, or nothing to do."""

    kind: str  # "chat", "done", "nothing" or "stopped"
    seat: ChatSeat | None = None
    assignment: Assignment | None = None
    stop: str = ""


def chat_arrive(
    *, campaign: Campaign, arrival: Arrival, another: bool = False, now: datetime | None = None
) -> ChatArrival:
    """Return the arriving worker's seat, creating their assignment and seat on first arrival.

    A reload finds the same seat. A worker who comes back by a link without a provider session
    (a local link) after their chat ended — the tab closed before the end screen, or a return
    the next day — is shown that chat's end screen and completion code; ``another`` (the end
    screen's "Start another chat") starts a new one. A worker soft-blocked in the campaign, or
    whose conversations would go past the campaign's cap (``max_items_per_worker``, read at
    every arrival so it may change while live), gets no new seat.
    """
    now = now or timezone.now()
    if arrival.preview:
        raise NotAllowed("This is a preview: accept the HIT to start.")
    protocol, parameters = protocol_of(campaign)
    worker = worker_get_or_create(provider=arrival.provider, external_id=arrival.worker_id)
    assignment = assignment_of_arrival(
        campaign=campaign, worker=worker, assignment_id=arrival.assignment_id
    )
    if assignment is None and not another and not arrival.assignment_id:
        assignment = _last_finished(campaign, worker)
    if assignment is not None and not assignment.is_open:
        return ChatArrival(kind="done", assignment=assignment)
    seat = ChatSeat.objects.filter(assignment=assignment).first() if assignment else None
    if seat is not None:
        return ChatArrival(kind="chat", seat=seat, assignment=assignment)
    stop = _stop_reason(campaign, worker, needed=protocol.seats_needed)
    if stop:
        return ChatArrival(kind="stopped", stop=stop)
    if not campaign.is_live:
        raise NotAllowed("This study is not open at the moment.")
    with transaction.atomic():
        models: tuple[str, str] = ("", "")
        if protocol.chat_mode != "pair":
            # Under the campaign's row lock: workers arriving at once cannot all take the
            # last conversation a model (or pair) has left under its target.
            campaign_lock(campaign)
            models = _models_next(campaign, parameters, protocol, worker)
            if not models[0]:
                return ChatArrival(kind="nothing")
        if assignment is None:
            arrival_admit(campaign=campaign, arrival=arrival, now=now)
            assignment = assignment_start(
                campaign=campaign,
                worker=worker,
                provider_assignment_id=arrival.assignment_id,
                provider_hit_id=arrival.hit_id,
                submit_to=arrival.submit_to,
            )
        seat = _seat_create(campaign, assignment, protocol, parameters, models, now)
    return ChatArrival(kind="chat", seat=seat, assignment=assignment)


def _last_finished(campaign: Campaign, worker: Worker) -> Assignment | None:
    """Return the worker's last chat assignment here that ended with a completion code."""
    finished = (
        Assignment.Status.SUBMITTED,
        Assignment.Status.APPROVED,
        Assignment.Status.REJECTED,
    )
    return (
        Assignment.objects.filter(campaign=campaign, worker=worker, status__in=finished)
        .order_by("-submitted_at", "-pk")
        .first()
    )


def conversations_done(*, campaign: Campaign, worker: Worker) -> int:
    """Count the campaign's conversations in which the worker wrote at least one turn (an
    arena conversation is two dialogues, one per side)."""
    dialogues = (
        Dialogue.objects.filter(campaign=campaign, utterances__worker=worker)
        .values("pk")
        .distinct()
        .count()
    )
    protocol = registry.get(campaign.protocol)
    per = protocol.dialogues_per_conversation if isinstance(protocol, LiveChat) else 1
    return dialogues // per


def _stop_reason(campaign: Campaign, worker: Worker, *, needed: int) -> str:
    if worker_soft_blocked(campaign=campaign, worker=worker):
        return "blocked"
    cap = campaign.max_items_per_worker
    if cap is not None and conversations_done(campaign=campaign, worker=worker) + needed > cap:
        return "capped"
    return ""


def _models_next(
    campaign: Campaign, parameters: Mapping[str, Any], protocol: LiveChat, worker: Worker
) -> tuple[str, str]:
    """Return the model (bot chat) or the two models (arena) of a new conversation, ("", "")
    when there is none to have."""
    if protocol.chat_mode == "bot":
        return (model_next(campaign=campaign, parameters=parameters) or "", "")
    from modelhub.models import ModelEndpoint

    known = set(
        ModelEndpoint.objects.filter(name__in=parameters["models"]).values_list("name", flat=True)
    )
    pair = pair_next(
        campaign=campaign,
        parameters=parameters,
        models=[m for m in parameters["models"] if m in known],
        worker=worker,
        rng=random.Random(),
    )
    return pair or ("", "")


def model_next(*, campaign: Campaign, parameters: Mapping[str, Any]) -> str | None:
    """Return the registered model with the fewest conversations (finished or under way)
    below the campaign's target, or None when every model has its conversations."""
    from modelhub.models import ModelEndpoint

    known = set(ModelEndpoint.objects.filter(name__in=parameters["models"]).values_list("name"))
    names = [m for m in parameters["models"] if (m,) in known]
    counts = dict(
        ChatSeat.objects.filter(campaign=campaign, endpoint__in=names)
        .filter(Q(stage=ChatSeat.Stage.DONE) | Q(assignment__status=Assignment.Status.ACCEPTED))
        .values_list("endpoint")
        .annotate(n=Count("pk"))
        .values_list("endpoint", "n")
    )
    open_models = [m for m in names if counts.get(m, 0) < parameters["conversations_per_model"]]
    return min(open_models, key=lambda m: counts.get(m, 0)) if open_models else None


def bot_turn_enqueue(dialogue_id: int, index: int, attempt: str) -> None:
    """Queue the Celery task for bot turn ``index`` once the caller's transaction commits."""
    transaction.on_commit(
        lambda: task_send("chat.tasks.chat_bot_turn", dialogue_id, index, attempt)
    )


def _seat_create(
    campaign: Campaign,
    assignment: Assignment,
    protocol: LiveChat,
    parameters: Mapping[str, Any],
    models: tuple[str, str],
    now: datetime,
) -> ChatSeat:
    try:
        with transaction.atomic():
            if protocol.chat_mode == "pair":
                return ChatSeat.objects.create(
                    assignment=assignment,
                    campaign=campaign,
                    worker=assignment.worker,
                    stage=ChatSeat.Stage.SITUATION,
                    offered=_labels_offered(campaign, assignment.worker, parameters),
                    last_seen_at=now,
                )
            seat = ChatSeat.objects.create(
                assignment=assignment,
                campaign=campaign,
                worker=assignment.worker,
                stage=ChatSeat.Stage.CHATTING,
                endpoint=models[0],
                endpoint_b=models[1],
                last_seen_at=now,
            )
            if protocol.chat_mode == "side_by_side":
                arena_open(seat=seat, now=now)
            else:
                _bot_chat_open(seat, parameters, now)
            return seat
    except IntegrityError:  # the same worker's other tab created it first
        return ChatSeat.objects.get(assignment=assignment)


def _labels_offered(campaign: Campaign, worker: Worker, parameters: Mapping[str, Any]) -> list:
    """The emotions an ED Speaker may choose from: the least written, overall and by them."""
    situations = Situation.objects.filter(campaign=campaign)
    overall = Counter(situations.values_list("emotion", flat=True))
    mine = Counter(situations.filter(worker=worker).values_list("emotion", flat=True))
    return labels_offer(
        parameters["emotions"], overall, mine, k=parameters["labels_offered"], rng=random.Random()
    )


def _bot_chat_open(seat: ChatSeat, parameters: Mapping[str, Any], now: datetime) -> None:
    """Start a bot chat's conversation with its opener; ask for the bot's first reply if the
    worker's side opens."""
    # Meena §2.3: the bot opens with "Hi!". Its appendix and released logs: the human
    # does, so the worker's side says the opener and the bot's first reply is asked
    # for at once (bot turn 1, labeled like every later one).
    human_opens = parameters["opened_by"] == "human"
    since = now.isoformat()
    pending = {"index": 1, "since": since} if human_opens else None
    dialogue = dialogue_start(
        campaign_id=seat.campaign_id,
        key=f"ssa-{seat.pk}",
        metadata={
            "model": seat.endpoint,
            "seat": seat.pk,
            "opened_by": parameters["opened_by"],
            "pending": pending,
            "failed": None,
        },
    )
    utterance_add(
        dialogue=dialogue,
        index=0,
        speaker="user" if human_opens else "bot",
        worker=seat.worker if human_opens else None,
        text=parameters["opener"],
        signals={"opener": True},
    )
    seat.dialogue = dialogue
    seat.save(update_fields=["dialogue"])
    if pending is not None:
        bot_turn_enqueue(dialogue.pk, 1, since)


# --- the websocket -------------------------------------------------------------------------


def campaign_language(*, slug: str) -> str:
    """Return the language of the campaign at ``slug`` (the site's for an unknown one)."""
    found = Campaign.objects.filter(slug=slug).values_list("language", flat=True).first()
    return found or settings.LANGUAGE_CODE


def seat_for_socket(*, slug: str, query: Mapping[str, str]) -> ChatSeat:
    """Return the seat a websocket's URL parameters and token prove; raise NotAllowed.

    The token is the page's signed assignment token; the provider parameters must name the
    assignment's own worker, as on every worker page.
    """
    campaign = Campaign.objects.filter(slug=slug).first()
    if campaign is None:
        raise NotFound("There is no study at this address.")
    arrival = arrival_parse(query)
    assignment = assignment_authorise(
        campaign=campaign, arrival=arrival, token=query.get("token", "")
    )
    seat = ChatSeat.objects.select_related("campaign", "worker").filter(assignment=assignment)
    found = seat.first()
    if found is None:
        raise NotFound("This chat has not started; please reopen the task link.")
    return found


def seat_connect(*, seat_id: int, channel_name: str, now: datetime | None = None) -> str:
    """Record the seat's new socket; return the channel of the socket it replaces ("" if none)."""
    now = now or timezone.now()
    with transaction.atomic():
        seat = seat_lock(seat_id)
        old = seat.channel_name
        seat.channel_name = channel_name
        seat.last_seen_at = now
        seat.closed_by_page = False
        seat.save(update_fields=["channel_name", "last_seen_at", "closed_by_page"])
    return old if old != channel_name else ""


# Close codes of a page that closed its own socket: 4000 is what chat.js sends when the page
# is hidden for good (pagehide), 1001 ("going away") what a browser sends for a closing tab.
PAGE_CLOSE_CODES = frozenset({1001, 4000})


def seat_disconnect(
    *, seat_id: int, channel_name: str, code: int | None = None, now: datetime | None = None
) -> None:
    """Record that the seat's socket closed (unless a newer socket has replaced it), and
    whether the page closed it (``PAGE_CLOSE_CODES``) or the connection was lost."""
    ChatSeat.objects.filter(pk=seat_id, channel_name=channel_name).update(
        channel_name="",
        last_seen_at=now or timezone.now(),
        closed_by_page=code in PAGE_CLOSE_CODES,
    )


def seat_seen(*, seat_id: int, channel_name: str, now: datetime | None = None) -> None:
    """Record a heartbeat (or any frame) from the seat's current socket."""
    ChatSeat.objects.filter(pk=seat_id, channel_name=channel_name).update(
        last_seen_at=now or timezone.now()
    )


def activity_touch(seat: ChatSeat, now: datetime) -> None:
    """Record activity on the seat's assignment (so it is not taken as abandoned), at most
    once a minute: a chat's messages need not each write the assignment row."""
    assignment = seat.assignment
    if assignment.last_activity_at < now - timedelta(seconds=60):
        assignment_touch(assignment=assignment, now=now)


def seat_finish(seat: ChatSeat, stage: str, reason: str, now: datetime) -> None:
    """End the seat in ``stage`` and submit its assignment if that stage is paid.

    The caller holds the lock of whatever the seat's conversation hangs on (pair or dialogue).
    """
    seat_set_stage(seat=seat, stage=stage, reason=reason, now=now)
    if stage in ChatSeat.PAID_STAGES:
        assignment_complete(assignment=seat.assignment, now=now)


# --- what the worker sees ------------------------------------------------------------------


def seconds_since(moment: datetime, now: datetime) -> float:
    """Return the seconds from ``moment`` to ``now`` (never negative)."""
    return max(0.0, (now - moment).total_seconds())


def older_than(moment: datetime, now: datetime, seconds: float) -> bool:
    """Tell whether ``moment`` is more than ``seconds`` before ``now``."""
    return moment < now - timedelta(seconds=seconds)


def seat_paid(assignment: Assignment) -> bool:
    """Tell whether the assignment's chat seat ended in a paid way (docs/chat.md, "Payment
    policy"): the core counts it as work to pay for (``ChatConfig.ready``)."""
    return ChatSeat.objects.filter(assignment=assignment, stage__in=ChatSeat.PAID_STAGES).exists()
