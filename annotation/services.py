"""Writes of the crowd side: campaigns, items, workers, assignments and judgments.

Views, commands, tasks and the simulated crowd call these functions and nothing else writes
these models. Each checks first (raising an ``AnnotationError`` with a message for the person)
and then changes the database in one transaction.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core import signing
from django.db import IntegrityError, transaction
from django.utils import timezone

from annotation import quality
from annotation.allocation import (
    item_claims,
    item_next,
    items_available,
    lease_fulfil,
    leases_release,
)
from annotation.exceptions import Conflict, InvalidParameters, NotAllowed, NotFound
from annotation.models import (
    Assignment,
    Campaign,
    ChatSeat,
    Item,
    Judgment,
    Lease,
    Participation,
    Worker,
    WorkerBlock,
)
from annotation.protocols import Protocol, registry
from annotation.providers import Arrival
from annotation.tallies import tally_add

_SLUG = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
_TOKEN_SALT = "annotation.assignment"

# Allowed status changes: a campaign goes live, pauses, resumes, and finishes for good.
_TRANSITIONS = {
    Campaign.Status.DRAFT: {Campaign.Status.LIVE, Campaign.Status.FINISHED},
    Campaign.Status.LIVE: {Campaign.Status.PAUSED, Campaign.Status.FINISHED},
    Campaign.Status.PAUSED: {Campaign.Status.LIVE, Campaign.Status.FINISHED},
    Campaign.Status.FINISHED: set(),
}


# --- campaigns and items -----------------------------------------------------------------


def campaign_create(
    *,
    slug: str,
    name: str,
    protocol: str,
    parameters: Mapping[str, Any] | None = None,
    redundancy: int | None = None,
    items_per_assignment: int | None = None,
    lease_seconds: int | None = None,
    owner: User | None = None,
    controls: Mapping[str, Any] | None = None,
) -> Campaign:
    """Create a draft campaign whose parameters the protocol has validated.

    ``controls`` sets quality control (see ``quality.CONTROLS``). Redundancy, items per
    assignment and the minimum time per item start at the protocol's own defaults (SSA: 5
    workers per response; EmotionLines: one dialogue per HIT).
    """
    if not _SLUG.match(slug):
        raise InvalidParameters(
            "The slug must be 1–64 lowercase letters, digits or '-', starting with a letter "
            "or digit."
        )
    try:
        proto = registry.get(protocol)
    except KeyError as exc:
        raise InvalidParameters(str(exc.args[0])) from None
    redundancy = proto.default_redundancy if redundancy is None else redundancy
    if items_per_assignment is None:
        items_per_assignment = proto.default_items_per_assignment
    for field, value, low in (
        ("redundancy", redundancy, 1),
        ("items_per_assignment", items_per_assignment, 1),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= 1000:
            raise InvalidParameters(f"{field} must be a whole number from {low} to 1000.")
    lease = lease_seconds or settings.EVALSITE_LEASE_SECONDS
    if isinstance(lease, bool) or not isinstance(lease, int) or lease < 10:
        raise InvalidParameters("lease_seconds must be a whole number of at least 10.")
    cleaned = proto.clean_parameters(parameters or {})
    checks = {
        "min_seconds_per_item": proto.default_min_seconds,
        "max_items_per_worker": proto.default_max_items_per_worker,
    } | quality.controls_clean(controls or {})
    if Campaign.objects.filter(slug=slug).exists():
        raise Conflict(f"A campaign with the slug {slug!r} already exists.")
    try:
        return Campaign.objects.create(
            slug=slug,
            name=name or slug,
            protocol=protocol,
            parameters=cleaned,
            redundancy=redundancy,
            items_per_assignment=items_per_assignment,
            lease_seconds=lease,
            owner=owner,
            **checks,
        )
    except IntegrityError:
        raise Conflict(f"A campaign with the slug {slug!r} already exists.") from None


@transaction.atomic
def items_add(*, campaign: Campaign, items: Iterable[tuple[str, Mapping[str, Any]]]) -> int:
    """Add (key, payload) items after the protocol validated every one; return how many.

    All or nothing: one bad item refuses the whole batch, naming it. Keys already in the
    campaign with the same payload are skipped, so a repeated import adds nothing.
    """
    protocol = registry.get(campaign.protocol)
    batch: dict[str, dict[str, Any]] = {}
    for n, (key, payload) in enumerate(items, start=1):
        if not isinstance(key, str) or not 0 < len(key) <= 200:
            raise InvalidParameters(f"Item {n}: the key must be 1–200 characters.")
        if key in batch:
            raise InvalidParameters(f"Item {n}: the key {key!r} appears twice.")
        try:
            batch[key] = protocol.clean_item(payload)
        except InvalidParameters as exc:
            raise InvalidParameters(f"Item {n} ({key}): {exc.message}") from None
    existing = dict(
        Item.objects.filter(campaign=campaign, key__in=list(batch)).values_list("key", "payload")
    )
    changed = sorted(k for k, p in existing.items() if p != batch[k])
    if changed:
        raise Conflict(
            f"{len(changed)} item key(s) already exist with other content, e.g. {changed[0]!r}."
        )
    new = [Item(campaign=campaign, key=k, payload=p) for k, p in batch.items() if k not in existing]
    Item.objects.bulk_create(new, batch_size=1000)
    return len(new)


def campaign_set_status(*, campaign: Campaign, status: str) -> Campaign:
    """Move a campaign to ``status`` if the lifecycle allows it."""
    current = Campaign.Status(campaign.status)
    try:
        target = Campaign.Status(status)
    except ValueError:
        raise InvalidParameters(
            f"Unknown status {status!r}; use one of {', '.join(Campaign.Status.values)}."
        ) from None
    if target not in _TRANSITIONS[current]:
        raise Conflict(f"A {current.label.lower()} campaign cannot become {target.label.lower()}.")
    live_chat = registry.get(campaign.protocol).live_chat  # its items come from the chats
    if target == Campaign.Status.LIVE and not live_chat and not campaign.items.exists():
        raise Conflict("A campaign needs items before it can go live.")
    campaign.status = target
    campaign.save(update_fields=["status", "updated_at"])
    return campaign


# --- workers and assignments -------------------------------------------------------------


def worker_get_or_create(*, provider: str, external_id: str) -> Worker:
    """Return the worker known to ``provider`` as ``external_id``, creating them once."""
    if provider not in Worker.Provider.values:
        raise InvalidParameters(f"Unknown provider {provider!r}.")
    worker, _ = Worker.objects.get_or_create(provider=provider, external_id=external_id)
    return worker


def assignment_token(assignment: Assignment) -> str:
    """Return the signed token that the worker page sends back with each answer."""
    return signing.dumps({"a": assignment.pk}, salt=_TOKEN_SALT)


def assignment_from_token(token: str) -> Assignment:
    """Return the assignment a token was issued for; raise NotAllowed if it is not genuine."""
    try:
        pk = signing.loads(token, salt=_TOKEN_SALT)["a"]
        return Assignment.objects.select_related("campaign", "worker").get(pk=pk)
    except (signing.BadSignature, KeyError, TypeError, Assignment.DoesNotExist):
        raise NotAllowed("This page's session is not valid; please reopen the task link.") from None


def assignment_start(
    *,
    campaign: Campaign,
    worker: Worker,
    provider_assignment_id: str = "",
    provider_hit_id: str = "",
    submit_to: str = "",
) -> Assignment:
    """Return the worker's open assignment in the campaign, creating it if needed.

    With a provider assignment id (MTurk), that assignment is returned if the worker owns it;
    an open assignment under another provider id is marked returned first.
    """
    if not campaign.is_live:
        raise NotAllowed("This study is not open at the moment.")
    if provider_assignment_id:
        known = Assignment.objects.filter(
            campaign=campaign, provider_assignment_id=provider_assignment_id
        ).first()
        if known is not None:
            if known.worker_id != worker.pk:
                raise NotAllowed("This assignment belongs to another worker.")
            return known
    with transaction.atomic():
        current = (
            Assignment.objects.select_for_update()
            .filter(campaign=campaign, worker=worker, status=Assignment.Status.ACCEPTED)
            .first()
        )
        if current is not None:
            if current.provider_assignment_id == provider_assignment_id:
                return current
            _assignment_close(current, Assignment.Status.RETURNED)
        try:
            with transaction.atomic():
                return Assignment.objects.create(
                    campaign=campaign,
                    worker=worker,
                    provider_assignment_id=provider_assignment_id,
                    provider_hit_id=provider_hit_id,
                    submit_to=submit_to,
                    items_target=campaign.items_per_assignment,
                )
        except IntegrityError:
            # A concurrent request of the same worker created it first.
            return Assignment.objects.get(
                campaign=campaign, worker=worker, status=Assignment.Status.ACCEPTED
            )


def _assignment_close(assignment: Assignment, status: str, now: datetime | None = None) -> None:
    now = now or timezone.now()
    assignment.status = status
    fields = ["status"]
    if status == Assignment.Status.SUBMITTED:
        assignment.submitted_at = now
        assignment.completion_code = secrets.token_hex(4).upper()
        fields += ["submitted_at", "completion_code"]
    assignment.save(update_fields=fields)
    leases_release(Lease.objects.filter(assignment=assignment))


def assignment_complete(*, assignment: Assignment, now: datetime | None = None) -> Assignment:
    """Mark an open assignment submitted (idempotent) and release its leases."""
    with transaction.atomic():
        locked = Assignment.objects.select_for_update().get(pk=assignment.pk)
        if locked.status == Assignment.Status.ACCEPTED:
            if not assignment_has_work(locked):
                raise Conflict("An assignment with no answers cannot be submitted.")
            _assignment_close(locked, Assignment.Status.SUBMITTED, now)
    assignment.refresh_from_db()
    return assignment


def assignment_has_work(assignment: Assignment) -> bool:
    """Tell whether the assignment holds work to pay for: judgments, or a live chat that
    ended in a paid way (finished, partner left, released from the lobby, bot failed)."""
    return (
        assignment.judgments.exists()
        or ChatSeat.objects.filter(assignment=assignment, stage__in=ChatSeat.PAID_STAGES).exists()
    )


def assignments_abandon_stale(
    *, now: datetime | None = None, idle_seconds: int | None = None
) -> int:
    """Mark open assignments idle for longer than ``idle_seconds`` abandoned; return how many."""
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=idle_seconds or settings.EVALSITE_ABANDON_SECONDS)
    count = 0
    for assignment in Assignment.objects.filter(
        status=Assignment.Status.ACCEPTED, last_activity_at__lt=cutoff
    ):
        with transaction.atomic():
            locked = Assignment.objects.select_for_update().get(pk=assignment.pk)
            if locked.status == Assignment.Status.ACCEPTED and locked.last_activity_at < cutoff:
                _assignment_close(locked, Assignment.Status.ABANDONED, now)
                count += 1
    return count


# --- judgments ---------------------------------------------------------------------------


@dataclass(frozen=True)
class SubmitResult:
    """The outcome of a submission: the stored judgments and whether this call stored them."""

    judgments: list[Judgment]
    created: bool
    assignment_done: bool


def judgment_submit(
    *,
    assignment: Assignment,
    item_id: Any,
    answers: Mapping[str, Any],
    now: datetime | None = None,
) -> SubmitResult:
    """Validate and store one worker's answers to one item, in one transaction.

    Idempotent: the same answers sent again store nothing and succeed. Different answers to an
    item already answered are refused. The item's row lock serialises this with allocation,
    so an item never gets more judgments than the campaign's redundancy.
    """
    now = now or timezone.now()
    campaign = assignment.campaign
    protocol = registry.get(campaign.protocol)
    parameters = protocol.clean_parameters(campaign.parameters)
    cleaned = protocol.clean_answers(parameters, answers)
    answered = Answered(protocol=protocol, parameters=parameters, values=cleaned, sent=answers)
    item_pk = _item_pk(item_id)
    if item_pk is None:
        raise NotFound("This item is not part of this study.")

    try:
        return _judgment_store(assignment, item_pk, answered, now)
    except IntegrityError:
        # Only a concurrent identical submission can get here; it stored the rows.
        return _judgment_store(assignment, item_pk, answered, now)


@dataclass(frozen=True)
class Answered:
    """Validated answers with the protocol and cleaned parameters that validated them."""

    protocol: Protocol
    parameters: dict[str, Any]
    values: dict[str, Any]
    sent: Mapping[str, Any]  # the answers as sent, for the protocol's checks against the item


def presentation_seed(*, item: Item, worker: Worker) -> str:
    """Return the seed of what this worker is shown of this item (stable, not guessable)."""
    return hashlib.sha256(f"{settings.SECRET_KEY}:{item.pk}:{worker.pk}".encode()).hexdigest()


def _item_pk(value: Any) -> int | None:
    """Return an item id sent as an integer or a string of digits; None for anything else."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value if value > 0 else None
    if isinstance(value, str) and value.strip().isdigit() and len(value.strip()) <= 18:
        return int(value.strip())
    return None


