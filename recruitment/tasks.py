"""Celery tasks of recruitment: reconciliation with the providers (beat schedule)."""

from celery import shared_task

from recruitment.reconcile import payments_reconcile
from recruitment.sync import publications_sync


@shared_task(soft_time_limit=240, time_limit=300)
def providers_sync() -> dict[str, str]:
    """Reconcile every live publication with its provider (idempotent; one failing is logged)."""
    return publications_sync(actor="celery beat")


@shared_task(soft_time_limit=240, time_limit=300)
def payments_sweep() -> dict[str, int]:
    """Resolve payments whose send was cut off (idempotent: each is claimed before it is
    checked, and one provider being down only leaves its payments for the next sweep)."""
    return payments_reconcile(actor="celery beat")
