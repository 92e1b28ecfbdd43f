"""The five events, each a receiver of the signal sent once where it happens
(``annotation.signals``, ``dashboard.signals``; connected in ``WebhooksConfig.ready``); each
builds its ``data`` lazily.

Signals run inside the sender's transaction (the event's rows commit with it); with no
endpoint for the event, each costs one query and builds nothing.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from annotation.models import Assignment, Campaign, Worker
from dashboard.models import Job
from webhooks.models import Event
from webhooks.services import BUDGET_LOW_SHARE, webhook_emit


def assignment_submitted(*, assignment: Assignment, **_: Any) -> None:
    """An assignment became submitted (its row lock held by the caller)."""

    def data() -> dict[str, Any]:
        return {
            "assignment": assignment.pk,
            "worker": Worker.objects.values_list("pseudonym", flat=True).get(
                pk=assignment.worker_id
            ),
            "provider_assignment_id": assignment.provider_assignment_id,
            "items": assignment.items_done,
            "submitted_at": assignment.submitted_at,
        }

    webhook_emit(campaign=assignment.campaign_id, event=Event.ASSIGNMENT_SUBMITTED, data=data)


def campaign_finished(*, campaign: Campaign, **_: Any) -> None:
    """The campaign was finished (for good)."""
    webhook_emit(campaign=campaign, event=Event.CAMPAIGN_FINISHED, data={"status": "finished"})


def budget_spent(*, campaign: Campaign, committed: Decimal, extra: Decimal, **_: Any) -> None:
    """Emit ``budget.low`` if spending ``extra`` takes what is left under 10% of the budget.

    Only the spending that crosses the line emits (again only after the budget was raised
    above it). The caller holds the campaign's row lock (``budget_check``), so two spendings
    cannot both cross it.
    """
    budget = Decimal(campaign.budget)
    line = budget * BUDGET_LOW_SHARE
    before, after = budget - committed, budget - committed - extra
    if budget > 0 and before >= line > after:
        webhook_emit(
            campaign=campaign,
            event=Event.BUDGET_LOW,
            data={
                "budget": f"{budget:.2f}",
                "committed": f"{committed + extra:.2f}",
                "remaining": f"{after:.2f}",
                "threshold": f"{BUDGET_LOW_SHARE:.2f}",
            },
        )


def job_done(*, job: Job, **_: Any) -> None:
    """A report or export job finished; its files are ready."""

    def data() -> dict[str, Any]:
        row = Job.objects.filter(pk=job.pk).values("kind", "options", "files").get()
        slug = Campaign.objects.values_list("slug", flat=True).get(pk=job.campaign_id)
        return {
            "job": job.pk,
            "kind": row["kind"],
            "options": row["options"],
            "files": list(row["files"] or []),
            "status_url": f"/api/v1/campaigns/{slug}/jobs/{job.pk}",
        }

    webhook_emit(campaign=job.campaign_id, event=Event.JOB_DONE, data=data)


def worker_blocked(*, campaign: Campaign, worker: Worker, reason: str, **_: Any) -> None:
    """A worker was soft-blocked in the campaign (and was not before)."""
    webhook_emit(
        campaign=campaign,
        event=Event.WORKER_BLOCKED,
        data=lambda: {"worker": worker.pseudonym, "reason": reason[:300]},
    )
