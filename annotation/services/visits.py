"""A worker's visit to the task page: who arrives, their assignment and their next item."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

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
    if provider not in Worker.Provider.values:
        raise InvalidParameters(gettext("Unknown provider %(name)s.") % {"name": repr(provider)})
    worker, _ = Worker.objects.get_or_create(provider=provider, external_id=external_id)
    return worker


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


def worker_visit(
    *,
    campaign: Campaign,
    arrival: Arrival,
    worker: Worker | None = None,
    now: datetime | None = None,
) -> Visit:
    """Start or continue the arriving worker's assignment and lease their next item.

    ``worker``: the arrival's worker as already read (``arrival_verify``), else read here
    (and created on their first visit)."""
    now = now or timezone.now()
    if arrival.preview:
        raise NotAllowed(gettext("This is a preview: accept the HIT to start."))
    if worker is None:
        worker = worker_get_or_create(provider=arrival.provider, external_id=arrival.worker_id)
    elif (worker.provider, worker.external_id) != (arrival.provider, arrival.worker_id):
        raise ValueError("worker_visit: the worker is not the arrival's")
    stop = quality.worker_stop_reason(campaign=campaign, worker=worker)
    if stop:
        return _visit_stopped(campaign, worker, stop, now)
    assignment = assignment_of_arrival(
        campaign=campaign, worker=worker, assignment_id=arrival.assignment_id
    )
    if assignment is not None and not assignment.is_open:
        return Visit(kind="done", assignment=assignment)
    if assignment is None:
        if not campaign.is_live:
            raise NotAllowed(gettext("This study is not open at the moment."))
        has_live_lease = Lease.objects.filter(
            worker=worker, item__campaign=campaign, expires_at__gt=now
        ).exists()
        if not has_live_lease and not items_available(campaign=campaign, worker=worker, now=now):
            return Visit(kind="nothing")
        arrival_admit(campaign=campaign, arrival=arrival, now=now)
        assignment = assignment_start(
            campaign=campaign,
            worker=worker,
            provider_assignment_id=arrival.assignment_id,
            provider_hit_id=arrival.hit_id,
            submit_to=arrival.submit_to,
        )
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
