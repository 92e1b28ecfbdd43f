"""What the dashboard's report and export jobs build (``services.job_run`` runs them).

The report: the protocol's tables and figures, and the worker-quality table with what each
worker wrote in the chats; the export: judgments (streamed), dialogues or the study file.
Each writes its files into the folder it is given (``services.job_run`` saves them in the
shared storage) and returns the snapshot the page shows with the files' names.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from annotation import exports
from annotation.dataset_reads import campaign_dialogue_records
from annotation.models import Campaign, Judgment, Situation, Utterance, Worker
from annotation.quality import worker_quality
from annotation.selectors import campaign_report
from annotation.services.datasets import records_export
from annotation.studyfiles import study_export
from corpora import SUFFIXES
from dashboard.models import Job
from evalstats.options import report_options_set
from evalstats.reports import figures_index, report_write
from evalstats.spreadsheets import csv_write


def table_records(table: pd.DataFrame) -> dict[str, Any]:
    """A table as JSON: columns and rows, with NaN and infinities as null."""
    clean = table.replace([np.inf, -np.inf], np.nan).astype(object)
    clean = clean.where(pd.notna(clean), None)
    return json.loads(
        json.dumps(
            {"columns": [str(c) for c in clean.columns], "rows": clean.values.tolist()},
            default=str,
        )
    )


Progress = Callable[[float, str], None]


def report_build(job: Job, folder: Path, progress: Progress) -> tuple[dict[str, Any], list[str]]:
    """Build the campaign's report into ``folder`` (tables, figures, the worker-quality
    CSV); return the snapshot the page shows and the files."""
    campaign = job.campaign
    judgments = (
        Judgment.objects.filter(item__campaign=campaign, item__gold__isnull=True)
        .exclude(worker__provider=Worker.Provider.MODEL)  # the judges' are reported apart
        .count()
    )
    progress(0.1, f"Aggregating {judgments} judgments…")
    with report_options_set(aggregate=job.options.get("aggregate", "majority")):
        report = campaign_report(campaign)
    progress(0.6, "Worker quality…")
    quality = _with_writing_signals(worker_quality(campaign), campaign)
    progress(0.8, "Writing tables and figures…")
    written = report_write(report, folder, stem=campaign.slug)
    csv_write(quality, folder / f"{campaign.slug}_worker_quality.csv")
    files = sorted(p.name for p in written) + [f"{campaign.slug}_worker_quality.csv"]
    result = {
        "title": report.title,
        "judgments": judgments,
        "tables": {name: table_records(table) for name, table in report.tables.items()},
        "figures": figures_index(report, stem=campaign.slug),
        "notes": list(report.notes),
        "quality": table_records(quality),
    }
    return result, files


def _with_writing_signals(quality: pd.DataFrame, campaign: Campaign) -> pd.DataFrame:
    """Add what workers wrote in the campaign's chats: utterances, and how many were pasted.

    A paste is flagged for a look, never a verdict (people paste their own drafts too).
    Chat workers who gave no judgment get a row of their own.
    """
    written: dict[str, list[int]] = {}
    rows = [
        *Utterance.objects.filter(dialogue__campaign=campaign, worker__isnull=False).values_list(
            "worker__pseudonym", "signals"
        ),
        *Situation.objects.filter(campaign=campaign, worker__isnull=False).values_list(
            "worker__pseudonym", "signals"
        ),
    ]
    for pseudonym, signals in rows:
        counts = written.setdefault(pseudonym, [0, 0])
        counts[0] += 1
        pastes = signals.get("pastes") if isinstance(signals, dict) else 0
        counts[1] += 1 if isinstance(pastes, int) and pastes > 0 else 0
    if not written:
        return quality
    extra = pd.DataFrame(
        [(p, n, pasted) for p, (n, pasted) in written.items()],
        columns=["pseudonym", "texts_written", "texts_pasted"],
    )
    merged = quality.merge(extra, on="pseudonym", how="outer").sort_values("pseudonym")
    merged[["texts_written", "texts_pasted"]] = (
        merged[["texts_written", "texts_pasted"]].fillna(0).astype(int)
    )
    pasted = merged["texts_pasted"] > 0
    flags = merged["flags"].fillna("")
    merged["flags"] = flags.where(~pasted, (flags + ", paste").str.strip(", "))
    merged["passes"] = merged["passes"].astype(object).where(merged["passes"].notna(), True)
    return merged.reset_index(drop=True)


def export_build(job: Job, folder: Path, progress: Progress) -> tuple[dict[str, Any], list[str]]:
    """Write the export the job's options name (judgments, dialogues or the study file) into
    ``folder``; return the rows written and the files."""
    campaign, fmt = job.campaign, job.options["format"]
    if job.options.get("what") == "study":
        progress(0.2, f"Writing the study file ({fmt}) and its items…")
        paths = study_export(campaign=campaign, folder=folder, fmt=fmt)
        return {"rows": campaign.items.count()}, [path.name for path in paths]
    if job.options.get("what") == "dialogues":
        progress(0.2, "Reading dialogues…")
        records = campaign_dialogue_records(campaign)
        progress(0.6, f"Writing {len(records)} dialogues as {fmt}…")
        out = folder / f"{campaign.slug}_dialogues.{SUFFIXES[fmt]}"
        written = records_export(
            records, fmt=fmt, out=out, by_author=job.options.get("by_author", False)
        )
        return {"rows": sum(n for _, n in written)}, [path.name for path, _ in written]
    progress(0.2, f"Writing judgments as {fmt}…")
    judges = job.options.get("judges", False)
    name = f"{campaign.slug}_{'judge_' if judges else ''}judgments.{fmt}"
    rows = exports.judgments_export(  # streamed in chunks: bounded memory
        campaign,
        folder / name,
        fmt,
        include_flagged=job.options.get("include_flagged", False),
        judges=judges,
    )
    return {"rows": rows}, [name]
