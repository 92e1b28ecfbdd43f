"""Report building blocks shared by protocols: agreement tables, and writing a report to files
(its figures drawn with ``evalstats.figures``) or text. Pure pandas/matplotlib, no ORM;
protocol-specific aggregation lives in each protocol module and ``selectors.campaign_report``
feeds it from the database."""

from __future__ import annotations

import io
import json
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from evalstats import aggregation, agreement
from evalstats.figures import ReportFigure, figure_write
from evalstats.options import report_options
from evalstats.spreadsheets import csv_write


@dataclass
class Report:
    """A protocol's results: named tables (with n and uncertainty), figures (each with its
    title and alt text) and notes."""

    title: str
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    figures: dict[str, ReportFigure] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def agreement_table(
    data: pd.DataFrame,
    *,
    level: agreement.Level,
    names: Mapping[str, str] | None = None,
    n_boot: int = 1000,
    seed: int | None = None,
) -> pd.DataFrame:
    """Return Krippendorff's alpha with a 95% bootstrap CI per ``group`` (over items and
    raters when raters repeat, else over items: ``ci_method`` says which).

    The report options (``options.report_options``) set the level, and the number of
    resamples and the seed where the caller does not.

    ``data`` has columns ``group``, ``item``, ``rater``, ``value``. A group whose alpha is
    undefined (fewer than two ratings on every item, or no variation at all) gets NaN and the
    reason in ``note`` (the agreement module's warning) rather than an error, so a report can
    be built at any time.
    """
    options = report_options()
    n_boot = options.n_boot or n_boot
    seed = options.seed if seed is None else seed
    rows = []
    for group, part in data.groupby("group", sort=True):
        long = part[["item", "rater", "value"]]
        pairable = long.groupby("item")["rater"].transform("size") >= 2
        row = {
            "aspect": (names or {}).get(group, group),
            "level": level,
            "items": int(long.loc[pairable, "item"].nunique()),
            "alpha": np.nan,
            "ci_low": np.nan,
            "ci_high": np.nan,
            "note": "",
        }
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", agreement.AgreementUndefinedWarning)
            estimate = agreement.krippendorff_alpha_ci(
                long, level, n_boot=n_boot, ci=options.level, seed=seed
            )
        row.update(alpha=estimate.value, ci_low=estimate.low, ci_high=estimate.high)
        row["ci_method"] = agreement.interval_method(long) if len(long) else ""
        row["note"] = "; ".join(str(w.message) for w in caught)
        rows.append(row)
    columns = ["aspect", "level", "items", "alpha", "ci_low", "ci_high", "ci_method", "note"]
    return pd.DataFrame(rows, columns=columns)


def labels_aggregated(votes: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame | None, str]:
    """Return each item's label by the report options' ``aggregate``, the raters' table and
    the method's name.

    ``votes`` has columns ``item``, ``rater``, ``value``. The labels are
    ``aggregation.labels_aggregate``'s (``label``, ``tied``, ``n_votes`` by item). With
    Dawid–Skene or MACE the raters' table gives each rater's judgments, their agreement with
    the majority of the others and the model's estimated ``quality`` (accuracy or
    competence), lowest first; with the majority vote it is None.
    """
    options = report_options()
    labels, quality = aggregation.labels_aggregate(votes, options.aggregate, seed=options.seed)
    name = aggregation.AGGREGATE_NAMES[options.aggregate]
    if quality is None:
        return labels, None, name
    raters = aggregation.rater_agreement(votes)[["n_judgments", "agreement"]]
    raters = raters.join(quality.reindex(raters.index)).sort_values("quality", kind="stable")
    return labels, raters.rename_axis("rater").reset_index().assign(model=name), name


def report_text(
    report: Report, *, max_rows: int | None = None, files: Mapping[str, Path] | None = None
) -> str:
    """Render a report as plain text for a terminal.

    A table longer than ``max_rows`` shows its first rows and says how many there are and,
    from ``files`` (table name -> path), where the whole table was written.
    """
    out = io.StringIO()
    out.write(f"{report.title}\n{'=' * len(report.title)}\n")
    for name, table in report.tables.items():
        out.write(f"\n[{name}]\n")
        shown = table
        if max_rows is not None and len(table) > max_rows:
            shown = table.head(min(10, max_rows))
        out.write(shown.to_string(index=False, float_format=lambda v: f"{v:.3f}") + "\n")
        if len(shown) < len(table):
            where = f": all in {files[name]}" if files and name in files else ""
            out.write(f"… {len(table) - len(shown)} more of {len(table)} rows{where}\n")
    for note in report.notes:
        out.write(f"\nNote: {note}")
    return out.getvalue() + "\n"


def figures_index(report: Report, *, stem: str) -> dict[str, dict[str, str]]:
    """Return per figure its files (``png``, ``svg``), ``title`` and ``alt`` text: what
    ``report_write`` writes as ``{stem}_figures.json`` and the dashboard shows beside it."""
    return {
        name: {
            "png": f"{stem}_{name}.png",
            "svg": f"{stem}_{name}.svg",
            "title": figure.title,
            "alt": figure.alt,
        }
        for name, figure in report.figures.items()
    }


def report_write(report: Report, out_dir: Path, *, stem: str) -> list[Path]:
    """Write each table as CSV and JSON, each figure as PNG and SVG (with its title and alt
    text in ``{stem}_figures.json``), and the text; return the paths.

    JSON tables are lists of records; infinite ratios are written as null there.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for name, table in report.tables.items():
        path = out_dir / f"{stem}_{name}.csv"
        csv_write(table, path)
        written.append(path)
        path = out_dir / f"{stem}_{name}.json"
        table.replace([np.inf, -np.inf], np.nan).to_json(
            path, orient="records", indent=1, force_ascii=False
        )
        written.append(path)
    for name, figure in report.figures.items():
        written += figure_write(figure, out_dir / f"{stem}_{name}")
    if report.figures:
        path = out_dir / f"{stem}_figures.json"
        index = json.dumps(figures_index(report, stem=stem), indent=1, ensure_ascii=False)
        path.write_text(index + "\n", encoding="utf-8")
        written.append(path)
    path = out_dir / f"{stem}_report.txt"
    path.write_text(report_text(report), encoding="utf-8")
    written.append(path)
    return written


__all__: Sequence[str] = [
    "agreement_table",
    "figures_index",
    "labels_aggregated",
    "report_text",
    "report_write",
]
