"""What the dashboard does: start and run report/export jobs, and act on workers.

What a job builds (the report snapshot, the export files) lives in ``job_builds``.

Every action on a worker goes through the provider interface when the campaign is published
(``recruitment``) and is written to the AuditLog, whoever calls it.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Mapping
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from annotation import exports
from annotation.models import (
    Assignment,
    AuditLog,
    Campaign,
    Dialogue,
    Judgment,
    Worker,
    WorkerBlock,
)
from annotation.protocols import DialogueItems, registry
from annotation.quality import worker_soft_block
from annotation.services import assignment_set_status, audit_add, worker_forget
from corpora import WRITERS
from dashboard import signals as dashboard_signals
from dashboard.files import job_files_delete, job_files_save
from dashboard.job_builds import export_build, report_build, table_records
from dashboard.judges import judges_report_build
from dashboard.models import Job
from dashboard.money import money_text, provider_currency
from dashboard.selectors import report_pending
from evalsite.errors import AnnotationError, InvalidParameters, NotFound
from evalsite.outbox import job_send_on_commit, jobs_sweep
from evalstats.aggregation import AGGREGATES
from recruitment.models import Publication
from recruitment.payments import bonus_pay
from recruitment.review import assignment_approve, assignment_reject
from recruitment.workers import worker_block

logger = logging.getLogger(__name__)

# Judgments export as tables; dialogues (collected chats, emotion-labeled dialogues with
# their gold labels) also in ParlAI's format; the study as a study file with its items
# (``annotation.studyfiles``), which the wizard or ``campaign_create`` reads back.
EXPORTS: dict[str, tuple[str, ...]] = {
    "judgments": exports.FORMATS,
    "dialogues": tuple(WRITERS),
    "study": ("yaml", "json"),
}
JOB_TASK = "dashboard.tasks.job_run"
WORKER_ACTIONS: tuple[str, ...] = ("approve", "reject", "soft_block", "bonus", "block", "forget")


# --- jobs -----------------------------------------------------------------------------------


def job_start(
    *, campaign: Campaign, kind: str, options: Mapping[str, Any] | None = None, user: Any = None
) -> Job:
    """Create a job and queue its Celery task once the transaction commits.

    Without a broker (the embedded default) the task runs at once, in this process. With a
    broker that is down the job stays queued, and ``jobs_dispatch`` sends it later.
    """
    options = dict(options or {})
    if kind == Job.Kind.EXPORT:
        what, fmt = options.get("what") or "judgments", options.get("format")
        if what not in EXPORTS:
            raise InvalidParameters(f"Export judgments, dialogues or the study, not {what!r}.")
        if fmt not in EXPORTS[what]:
            raise InvalidParameters(
                f"Unknown export format {fmt!r} for {what}; choose one of "
                f"{', '.join(EXPORTS[what])}."
            )
        if what == "dialogues" and not _has_dialogues(campaign):
            raise InvalidParameters("This campaign has no dialogues; export its judgments.")
        options = {
            "what": what,
            "format": fmt,
            "include_flagged": bool(options.get("include_flagged")),
            "judges": what == "judgments" and bool(options.get("judges")),
            "by_author": what == "dialogues" and bool(options.get("by_author")),
        }
    elif kind == Job.Kind.REPORT:
        aggregate = options.get("aggregate") or "majority"
        if aggregate not in AGGREGATES:
            raise InvalidParameters(
                f"Aggregate labels by {', '.join(AGGREGATES)}, not {str(aggregate)[:20]!r}."
            )
        options = {"aggregate": aggregate}
    elif kind == Job.Kind.JUDGES:
        options = {}
    else:
        raise InvalidParameters(f"Unknown job kind {kind!r}.")
    job = Job.objects.create(
        campaign=campaign,
        kind=kind,
        options=options,
        created_by=user if getattr(user, "is_authenticated", False) else None,
        message="Waiting for a worker…",
    )
    job_send_on_commit(Job, job.pk, JOB_TASK)
    return job


def jobs_dispatch() -> int:
    """Send the jobs whose task the broker did not take when they were started (beat, every
    minute; ``evalsite.outbox``); return how many were sent."""
    return jobs_sweep(Job, JOB_TASK)


def _has_dialogues(campaign: Campaign) -> bool:
    """Whether the campaign collected dialogues or labels whole dialogues (EmotionLines)."""
    try:
        protocol = registry.get(campaign.protocol)
    except KeyError:
        return False
    return (
        isinstance(protocol, DialogueItems) or Dialogue.objects.filter(campaign=campaign).exists()
    )


# A live campaign's report is rebuilt at most this often, however often its page reloads.
REPORT_MIN_INTERVAL = timedelta(minutes=1)


def report_refresh_due(
    campaign: Campaign, *, built_from: int | None, built_at: datetime | None, judgments: int
) -> bool:
    """Whether a page should queue a new report: judgments arrived since the snapshot built
    from ``built_from`` judgments at ``built_at`` (None: no snapshot), none is pending, and
    the snapshot is at least ``REPORT_MIN_INTERVAL`` old.

    Only with a broker: without one a report would be built inside the page request.
    """
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return False
    if built_from == judgments:
        return False
    if built_at is not None and timezone.now() - built_at < REPORT_MIN_INTERVAL:
        return False
    return not report_pending(campaign)


def _progress(job: Job, fraction: float, message: str) -> None:
    Job.objects.filter(pk=job.pk).update(progress=min(1.0, max(0.0, fraction)), message=message)


def job_run(job_id: int) -> bool:
    """Run the job (idempotent: a finished job is left alone, a rerun replaces its files in
    the shared storage, ``dashboard.files``)."""
    job = Job.objects.select_related("campaign").filter(pk=job_id).first()
    if job is None or job.status == Job.Status.DONE:
        return True
    Job.objects.filter(pk=job.pk).update(
        status=Job.Status.RUNNING, started_at=timezone.now(), error=""
    )
    try:

        def progress(fraction: float, message: str) -> None:
            _progress(job, fraction, message)

        job_files_delete(job)
        # Built in a folder of this process, then saved where every web process reads them.
        with tempfile.TemporaryDirectory(prefix=f"evalsite-job-{job.pk}-") as name:
            folder = Path(name)
            if job.kind == Job.Kind.JUDGES:
                result, files = judges_report_build(job, folder, progress, table_records)
            else:
                run = report_build if job.kind == Job.Kind.REPORT else export_build
                result, files = run(job, folder, progress)
            job_files_save(job, folder, files)
    except Exception as exc:  # the job row carries the failure to the page; no re-raise,
        # which in eager mode (no broker) would turn the researcher's POST into a 500
        logger.exception("dashboard job %s failed", job.pk)
        Job.objects.filter(pk=job.pk).update(
            status=Job.Status.FAILED,
            error=f"{type(exc).__name__}: {exc}"[:2000],
            message="Failed",
            finished_at=timezone.now(),
        )
        return False
    # Conditional, so a job delivered twice (a worker lost mid-job, its task redelivered) is
    # announced once: only the run that moves it from running to done sends job_done.
    finished = Job.objects.filter(pk=job.pk, status=Job.Status.RUNNING).update(
        status=Job.Status.DONE,
        progress=1.0,
        message="Done",
        result=result,
        files=files,
        finished_at=timezone.now(),
    )
    if not finished:
        return True
    dashboard_signals.job_done.send(Job, job=job)
    if job.kind == Job.Kind.REPORT:
        _reports_prune(job)
    return True


# A job still running this long after it started was killed (hard time limit 360 s, a dead
# worker whose task is not coming back): jobs_expire marks it failed so the page stops waiting.
JOB_STALE_AFTER = timedelta(minutes=15)


def jobs_expire(*, now: datetime | None = None) -> int:
    """Mark jobs queued or running for longer than ``JOB_STALE_AFTER`` failed; return how many.

    A redelivered task that runs later anyway reruns the job (``job_run`` is idempotent)."""
    now = now or timezone.now()
    return Job.objects.filter(
        status__in=[Job.Status.QUEUED, Job.Status.RUNNING],
        created_at__lt=now - JOB_STALE_AFTER,
    ).update(
        status=Job.Status.FAILED,
        error="The job did not finish: its worker stopped or it ran past its time limit.",
        message="Failed",
        finished_at=now,
    )


# Report snapshots kept per campaign: the newest counts, and the one before it stays so that a
# page which loaded it just before the newest finished can still fetch its figures.
REPORTS_KEPT = 2


def _reports_prune(newest: Job) -> None:
    """Delete the campaign's older report snapshots and their files (a page left open on a live
    campaign builds one every few minutes), all but the ``REPORTS_KEPT`` newest."""
    finished = Job.objects.select_related("campaign").filter(
        campaign=newest.campaign_id,
        kind=Job.Kind.REPORT,
        status__in=[Job.Status.DONE, Job.Status.FAILED],
        pk__lte=newest.pk,
    )
    kept = list(finished.order_by("-pk").values_list("pk", flat=True)[:REPORTS_KEPT])
    for job in finished.exclude(pk__in=kept):
        try:
            job_files_delete(job)
        except Exception:  # the storage unreachable: the row stays, the next snapshot retries
            logger.exception("the files of dashboard job %s were not deleted", job.pk)
            continue
        job.delete()


# --- worker actions -------------------------------------------------------------------------


def _publication(campaign: Campaign, worker: Worker) -> Publication | None:
    return (
        Publication.objects.filter(campaign=campaign, provider=worker.provider)
        .exclude(status=Publication.Status.FAILED)
        .first()
    )


def _submitted(campaign: Campaign, worker: Worker) -> list[Assignment]:
    return list(
        Assignment.objects.filter(
            campaign=campaign, worker=worker, status=Assignment.Status.SUBMITTED
        ).order_by("pk")
    )


# Actions the dashboard carries out only after a confirmation step.
CONFIRMED_ACTIONS: tuple[str, ...] = ("reject", "block", "forget")


def worker_act_check(
    *, campaign: Campaign, pseudonym: str, action: str, reason: str = ""
) -> Worker:
    """Check what ``worker_act`` checks before acting (the action, the worker, a reason where
    one is needed); return the worker. The confirmation page asks only after this passes."""
    if action not in WORKER_ACTIONS:
        raise InvalidParameters(
            f"Unknown action {action!r}; use one of {', '.join(WORKER_ACTIONS)}."
        )
    worker = Worker.objects.filter(pseudonym=pseudonym).first()
    if worker is None or not (
        Judgment.objects.filter(worker=worker, item__campaign=campaign).exists()
        or Assignment.objects.filter(worker=worker, campaign=campaign).exists()
    ):
        raise NotFound(f"No worker {pseudonym!r} in this campaign.")
    if action == "reject" and not reason.strip():
        raise InvalidParameters("A rejection needs feedback for the worker.")
    if action == "block" and not reason.strip():
        raise InvalidParameters("A block needs a reason.")
    return worker


def worker_act(
    *,
    campaign: Campaign,
    pseudonym: str,
    action: str,
    actor: str,
    reason: str = "",
    amount: str = "",
    scope: QuerySet[Campaign] | None = None,
) -> str:
    """Approve, reject, soft-block, bonus, block or forget one worker of the campaign; return a
    summary.

    Approve and reject act on every submitted assignment of the worker here, through the
    campaign's publication on the worker's provider; a campaign published nowhere (a demo,
    a lab run) is reviewed here alone. Forget erases the worker in ``scope``, the campaigns the
    acting researcher may see (every one for a superuser; docs/protocols.md, "Withdrawal and
    erasure"). Everything lands in the AuditLog.
    """
    worker = worker_act_check(campaign=campaign, pseudonym=pseudonym, action=action, reason=reason)
    reason = reason.strip()
    if action == "approve":
        return _review(campaign, worker, actor, reason, approve=True)
    if action == "reject":
        if not reason:
            raise InvalidParameters("A rejection needs feedback for the worker.")
        return _review(campaign, worker, actor, reason, approve=False)
    if action == "soft_block":
        worker_soft_block(campaign=campaign, worker=worker, reason=reason or f"by {actor}")
        audit_add(
            action=AuditLog.Action.SOFT_BLOCK,
            actor=actor,
            campaign=campaign,
            worker=worker,
            detail=reason or "no reason given",
        )
        return f"{pseudonym} gets no more items here; their judgments leave the report."
    if action == "block":
        if not reason:
            raise InvalidParameters("A block needs a reason.")
        if WorkerBlock.objects.filter(
            worker=worker, owner_id=campaign.owner_id, lifted_at=None
        ).exists():
            return f"{pseudonym} was already blocked; nothing changed."
        worker_block(worker=worker, reason=reason, actor=actor, campaign=campaign)
        where = "this researcher's studies" if campaign.owner_id else "every study"
        return f"{pseudonym} is blocked from {where}, on {worker.provider} and here."
    if action == "forget":  # a withdrawal asked of the researcher: erasure, by the policy
        done = worker_forget(worker=worker, actor=actor, campaign=campaign, scope=scope)
        return (
            f"{pseudonym} was already forgotten." if done.already else f"{pseudonym} is forgotten."
        )
    payment = bonus_pay(campaign=campaign, worker=worker, amount=amount, reason=reason, actor=actor)
    return (
        f"Bonus of {money_text(payment.amount, provider_currency(payment.provider))} to "
        f"{pseudonym}: {payment.status}."
    )


def _review(campaign: Campaign, worker: Worker, actor: str, feedback: str, *, approve: bool) -> str:
    """Approve or reject the worker's submitted assignments: through the provider when the
    campaign is published on the worker's, else here alone. Each assignment on its own, so a
    provider error part-way keeps what was done and names what was not."""
    assignments = _submitted(campaign, worker)
    if not assignments:
        return f"{worker.pseudonym} has no submitted assignment waiting for review."
    publication = _publication(campaign, worker)
    verb = "Approved" if approve else "Rejected"
    for done, assignment in enumerate(assignments):
        try:
            if publication is not None:
                review = assignment_approve if approve else assignment_reject
                review(
                    publication=publication, assignment=assignment, actor=actor, feedback=feedback
                )
            else:
                _review_here(campaign, worker, assignment, actor, feedback, approve=approve)
        except AnnotationError as exc:
            raise AnnotationError(
                f"{verb} {done} of {len(assignments)} assignment(s) of {worker.pseudonym}; "
                f"then: {exc.message}"
            ) from None
    return f"{verb} {len(assignments)} assignment(s) of {worker.pseudonym}."


@transaction.atomic
def _review_here(
    campaign: Campaign,
    worker: Worker,
    assignment: Assignment,
    actor: str,
    feedback: str,
    *,
    approve: bool,
) -> None:
    """Review an assignment of a campaign published on no provider (the demo, a lab run)."""
    status = Assignment.Status.APPROVED if approve else Assignment.Status.REJECTED
    feedback = "" if approve else feedback
    if not assignment_set_status(assignment=assignment, status=status, feedback=feedback):
        return
    audit_add(
        action=AuditLog.Action.APPROVE if approve else AuditLog.Action.REJECT,
        actor=actor,
        campaign=campaign,
        worker=worker,
        assignment=assignment,
        detail=(
            "approved here: the campaign is published on no provider"
            if approve
            else f"rejected here: {feedback}"
        ),
    )
