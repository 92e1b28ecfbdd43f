"""Celery tasks of the API (default queue): its housekeeping."""

from celery import shared_task

from api.idempotency import idempotency_keys_expire


@shared_task(name="api.tasks.api_housekeeping", ignore_result=True)
def api_housekeeping() -> dict[str, int]:
    """Forget idempotency keys older than a day (beat, every hour)."""
    return {"idempotency_keys_expired": idempotency_keys_expire()}