@transaction.atomic
def _judgment_store(
    assignment: Assignment, item_pk: int, answered: Answered, now: datetime
) -> SubmitResult:
    item = Item.objects.select_for_update().filter(pk=item_pk, campaign=assignment.campaign).first()
    if item is None:
        raise NotFound("This item is not part of this study.")
    worker = assignment.worker
    # A worker holding a lease on the item has not judged it (lease_fulfil deletes the lease
    # in the transaction that stores the judgments), so only a missing lease can mean that
    # the same answers were sent again.
    lease = Lease.objects.filter(item=item, worker=worker).first()
    if lease is None:
        existing = list(Judgment.objects.filter(item=item, worker=worker))
        if not existing:
            raise NotAllowed(
                "This item is not held for you: it was not given to you, or your time for it "
                "ran out and it went back to the pool. Please continue with the next item."
            )
        if {j.question: j.value for j in existing} != answered.values:
            raise Conflict("You already answered this item; answers cannot be changed.")
        done = not Assignment.objects.filter(pk=assignment.pk, status="accepted").exists()
        return SubmitResult(judgments=existing, created=False, assignment_done=done)

    locked = Assignment.objects.select_for_update().get(pk=assignment.pk)
    locked.campaign, locked.worker = assignment.campaign, assignment.worker  # already loaded
    if locked.status != Assignment.Status.ACCEPTED:
        raise NotAllowed(f"This assignment is {locked.get_status_display().lower()}.")
    if not locked.campaign.is_live:
        raise NotAllowed("This study is not open at the moment.")
    if (
        lease.expires_at <= now
        and item_claims(item=item, now=now, exclude_worker=worker) >= locked.campaign.redundancy
    ):
        leases_release(Lease.objects.filter(pk=lease.pk))
        raise Conflict(
            "Your time for this item ran out and other workers have judged it; "
            "please continue with the next item."
        )
    if (
        Participation.objects.filter(
            campaign=locked.campaign, worker=worker, soft_blocked=True
        ).exists()
        or WorkerBlock.objects.filter(worker=worker, lifted_at=None).exists()
    ):
        raise NotAllowed("There are no more items for you in this study.")
    spent = max(0, int((now - lease.created_at).total_seconds() * 1000))
    quality.answer_time_check(campaign=locked.campaign, spent_ms=spent)
    answered.protocol.check_item_answers(
        answered.parameters, item.payload, answered.sent, spent_ms=spent
    )
    shown = answered.protocol.presentation(
        answered.parameters, item.payload, presentation_seed(item=item, worker=worker)
    )
    judgments = Judgment.objects.bulk_create(
        Judgment(
            item=item,
            worker=worker,
            assignment=locked,
            question=question,
            value=value,
            presentation=shown,
            time_spent_ms=spent,
        )
        for question, value in answered.values.items()
    )
    lease_fulfil(lease=lease, item=item)
    if item.is_gold:
        quality.gold_record(campaign=locked.campaign, worker=worker)
    locked.last_activity_at = now
    locked.items_done += 1
    locked.save(update_fields=["last_activity_at", "items_done"])
    done = locked.items_done >= locked.items_target
    if done:
        _assignment_close(locked, Assignment.Status.SUBMITTED, now)
    if not item.is_gold:
        tally_add(
            campaign_id=locked.campaign_id,
            worker_id=worker.pk,
            level=item.judged,
            judgments=len(judgments),
            now=judgments[0].created_at,  # the stored time, as a scan of the rows would see
        )
    for field in ("status", "last_activity_at", "items_done", "submitted_at", "completion_code"):
        setattr(assignment, field, getattr(locked, field))
    return SubmitResult(judgments=judgments, created=True, assignment_done=done)


