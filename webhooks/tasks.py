"""Celery tasks of the webhooks, on their own `webhooks` queue and worker (evalsite/celery.py):
one attempt per task, and the sweep."""

from celery import shared_task

from webhooks import services


@shared_task(name="webhooks.tasks.webhook_deliver", ignore_result=True)
def webhook_deliver(delivery_id: int) -> str:
    """Try one delivery if it is due; idempotent, so a redelivered task sends nothing twice."""
    return services.delivery_attempt(delivery_id=delivery_id)


@shared_task(name="webhooks.tasks.webhooks_due", ignore_result=True)
def webhooks_due() -> dict[str, int]:
    """Queue the deliveries whose retry is due (beat, every minute); forget old ones."""
    ids = services.deliveries_due()
    services.deliveries_queue(ids)
    return {"queued": len(ids), "pruned": services.deliveries_prune()}
