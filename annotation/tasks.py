"""Celery tasks of the crowd side: housekeeping that runs on the beat schedule."""

from celery import shared_task

from annotation.allocation import leases_purge_expired
from annotation.services import assignments_abandon_stale


@shared_task(soft_time_limit=120, time_limit=150)
def assignments_housekeeping() -> dict[str, int]:
    """Mark idle open assignments abandoned and delete expired leases (idempotent)."""
    return {
        "abandoned": assignments_abandon_stale(),
        "leases_purged": leases_purge_expired(),
    }
