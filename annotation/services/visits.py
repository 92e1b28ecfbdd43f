"""A worker's visit to the task page: who arrives, their assignment and their next item."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext

from annotation import quality
from annotation.allocation import item_next, items_available
from annotation.models import Assignment, Campaign, Item, Lease, Worker
from annotation.services.assignments import (
    _transition,
    arrival_admit,
    assignment_complete,
    assignment_of_arrival,
    assignment_start,
)
from evalsite.errors import InvalidParameters, NotAllowed
from providers import Arrival


def worker_get_or_create(*, provider: str, external_id: str) -> Worker:
    """Return the worker known to ``provider`` as ``external_id``, creating them once."""
    return _worker_of(provider, external_id)[0]


def _worker_of(provider: str, external_id: str, *, absent: bool = False) -> tuple[Worker, bool]:
    """The worker known to ``provider`` as ``external_id`` and whether this call created them.
    ``absent``: a read just found none, so create first (one statement) and read only if a
    concurrent request created them meanwhile."""
    if provider not in Worker.Provider.values:
        raise InvalidParameters(gettext("Unknown provider %(name)s.") % {"name": repr(provider)})
    if not absent:
        return Worker.objects.get_or_create(provider=provider, external_id=external_id)
    try:
        with transaction.atomic():
            return Worker.objects.create(provider=provider, external_id=external_id), True
    except IntegrityError:  # a concurrent first visit created them
        return Worker.objects.get(provider=provider, external_id=external_id), False


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
        _transition(assignment, Assignment.Status.RETURNED, now)
    return Visit(kind="stopped", stop=stop)


def _assignment_begin(
    campaign: Campaign, arrival: Arrival, worker: Worker, *, new: bool, now: datetime
) -> Assignment | None:
    """Start the arriving worker's assignment (no assignment of theirs or of the arrival's
    session is open); None when no item is left for them. ``new``: this visit created the
    worker, who holds no lease and no assignment."""
    if not campaign.is_live:
        raise NotAllowed(gettext("This study is not open at the moment."))
    has_live_lease = (
        not new
        and Lease.objects.filter(
            worker=worker, item__campaign=campaign, expires_at__gt=now
        ).exists()
    )
    if not has_live_lease and not items_available(campaign=campaign, worker=worker, now=now):
        return None
    arrival_admit(campaign=campaign, arrival=arrival, now=now)
    return assignment_start(
        campaign=campaign,
        worker=worker,
        provider_assignment_id=arrival.assignment_id,
        provider_hit_id=arrival.hit_id,
        submit_to=arrival.submit_to,
        session_checked=True,
        new_worker=new,
    )


def worker_visit(
    *,
    campaign: Campaign,
    arrival: Arrival,
    worker: Worker | None = None,
    arrived: bool = False,
    now: datetime | None = None,
) -> Visit:
    """Start or continue the arriving worker's assignment and lease their next item.

    ``worker``: the arrival's worker as already read (``arrival_verify``), else read here
    (and created on their first visit); ``arrived``: that read found no such worker, so they
    are created here without another read, and a worker created by this visit has no block,
    lease or assignment to look for (a launch's first pages: 5 statements fewer)."""
    now = now or timezone.now()
    if arrival.preview:
        raise NotAllowed(gettext("This is a preview: accept the HIT to start."))
    new = False
    if worker is None:
        worker, new = _worker_of(arrival.provider, arrival.worker_id, absent=arrived)
        if new:  # their standing here, as ``quality.workers_standing`` reads it: nothing
            worker.standing_in = campaign.pk  # type: ignore[attr-defined]
            worker.blocked = worker.soft_blocked = False  # type: ignore[attr-defined]
    elif (worker.provider, worker.external_id) != (arrival.provider, arrival.worker_id):
        raise ValueError("worker_visit: the worker is not the arrival's")
    stop = quality.worker_stop_reason(campaign=campaign, worker=worker)
    if stop:
        return _visit_stopped(campaign, worker, stop, now)
    assignment = None
    if arrival.assignment_id or not new:  # a provider session may be another worker's
        assignment = assignment_of_arrival(
            campaign=campaign, worker=worker, assignment_id=arrival.assignment_id
        )
    if assignment is not None and not assignment.is_open:
        return Visit(kind="done", assignment=assignment)
    if assignment is None:
        assignment = _assignment_begin(campaign, arrival, worker, new=new, now=now)
        if assignment is None:
            return Visit(kind="nothing")
    if not campaign.is_live:
        raise NotAllowed(gettext("This study is paused or closed; your answers so far are saved."))
    assignment.campaign, assignment.worker = campaign, worker  # spare reloading them
    item = item_next(assignment=assignment, now=now)
    if item is None:
        if assignment.judgments.exists():
            return Visit(kind="done", assignment=assignment_complete(assignment=assignment))
        _transition(assignment, Assignment.Status.RETURNED, now)
        return Visit(kind="nothing")
    return Visit(
        kind="item",
        assignment=assignment,
        item=item,
        position=assignment.items_done + 1,
    )
