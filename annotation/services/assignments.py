"""Assignments: a worker's paid unit of work, its token and its one transition table."""

from __future__ import annotations

import secrets
from datetime import datetime, timedelta

from django.conf import settings
from django.core import signing
from django.db import IntegrityError, transaction
from django.utils import timezone

from annotation.allocation import leases_release
from annotation.exceptions import Conflict, NotAllowed
from annotation.models import Assignment, Campaign, ChatSeat, Lease, Worker

_TOKEN_SALT = "annotation.assignment"


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


def assignment_of_arrival(
    *, campaign: Campaign, worker: Worker, assignment_id: str
) -> Assignment | None:
    """Return the assignment an arriving worker continues, or None for a fresh start.

    With a provider assignment id (MTurk), that assignment if it exists; else the worker's
    open assignment in the campaign. The one lookup of the task page and the chat page:
    raise NotAllowed if the provider's assignment belongs to another worker.
    """
    if not assignment_id:
        return Assignment.objects.filter(
            campaign=campaign, worker=worker, status=Assignment.Status.ACCEPTED
        ).first()
    assignment = Assignment.objects.filter(
        campaign=campaign, provider_assignment_id=assignment_id
    ).first()
    if assignment is not None and assignment.worker_id != worker.pk:
        raise NotAllowed("This assignment belongs to another worker.")
    return assignment


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
            _transition(current, Assignment.Status.RETURNED)
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
    locked = Assignment.objects.select_for_update().get(pk=assignment.pk)
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
            f"A {assignment.get_status_display().lower()} assignment cannot become {status}."
        )
    now = now or timezone.now()
    assignment.status = status
    fields = ["status"]
    if status == _S.SUBMITTED:
        assignment.submitted_at = assignment.submitted_at or now
        assignment.completion_code = assignment.completion_code or secrets.token_hex(4).upper()
        fields += ["submitted_at", "completion_code"]
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
        locked = Assignment.objects.select_for_update().get(pk=assignment.pk)
        if locked.status == Assignment.Status.ACCEPTED:
            if not assignment_has_work(locked):
                raise Conflict("An assignment with no answers cannot be submitted.")
            _transition(locked, Assignment.Status.SUBMITTED, now)
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
                _transition(locked, Assignment.Status.ABANDONED, now)
                count += 1
    return count


def assignment_touch(*, assignment: Assignment, now: datetime | None = None) -> None:
    """Record activity in an open assignment, so it is not abandoned as idle."""
    Assignment.objects.filter(pk=assignment.pk).update(last_activity_at=now or timezone.now())
