"""A forgotten worker leaves the reports and exports already built (docs/protocols.md,
"Withdrawal"): a receiver of the core's ``worker_forgotten`` signal, connected in
``DashboardConfig.ready``.

Every report, export and judges' report of a campaign the forget reached, built (or being
built) before it, fails with ``ERASED`` and loses its files: they may hold the worker's
answers, words or provider-side ids. They are not rebuilt here: a rebuild costs a Celery
worker's time per forget and would change a researcher's numbers under them unasked; the
failed job tells them why, and one click builds it again from what is left.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from dashboard.files import job_files_delete
from dashboard.models import Job

ERASED = "Rebuild it: a worker's data was erased after it was built."


def worker_forgotten(*, campaigns: list[int], **_: Any) -> None:
    """Fail the built and running jobs of ``campaigns``; delete their files once the forget
    commits (a forget rolled back keeps them)."""
    jobs = Job.objects.filter(
        campaign_id__in=campaigns, status__in=[Job.Status.DONE, Job.Status.RUNNING]
    ).select_related("campaign")
    erased = list(jobs)
    Job.objects.filter(pk__in=[job.pk for job in erased]).update(
        status=Job.Status.FAILED,
        error=ERASED,
        message="Failed",
        result={},
        files=[],
        finished_at=timezone.now(),
    )

    def delete() -> None:
        for job in erased:
            job_files_delete(job)

    transaction.on_commit(delete)
