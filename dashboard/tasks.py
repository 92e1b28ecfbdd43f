"""Celery tasks of the dashboard: report builds and exports (progress in ``Job``)."""

from celery import shared_task

from dashboard import services


@shared_task(name="dashboard.tasks.job_run")
def job_run(job_id: int) -> bool:
    """Run one dashboard job; idempotent, so a redelivered task is harmless."""
    return services.job_run(job_id)


@shared_task(name="dashboard.tasks.jobs_expire")
def jobs_expire() -> int:
    """Mark jobs that stopped without finishing (killed, past the time limit) failed."""
    return services.jobs_expire()
