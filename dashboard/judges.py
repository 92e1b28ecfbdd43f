"""The judges page's reads and its report job: LLM judges' runs on a campaign and their
agreement with the crowd (``judges``: ``judge_start`` runs, ``judge_jobs`` lists
them, ``campaign_judge_report`` compares them with the crowd). The report is built by a
dashboard job of kind ``judges`` (``dashboard.services.job_run``), like the crowd's report.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from annotation.models import Campaign
from dashboard.models import Job
from evalstats.reports import figures_index, report_write
from judges.selectors import campaign_judge_report, judge_jobs
from judges.services import LABEL_PREFIX
from modelhub.models import GenerationJob

JUDGE_BOOT = 500  # resamples of the report's intervals (the command's default: 1000)


@dataclass(frozen=True)
class JudgeRun:
    """One judge job as the page shows it: the judge, its model, progress and refusals."""

    job: GenerationJob
    judge: str
    refused: int

    @property
    def percent(self) -> int:
        return round(100 * self.job.done / self.job.total) if self.job.total else 100


def judge_runs(campaign: Campaign) -> list[JudgeRun]:
    """Return the campaign's judge runs, newest first."""
    prefix = f"{LABEL_PREFIX}{campaign.slug}:"
    runs = []
    for job in judge_jobs(campaign):
        finished = job.status == GenerationJob.Status.DONE
        refused = len([x for x in job.error.splitlines() if x.strip()]) if finished else 0
        runs.append(JudgeRun(job=job, judge=job.label[len(prefix) :], refused=refused))
    return runs


def judges_report_latest(campaign: Campaign) -> Job | None:
    """Return the newest finished judges report of the campaign, if any."""
    return (
        Job.objects.filter(campaign=campaign, kind=Job.Kind.JUDGES, status=Job.Status.DONE)
        .order_by("-finished_at", "-pk")
        .first()
    )


def judges_report_build(
    job: Job,
    folder: Path,
    progress: Callable[[float, str], None],
    records: Callable[[Any], dict[str, Any]],
) -> tuple[dict[str, Any], list[str]]:
    """Build the judge–human agreement report into ``folder`` (tables, the agreement
    figure with its alt text); return the snapshot and the files."""
    campaign = job.campaign
    progress(0.1, "Comparing the judges with the crowd…")
    report = campaign_judge_report(campaign, n_boot=JUDGE_BOOT, seed=0, level=0.95)
    progress(0.8, "Writing tables and the figure…")
    stem = f"{campaign.slug}_judges"
    written = report_write(report, folder, stem=stem)
    result = {
        "title": report.title,
        "tables": {name: records(table) for name, table in report.tables.items()},
        "figures": figures_index(report, stem=stem),
        "notes": list(report.notes),
    }
    return result, sorted(p.name for p in written)
