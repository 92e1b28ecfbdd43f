"""Celery tasks of recruitment: reconciliation with the providers (beat schedule)."""

from celery import shared_task

from recruitment.sync import publications_sync


@shared_task(soft_time_limit=240, time_limit=300)
def providers_sync() -> dict[str, str]:
    """Reconcile every live publication with its provider (idempotent; one failing is logged)."""
    return publications_sync(actor="celery beat")
