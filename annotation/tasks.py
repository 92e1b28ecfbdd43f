"""Celery tasks of the crowd side: housekeeping and provider reconciliation (beat schedule),
and the bot turns of live chats (the ``inference`` queue)."""

from celery import shared_task

from annotation.allocation import leases_purge_expired
from annotation.chat.bot import bot_turn_run, ratings_sweep
from annotation.chat.empathetic import chats_sweep
from annotation.payments import publications_sync
from annotation.quality import quality_review
from annotation.services import assignments_abandon_stale
from annotation.steering_plan import plan_refresh


@shared_task(soft_time_limit=120, time_limit=150)
def assignments_housekeeping() -> dict[str, int]:
    """Finish chats left at their closing ratings, mark idle open assignments abandoned and
    delete expired leases (idempotent)."""
    return {
        "unrated_chats_done": ratings_sweep(),
        "abandoned": assignments_abandon_stale(),
        "leases_purged": leases_purge_expired(),
        "chats_ended": chats_sweep(),
    }


@shared_task(soft_time_limit=240, time_limit=300)
def providers_sync() -> dict[str, str]:
    """Reconcile every live publication with its provider (idempotent; one failing is logged)."""
    return publications_sync(actor="celery beat")


@shared_task(acks_late=True, soft_time_limit=300, time_limit=330)
def chat_bot_turn(dialogue_id: int, index: int, attempt: str | None = None) -> dict:
    """Generate, store and push the bot's turn ``index`` of a live chat (interactive SSA).

    On the ``inference`` queue, beside modelhub's tasks: it calls modelhub's ``bot_reply``
    service (the model's decoding preset and repetition filter apply), stores the turn, and
    tells the chat's websocket through the channel layer. Safe to run twice: a turn that is no
    longer awaited (stored, failed or past its deadline) is left alone. No retries: the
    worker is told at once and may ask again.
    """
    return bot_turn_run(dialogue_id=dialogue_id, index=index, attempt=attempt)


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
