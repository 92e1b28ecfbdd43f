"""Celery tasks of the dashboard: report builds and exports (progress in ``Job``), and its
housekeeping."""

from celery import shared_task

from dashboard import services
from dashboard.drafts import drafts_expire


@shared_task(name="dashboard.tasks.job_run")
def job_run(job_id: int) -> bool:
    """Run one dashboard job; idempotent, so a redelivered task is harmless."""
    return services.job_run(job_id)


@shared_task(name="dashboard.tasks.jobs_expire")
def jobs_expire() -> dict[str, int]:
    """The dashboard's housekeeping (beat, every 5 minutes): mark jobs that stopped without
    finishing (killed, past the time limit) failed, and delete the wizard's stale drafts."""
    return {"jobs_failed": services.jobs_expire(), "drafts_expired": drafts_expire()}


@shared_task(name="dashboard.tasks.jobs_dispatch")
def jobs_dispatch() -> int:
    """Send the jobs the broker did not take when they were started (beat, every minute)."""
    return services.jobs_dispatch()
