"""Assignments: a worker's paid unit of work, its token and its one transition table."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.core import signing
from django.core.cache import cache
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext, gettext_noop

from annotation import signals
from annotation.allocation import leases_release
from annotation.locks import assignment_lock_closing, assignment_lock_open
from annotation.models import Assignment, Campaign, Lease, Worker
from evalsite.addresses import address_for_limits
from evalsite.errors import Conflict, NotAllowed, TooMany
from providers import PROVIDER_NAMES, Arrival, provider_get

_TOKEN_SALT = "annotation.assignment"


ELSEWHERE = gettext_noop(
    "You already have this study open under another session (another window, device or "
    "HIT): please continue there. If you returned it, it is released after "
    "%(minutes)s minutes without activity, and this link then works."
)


def assignment_token(assignment: Assignment) -> str:
    """Return the signed, timestamped token that the worker page sends back with each answer
    (valid for ``EVALSITE_TOKEN_MAX_AGE`` seconds; every page carries a fresh one).

    Besides the assignment it names what of it never changes and what its authorisation
    compares: its campaign, its worker (row, provider and provider id) and its provider
    session, so that an answer is authorised without a query (``assignment_authorise``).
    """
    worker = assignment.worker
    return signing.dumps(
        {
            "a": assignment.pk,
            "c": assignment.campaign_id,
            "w": [worker.pk, worker.provider, worker.external_id],
            "s": assignment.provider_assignment_id,
        },
        salt=_TOKEN_SALT,
    )


def _token_claims(token: str) -> dict[str, Any]:
    """Return what a genuine, fresh token says; raise NotAllowed otherwise."""
    try:
        claims = signing.loads(token, salt=_TOKEN_SALT, max_age=settings.TOKEN_MAX_AGE)
    except signing.SignatureExpired:
        raise NotAllowed(
            gettext("This page was open too long; please reload it to continue.")
        ) from None
    except (signing.BadSignature, TypeError):
        raise _not_valid() from None
    if not isinstance(claims, dict) or not isinstance(claims.get("a"), int):
        raise _not_valid()
    return claims


def _not_valid() -> NotAllowed:
    return NotAllowed(gettext("This page's session is not valid; please reopen the task link."))


def assignment_from_token(token: str) -> Assignment:
    """Return the assignment a token was issued for; raise NotAllowed if it is not genuine or
    has expired."""
    pk = _token_claims(token)["a"]
    try:
        return Assignment.objects.select_related("campaign", "worker").get(pk=pk)
    except Assignment.DoesNotExist:
        raise _not_valid() from None


def _assignment_unread(claims: dict[str, Any], campaign: Campaign) -> Assignment | None:
    """Return the assignment a token names, built from the token alone (its campaign the one
    given, which the caller checked), or None for a token that does not say enough (one
    issued before tokens carried their worker)."""
    try:
        worker_pk, provider, external_id = claims["w"]
        assignment = Assignment(
            pk=claims["a"],
            campaign_id=int(claims["c"]),
            worker_id=int(worker_pk),
            provider_assignment_id=str(claims["s"]),
        )
        worker = Worker(pk=int(worker_pk), provider=str(provider), external_id=str(external_id))
    except (KeyError, TypeError, ValueError):
        return None
    assignment.worker = worker
    if assignment.campaign_id == campaign.pk:
        assignment.campaign = campaign
    assignment._state.adding = False  # a row that exists, not one to insert
    return assignment


def _elsewhere() -> NotAllowed:
    return NotAllowed(
        gettext(ELSEWHERE) % {"minutes": max(1, settings.EVALSITE_ABANDON_SECONDS // 60)}
    )


def assignment_authorise(
    *, campaign: Campaign, arrival: Arrival, token: str, read: bool = True
) -> Assignment:
    """Return the assignment a worker acts on; raise NotAllowed unless it is theirs.

    The one authorisation check of everything a worker does after arriving (an answer, the
    end screen, a chat socket and its seat): the page's signed token must be genuine and
    fresh, and its assignment this campaign's, the arriving worker's (the URL's provider and
    worker id) and of the arrival's provider session (assignmentId / SESSION_ID). A preview
    acts on nothing.

    ``read=False`` (an answer: ``judgment_submit`` locks and reads the row itself) reads no
    row: the token carries the assignment's campaign, worker and provider session, which never
    change, signed when the page was made. The assignment returned then has only those
    fields (its ``campaign`` the one given, its ``worker`` the token's pk, provider and id):
    its status and counters are the locked row's business. A token older than that form is
    checked against the row, as ``read=True`` does.
    """
    if arrival.preview:
        raise NotAllowed(gettext("This is a preview: accept the HIT to start."))
    claims = _token_claims(token)
    assignment = None if read else _assignment_unread(claims, campaign)
    if assignment is None:
        try:
            assignment = Assignment.objects.select_related("campaign", "worker").get(pk=claims["a"])
        except Assignment.DoesNotExist:
            raise _not_valid() from None
    worker = assignment.worker
    mine = (worker.provider, worker.external_id) == (arrival.provider, arrival.worker_id)
    if assignment.campaign_id != campaign.pk or not mine:
        raise NotAllowed(gettext("This assignment belongs to another worker."))
    if assignment.provider_assignment_id != arrival.assignment_id:
        raise _elsewhere()
    return assignment


def arrival_admit(*, campaign: Campaign, arrival: Arrival, now: datetime | None = None) -> None:
    """Count a new participant of an open-link campaign against their address's hourly
    allowance (``Campaign.open_arrivals_per_address``); raise TooMany past it.

    Called before a new assignment starts. With open links anyone may invent worker ids, so
    this is what keeps one address from draining a study's items; signed links and remote
    providers' workers are not counted. Counted in the cache (shared by every web process
    when it is Redis).
    """
    if not campaign.open_links or not arrival.address or arrival.provider not in PROVIDER_NAMES:
        return
    if provider_get(arrival.provider).remote:
        return
    now = now or timezone.now()
    hour = int(now.timestamp() // 3600)
    # By the network limits count (an IPv6 address by its /64: rotating inside it is no escape).
    address = hashlib.sha256(address_for_limits(arrival.address).encode()).hexdigest()[:24]
    key = f"open-arrivals:{campaign.pk}:{address}:{hour}"
    cache.add(key, 0, timeout=3600)
    try:
        count = cache.incr(key)
    except ValueError:  # evicted between add and incr: count this one alone
        cache.set(key, count := 1, timeout=3600)
    if count > campaign.open_arrivals_per_address:
        wait = 3600 - int(now.timestamp()) % 3600
        raise TooMany(
            gettext(
                "Too many new participants have started this study from your network in the "
                "last hour. Please try again in %(minutes)s minutes."
            )
            % {"minutes": max(1, wait // 60)},
            retry_after=wait,
        )


def assignment_of_arrival(
    *, campaign: Campaign, worker: Worker, assignment_id: str
) -> Assignment | None:
    """Return the assignment an arriving worker continues, or None for a fresh start.

    The assignment of the arrival's provider session (MTurk assignmentId, Prolific
    SESSION_ID; none for a local link) if it exists, else None. The one lookup of the task
    page and the chat page: raise NotAllowed if that session's assignment is another worker's,
    or if the worker has an open assignment under another session — a second arrival with
    the same worker id cannot take it over or return it; the first keeps working.
    """
    # Both in one read: each condition matches at most one row (the campaign's unique
    # constraints on the open assignment of a worker and on a provider session).
    wanted = Q(worker=worker, status=Assignment.Status.ACCEPTED)
    if assignment_id:
        wanted |= Q(provider_assignment_id=assignment_id)
    found = list(Assignment.objects.filter(wanted, campaign=campaign)[:2])
    current = next(
        (a for a in found if a.worker_id == worker.pk and a.status == Assignment.Status.ACCEPTED),
        None,
    )
    if assignment_id:
        assignment = next((a for a in found if a.provider_assignment_id == assignment_id), None)
        if assignment is not None:
            if assignment.worker_id != worker.pk:
                raise NotAllowed(gettext("This assignment belongs to another worker."))
            return assignment  # this session's own, open or finished
    if current is not None and current.provider_assignment_id != assignment_id:
        raise _elsewhere()
    return current


def assignment_start(
    *,
    campaign: Campaign,
    worker: Worker,
    provider_assignment_id: str = "",
    provider_hit_id: str = "",
    submit_to: str = "",
    session_checked: bool = False,
    new_worker: bool = False,
) -> Assignment:
    """Return the worker's open assignment in the campaign, creating it if needed.

    With a provider assignment id (MTurk), that assignment is returned if the worker owns it;
    an open assignment under another provider session is neither returned nor taken over:
    NotAllowed (the abandonment sweep releases it after its inactivity).
    ``session_checked``: the caller found no assignment of that provider session
    (``assignment_of_arrival``); ``new_worker``: the caller created the worker, who has no
    open assignment to lock (a concurrent visit's is found by the unique constraint).
    """
    if not campaign.is_live:
        raise NotAllowed(gettext("This study is not open at the moment."))
    if provider_assignment_id and not session_checked:
        known = Assignment.objects.filter(
            campaign=campaign, provider_assignment_id=provider_assignment_id
        ).first()
        if known is not None:
            if known.worker_id != worker.pk:
                raise NotAllowed(gettext("This assignment belongs to another worker."))
            return known
    with transaction.atomic():
        current = None if new_worker else assignment_lock_open(campaign, worker)
        if current is not None:
            if current.provider_assignment_id == provider_assignment_id:
                return current
            raise _elsewhere()
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
            # A concurrent request created it first: the same worker's (two tabs), or another
            # worker's under the same provider session.
            mine = Assignment.objects.filter(
                campaign=campaign, worker=worker, status=Assignment.Status.ACCEPTED
            ).first()
            if mine is None:
                raise NotAllowed(gettext("This assignment belongs to another worker.")) from None
            return mine


# Allowed status changes. An open assignment ends as submitted, returned (by the worker) or
# abandoned (idle, or expired at the provider); an abandoned one may still be submitted at the
# provider; any ended one may be approved or rejected, which is final. Every change goes
# through ``assignment_set_status`` or, under a lock the caller already holds, ``_transition``.
_S = Assignment.Status
_FINAL = {_S.APPROVED, _S.REJECTED}
TRANSITIONS: dict[str, set[str]] = {
    _S.ACCEPTED: {_S.SUBMITTED, _S.RETURNED, _S.ABANDONED, *_FINAL},
    _S.SUBMITTED: set(_FINAL),
    _S.RETURNED: set(_FINAL),
    _S.ABANDONED: {_S.SUBMITTED, *_FINAL},
    _S.APPROVED: set(),
    _S.REJECTED: set(),
}


@transaction.atomic
def assignment_set_status(
    *, assignment: Assignment, status: str, now: datetime | None = None, feedback: str = ""
) -> bool:
    """Move the assignment to ``status`` under its row lock if the transition table allows it;
    release its leases and keep its judgments; store the reviewer's ``feedback`` with a final
    status. Return False if it had moved on already (the same status again, or a final one):
    callers that reconcile may repeat themselves."""
    locked = assignment_lock_closing(assignment)
    if status not in TRANSITIONS[locked.status]:
        return False
    _transition(locked, status, now, feedback=feedback)
    for field in ("status", "submitted_at", "completion_code", "reviewed_at", "review_feedback"):
        setattr(assignment, field, getattr(locked, field))
    return True


def _transition(
    assignment: Assignment, status: str, now: datetime | None = None, *, feedback: str = ""
) -> None:
    """Apply an allowed change to an assignment whose row lock the caller holds."""
    if status not in TRANSITIONS[assignment.status]:
        raise Conflict(
            gettext("A %(current)s assignment cannot become %(target)s.")
            % {"current": assignment.status, "target": status}
        )
    now = now or timezone.now()
    assignment.status = status
    fields = ["status"]
    if status == _S.SUBMITTED:
        assignment.submitted_at = assignment.submitted_at or now
        assignment.completion_code = assignment.completion_code or secrets.token_hex(4).upper()
        fields += ["submitted_at", "completion_code"]
        signals.assignment_submitted.send(
            Assignment, assignment=assignment
        )  # sent after the commit
    if status in _FINAL:
        assignment.reviewed_at = now
        fields.append("reviewed_at")
        if feedback:
            assignment.review_feedback = feedback[:2000]
            fields.append("review_feedback")
    assignment.save(update_fields=fields)
    leases_release(Lease.objects.filter(assignment=assignment))


def assignment_complete(*, assignment: Assignment, now: datetime | None = None) -> Assignment:
    """Mark an open assignment submitted (idempotent) and release its leases."""
    with transaction.atomic():
        locked = assignment_lock_closing(assignment)
        if locked.status == Assignment.Status.ACCEPTED:
            if not assignment_has_work(locked):
                raise Conflict(gettext("An assignment with no answers cannot be submitted."))
            _transition(locked, Assignment.Status.SUBMITTED, now)
    assignment.refresh_from_db()
    return assignment


# Work kinds besides judgments that an assignment can hold, each a test "is there paid work of
# this kind?", added by the apps above the core in their AppConfig.ready (chat: a seat that
# ended in a paid way). The core never imports them (docs/architecture.md, "Layers").
_WORK_KINDS: list[Callable[[Assignment], bool]] = []


def assignment_work_kind_add(has_work: Callable[[Assignment], bool]) -> None:
    """Count ``has_work(assignment)`` as work to pay for (idempotent per function)."""
    if has_work not in _WORK_KINDS:
        _WORK_KINDS.append(has_work)


def assignment_has_work(assignment: Assignment) -> bool:
    """Tell whether the assignment holds work to pay for: judgments, or work of a kind an app
    added (a live chat that ended in a paid way: finished, partner left, released from the
    lobby, bot failed)."""
    return assignment.judgments.exists() or any(has(assignment) for has in _WORK_KINDS)


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
            locked = assignment_lock_closing(assignment)
            if locked.status == Assignment.Status.ACCEPTED and locked.last_activity_at < cutoff:
                _transition(locked, Assignment.Status.ABANDONED, now)
                count += 1
    return count


def assignment_touch(*, assignment: Assignment, now: datetime | None = None) -> None:
    """Record activity in an open assignment, so it is not abandoned as idle."""
    Assignment.objects.filter(pk=assignment.pk).update(last_activity_at=now or timezone.now())


# Assignment.items_target is a small integer; a model rater's assignment is a record, not a HIT.
_MOST_ITEMS = 32_767


def assignment_model_rater_get(*, campaign: Campaign, worker: Worker, items: int) -> Assignment:
    """Return a model rater's one assignment in the campaign (an LLM judge's), made once for
    ``items`` items.

    It is made in its final status, approved, and never moves: a model's work is neither
    reviewed nor paid, and no crowd read, counter, tally or payment sees it (docs/modelhub.md,
    "Judges"). Raise NotAllowed for a worker who is not a model rater.
    """
    if worker.provider != Worker.Provider.MODEL:
        raise NotAllowed(
            gettext("Worker %(worker)s is not a model rater (an LLM judge).")
            % {"worker": worker.pk}
        )
    now = timezone.now()
    assignment, _ = Assignment.objects.get_or_create(
        campaign=campaign,
        provider_assignment_id=f"judge-{worker.pk}",
        defaults={
            "worker": worker,
            "status": Assignment.Status.APPROVED,
            "items_target": max(1, min(items, _MOST_ITEMS)),
            "submitted_at": now,
            "reviewed_at": now,
            "review_feedback": "LLM judge: a model rater, never reviewed or paid.",
        },
    )
    return assignment


def assignment_model_rater_recount(*, assignment: Assignment) -> None:
    """Set a model rater's ``items_done`` to the items it judged (at most its target), as its
    judge's job finishes; a crowd assignment's count is the submission's, under its lock."""
    if assignment.worker.provider != Worker.Provider.MODEL:
        raise NotAllowed(
            gettext("Assignment %(assignment)s is not a model rater's.")
            % {"assignment": assignment.pk}
        )
    items = assignment.judgments.values("item").distinct().count()
    Assignment.objects.filter(pk=assignment.pk).update(
        items_done=min(items, assignment.items_target)
    )
