"""Reconciliation: bring our assignments in line with what the provider says.

- submitted on the provider while still open here ("submitted elsewhere") → submitted, or
  abandoned if the worker left no answer here;
- approved or rejected on the provider (auto-approval, the provider's web UI) → the same
  here; an approval we did not make is written to the ledger;
- returned → returned; timed out → abandoned; on MTurk, which never lists open assignments,
  an open one whose HIT expired or whose time ran out → abandoned.
Judgments are never touched: closing an assignment only releases its leases. Workers that
quality control stops (cap reached, soft-blocked) are passed to the provider so it stops
offering them our HITs.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from django.utils import timezone

from annotation.models import Assignment, AuditLog, Worker
from annotation.services import assignment_has_work, assignment_set_status, audit_add
from providers import provider_get
from providers.base import HitState, RemoteSubmission
from recruitment.ledger import payment_key
from recruitment.models import Hit, Payment, Publication

logger = logging.getLogger(__name__)
_S = Assignment.Status
_FINAL = {_S.APPROVED, _S.REJECTED}
_GONE_HIT_STATES = {"Reviewable", "Reviewing", "Disposed", "COMPLETED", "AWAITING REVIEW"}


@dataclass
class SyncReport:
    """What one reconciliation changed (counts by new status) and what it could not match."""

    changed: dict[str, int] = field(default_factory=dict)
    unknown: list[str] = field(default_factory=list)  # provider ids with no assignment here
    mismatched: list[str] = field(default_factory=list)  # provider worker ≠ our worker
    marked_ineligible: int = 0

    def count(self, status: str) -> None:
        self.changed[status] = self.changed.get(status, 0) + 1

    def summary(self) -> str:
        """Return one line for the command's output and the audit log."""
        parts = [f"{n} {status}" for status, n in sorted(self.changed.items())] or ["no changes"]
        if self.unknown:
            parts.append(f"{len(self.unknown)} provider submission(s) with no work here")
        if self.mismatched:
            parts.append(f"{len(self.mismatched)} worker mismatch(es)")
        if self.marked_ineligible:
            parts.append(f"{self.marked_ineligible} worker(s) kept out (cap or soft block)")
        return ", ".join(parts)


def _target(local: str, remote: RemoteSubmission, has_work: bool) -> str | None:
    """Return the status our assignment should take, or None to leave it."""
    if local in _FINAL:
        return None
    if remote.status == "approved":
        return _S.APPROVED
    if remote.status == "rejected":
        return _S.REJECTED
    if local != _S.ACCEPTED:
        return None
    if remote.status == "submitted":
        return _S.SUBMITTED if has_work else _S.ABANDONED
    if remote.status == "returned":
        return _S.RETURNED
    if remote.status == "expired":
        return _S.ABANDONED
    return None


def _record_outside_approval(publication: Publication, assignment: Assignment) -> None:
    """Write an approval made on the provider's side (auto-approval) into the ledger."""
    key = payment_key("reward", publication.provider, assignment.provider_assignment_id)
    hit = Hit.objects.filter(
        publication=publication, external_id=assignment.provider_hit_id
    ).first()
    if hit is None or Payment.objects.filter(idempotency_key=key).exists():
        return
    Payment.objects.create(
        campaign=publication.campaign,
        provider=publication.provider,
        worker=assignment.worker,
        assignment=assignment,
        kind=Payment.Kind.REWARD,
        amount=hit.reward,
        fee=hit.fee_per_assignment,
        idempotency_key=key,
        status=Payment.Status.PAID,
        paid_at=timezone.now(),
        actor=f"{publication.provider} (approved on the provider's side)",
    )


def _expired_here(assignment: Assignment, hit_state: HitState | None, now: float) -> bool:
    """Return True if an open MTurk assignment can no longer be submitted."""
    if hit_state is None:
        return False
    expires, seconds = hit_state.expires_at, hit_state.assignment_seconds
    if hit_state.status in _GONE_HIT_STATES or (expires is not None and expires < now):
        return True
    return seconds is not None and assignment.accepted_at.timestamp() + seconds < now


def publication_sync(*, publication: Publication, actor: str = "sync") -> SyncReport:
    """Reconcile one publication with its provider (idempotent)."""
    provider = provider_get(publication.provider)
    report = SyncReport()
    if not provider.remote:
        return report
    config = publication.config
    hits = {h.external_id: h for h in publication.hits.all()}
    states = provider.hit_states(config=config, hit_ids=list(hits))
    remote = {r.external_id: r for r in provider.submissions(config=config, hit_ids=list(hits))}
    for hit_id, hit_state in states.items():
        Hit.objects.filter(pk=hits[hit_id].pk).update(status=hit_state.status[:32])
    now = timezone.now()
    local = (
        Assignment.objects.filter(campaign=publication.campaign, worker__provider=provider.name)
        .exclude(provider_assignment_id="")
        .select_related("worker")
    )
    seen = set()
    for assignment in local:
        seen.add(assignment.provider_assignment_id)
        found = remote.get(assignment.provider_assignment_id)
        if found is not None and found.worker_id != assignment.worker.external_id:
            report.mismatched.append(found.external_id)
            continue
        target: str | None = None
        if found is None:
            expired = provider.drops_expired_assignments and assignment.status == _S.ACCEPTED
            state = states.get(assignment.provider_hit_id)
            if expired and _expired_here(assignment, state, time.time()):
                target = _S.ABANDONED
        else:
            target = _target(assignment.status, found, assignment_has_work(assignment))
        if target and assignment_set_status(assignment=assignment, status=target, now=now):
            report.count(target)
            if target == _S.APPROVED:
                _record_outside_approval(publication, assignment)
    report.unknown = [k for k, r in remote.items() if k not in seen and r.status == "submitted"]
    report.marked_ineligible = _keep_out_stopped_workers(publication)
    publication.synced_at = now
    publication.save(update_fields=["synced_at", "config", "updated_at"])
    if report.changed or report.mismatched:
        audit_add(
            action=AuditLog.Action.SYNC,
            actor=actor,
            campaign=publication.campaign,
            provider=provider.name,
            detail=report.summary(),
        )
    return report


def _keep_out_stopped_workers(publication: Publication) -> int:
    """Tell the provider about workers quality control stops (cap reached, soft-blocked)."""
    from annotation.quality import worker_stop_reason

    campaign = publication.campaign
    already = set(publication.config.get("ineligible", []))
    workers = Worker.objects.filter(
        provider=publication.provider, assignments__campaign=campaign
    ).distinct()
    stopped = [
        w.external_id
        for w in workers
        if w.external_id not in already and worker_stop_reason(campaign=campaign, worker=w)
    ]
    if stopped:
        provider_get(publication.provider).mark_ineligible(
            config=publication.config, worker_ids=stopped
        )
        publication.config = {**publication.config, "ineligible": sorted(already | set(stopped))}
    return len(stopped)


def publications_sync(*, actor: str = "sync") -> dict[str, str]:
    """Reconcile every live or paused publication on a remote provider; never raise."""
    results = {}
    for publication in Publication.objects.filter(
        status__in=[Publication.Status.LIVE, Publication.Status.PAUSED]
    ).select_related("campaign"):
        name = f"{publication.campaign.slug}@{publication.provider}"
        try:
            results[name] = publication_sync(publication=publication, actor=actor).summary()
        except Exception as exc:  # one provider being down must not stop the others
            logger.warning("sync of %s failed: %s", name, exc)
            results[name] = f"failed: {getattr(exc, 'message', exc)}"
    return results