# --- a worker's visit to the task page ---------------------------------------------------


@dataclass(frozen=True)
class Visit:
    """What the task page shows: an item to judge, the end of an assignment, or nothing left."""

    kind: str  # "item", "done", "nothing" or "stopped"
    assignment: Assignment | None = None
    item: Item | None = None
    position: int = 0
    # Why quality control ended this worker's part ("blocked", "capped"), else "".
    stop: str = ""


def _visit_stopped(campaign: Campaign, worker: Worker, stop: str, now: datetime) -> Visit:
    """End the worker's open assignment: submitted if it has answers (so it can be paid)."""
    assignment = Assignment.objects.filter(
        campaign=campaign, worker=worker, status=Assignment.Status.ACCEPTED
    ).first()
    if assignment is not None:
        if assignment.judgments.exists():
            return Visit(
                kind="done", assignment=assignment_complete(assignment=assignment), stop=stop
            )
        _assignment_close(assignment, Assignment.Status.RETURNED, now)
    return Visit(kind="stopped", stop=stop)


def worker_visit(*, campaign: Campaign, arrival: Arrival, now: datetime | None = None) -> Visit:
    """Start or continue the arriving worker's assignment and lease their next item."""
    now = now or timezone.now()
    if arrival.preview:
        raise NotAllowed("This is a preview: accept the HIT to start.")
    worker = worker_get_or_create(provider=arrival.provider, external_id=arrival.worker_id)
    stop = quality.worker_stop_reason(campaign=campaign, worker=worker)
    if stop:
        return _visit_stopped(campaign, worker, stop, now)
    assignment = None
    if arrival.assignment_id:
        assignment = Assignment.objects.filter(
            campaign=campaign, provider_assignment_id=arrival.assignment_id
        ).first()
        if assignment is not None and assignment.worker_id != worker.pk:
            raise NotAllowed("This assignment belongs to another worker.")
        if assignment is not None and not assignment.is_open:
            return Visit(kind="done", assignment=assignment)
    else:
        assignment = Assignment.objects.filter(
            campaign=campaign, worker=worker, status=Assignment.Status.ACCEPTED
        ).first()
    if assignment is None:
        if not campaign.is_live:
            raise NotAllowed("This study is not open at the moment.")
        has_live_lease = Lease.objects.filter(
            worker=worker, item__campaign=campaign, expires_at__gt=now
        ).exists()
        if not has_live_lease and not items_available(campaign=campaign, worker=worker, now=now):
            return Visit(kind="nothing")
        assignment = assignment_start(
            campaign=campaign,
            worker=worker,
            provider_assignment_id=arrival.assignment_id,
            provider_hit_id=arrival.hit_id,
            submit_to=arrival.submit_to,
        )
    if not campaign.is_live:
        raise NotAllowed("This study is paused or closed; your answers so far are saved.")
    assignment.campaign, assignment.worker = campaign, worker  # spare reloading them
    item = item_next(assignment=assignment, now=now)
    if item is None:
        if assignment.judgments.exists():
            return Visit(kind="done", assignment=assignment_complete(assignment=assignment))
        _assignment_close(assignment, Assignment.Status.RETURNED, now)
        return Visit(kind="nothing")
    return Visit(
        kind="item",
        assignment=assignment,
        item=item,
        position=assignment.items_done + 1,
    )
