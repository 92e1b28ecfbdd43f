"""Report building blocks shared by protocols: agreement tables, figures, and writing a report
to files or text. Pure pandas/matplotlib, no ORM; protocol-specific aggregation lives in each
protocol module and ``selectors.campaign_report`` feeds it from the database."""

from __future__ import annotations

import io
import textwrap
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from annotation import agreement
from annotation.protocols.base import Report


def agreement_table(
    data: pd.DataFrame,
    *,
    level: agreement.Level,
    names: Mapping[str, str] | None = None,
    n_boot: int = 1000,
    seed: int = 0,
) -> pd.DataFrame:
    """Return Krippendorff's alpha with a 95% bootstrap CI (over items) per ``group``.

    ``data`` has columns ``group``, ``item``, ``rater``, ``value``. A group whose alpha is
    undefined (fewer than two ratings on every item, or no variation at all) gets NaN and the
    reason in ``note`` (the agreement module's warning) rather than an error, so a report can
    be built at any time.
    """
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
            estimate = agreement.krippendorff_alpha_ci(long, level, n_boot=n_boot, seed=seed)
        row.update(alpha=estimate.value, ci_low=estimate.low, ci_high=estimate.high)
        row["note"] = "; ".join(str(w.message) for w in caught)
        rows.append(row)
    columns = ["aspect", "level", "items", "alpha", "ci_low", "ci_high", "note"]
    return pd.DataFrame(rows, columns=columns)


def bar_figure(
    table: pd.DataFrame,
    *,
    group: str,
    bar: str,
    value: str,
    error: str | tuple[str, str],
    ylabel: str,
    ylim: tuple[float, float] | None = None,
    marked: str = "",
) -> Figure:
    """Draw grouped bars (one group per ``group`` value, one bar per ``bar``) with error bars.

    ``error`` names a column of symmetric errors (SEM) or two columns, the interval's lower
    and upper ends (a bootstrap CI).
    """
    groups = list(dict.fromkeys(table[group]))
    bars = sorted(set(table[bar]))
    fig = Figure(figsize=(2.0 + len(groups) * (0.9 + 0.5 * len(bars)), 3.8))
    ax = fig.subplots()
    width = 0.8 / max(1, len(bars))
    x = np.arange(len(groups))
    for i, name in enumerate(bars):
        rows = table[table[bar] == name].set_index(group).reindex(groups)
        label = f"{name} (reference)" if name == marked else str(name)
        heights = rows[value].to_numpy(dtype=float)
        if isinstance(error, tuple):
            low, high = (rows[c].to_numpy(dtype=float) for c in error)
            yerr = np.nan_to_num(np.vstack([heights - low, high - heights]))
        else:
            yerr = rows[error].fillna(0).to_numpy(dtype=float)
        ax.bar(
            x + (i - (len(bars) - 1) / 2) * width,
            heights,
            width,
            yerr=yerr,
            capsize=3,
            label=label,
            hatch="//" if name == marked else None,
            edgecolor="black",
            linewidth=0.5,
        )
    ax.set_xticks(x, [textwrap.fill(str(g), 14) for g in groups])
    ax.set_ylabel(ylabel)
    if ylim:
        ax.set_ylim(*ylim)
    ax.legend(fontsize="small", frameon=False, loc="upper left", bbox_to_anchor=(1, 1))
    ax.spines[["top", "right"]].set_visible(False)
    fig.tight_layout()
    return fig


def report_text(report: Report) -> str:
    """Render a report as plain text for a terminal."""
    out = io.StringIO()
    out.write(f"{report.title}\n{'=' * len(report.title)}\n")
    for name, table in report.tables.items():
        out.write(f"\n[{name}]\n")
        out.write(table.to_string(index=False, float_format=lambda v: f"{v:.3f}") + "\n")
    for note in report.notes:
        out.write(f"\nNote: {note}")
    return out.getvalue() + "\n"


def report_write(report: Report, out_dir: Path, *, stem: str) -> list[Path]:
    """Write each table as CSV and JSON, each figure as PNG and SVG, and the text; return paths.

    JSON tables are lists of records; infinite ratios are written as null there.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for name, table in report.tables.items():
        path = out_dir / f"{stem}_{name}.csv"
        table.to_csv(path, index=False)
        written.append(path)
        path = out_dir / f"{stem}_{name}.json"
        table.replace([np.inf, -np.inf], np.nan).to_json(
            path, orient="records", indent=1, force_ascii=False
        )
        written.append(path)
    for name, figure in report.figures.items():
        for ext in ("png", "svg"):
            path = out_dir / f"{stem}_{name}.{ext}"
            figure.savefig(path, dpi=150)
            written.append(path)
    path = out_dir / f"{stem}_report.txt"
    path.write_text(report_text(report), encoding="utf-8")
    written.append(path)
    return written


__all__: Sequence[str] = [
    "agreement_table",
    "bar_figure",
    "report_text",
    "report_write",
]
