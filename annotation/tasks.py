"""Celery tasks of the core: housekeeping (beat schedule), adaptive plans and quality
reviews."""

from typing import cast

from celery import shared_task

from annotation import signals
from annotation.allocation import leases_purge_expired
from annotation.quality import quality_review
from annotation.services import assignments_abandon_stale
from annotation.steering_plan import plan_refresh


@shared_task(soft_time_limit=120, time_limit=150)
def assignments_housekeeping() -> dict[str, int]:
    """Let the apps finish what they hold open (the ``housekeeping`` signal: chat ends its
    unrated and deserted chats), then mark idle open assignments abandoned and delete expired
    leases (idempotent); return the counts."""
    counts: dict[str, int] = {}
    for _receiver, result in signals.housekeeping.send(sender=None):
        counts.update(cast(dict[str, int], result))
    counts["abandoned"] = assignments_abandon_stale()
    counts["leases_purged"] = leases_purge_expired()
    return counts


@shared_task(soft_time_limit=240, time_limit=300)
def adaptive_plan_refresh(campaign_id: int) -> dict[str, int]:
    """Recompute an adaptive campaign's plan of pairs and items (idempotent: the latest
    judgments win); enqueued by allocation when the plan is due (annotation.steering)."""
    plan = plan_refresh(campaign_id=campaign_id)
    return {"pairs": len(plan.pairs) if plan else 0, "judged": plan.judged if plan else 0}


@shared_task(soft_time_limit=240, time_limit=300)
def campaign_quality_review(campaign_id: int) -> int:
    """Apply the quality rule to a campaign (asked for by gold answers); return how many
    workers it blocked."""
    from annotation.models import Campaign

    campaign = Campaign.objects.filter(pk=campaign_id).first()
    return 0 if campaign is None else len(quality_review(campaign))
