"""Celery tasks of the crowd side: housekeeping and provider reconciliation (beat schedule)."""

from celery import shared_task

from annotation.allocation import leases_purge_expired
from annotation.payments import publications_sync
from annotation.services import assignments_abandon_stale


@shared_task(soft_time_limit=120, time_limit=150)
def assignments_housekeeping() -> dict[str, int]:
    """Mark idle open assignments abandoned and delete expired leases (idempotent)."""
    return {
        "abandoned": assignments_abandon_stale(),
        "leases_purged": leases_purge_expired(),
    }


@shared_task(soft_time_limit=240, time_limit=300)
def providers_sync() -> dict[str, str]:
    """Reconcile every live publication with its provider (idempotent; one failing is logged)."""
    return publications_sync(actor="celery beat")
