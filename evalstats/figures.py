"""Report figures a paper can use: the helpers every protocol's figure is drawn with.

A report figure has a title, n on every bar, point or cell, its intervals' method named (in
an axis label or the footnote under the plot), text that reads on its background (black or
white, whichever the WCAG contrast ratio favours: never under 4.5:1) and an alt text that
states the finding with its numbers. The alt text travels beside the figure: in the files'
metadata, in ``{stem}_figures.json`` (``reports.report_write``) and in the dashboard's
``<img alt>``. Figures are drawn without pyplot (no global state; PNG through Agg) and
written as SVG (text kept as text) and PNG, byte for byte the same for the same report.

Each protocol draws its own figure with these helpers (docs/protocols.md, "Reports and
figures"). Pure matplotlib/pandas/numpy, no ORM.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.colors import to_rgba_array
from matplotlib.figure import Figure
from matplotlib.typing import ColorType

from evalstats.options import report_options

# A colour as matplotlib takes it, or as a colour map returns it (an RGBA array).
Colour = ColorType | np.ndarray
INK = "#000000"
PAPER = "#ffffff"
# Okabe & Ito's colour-blind-safe palette (yellow last: it needs its black edge most).
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#56B4E9", "#CC79A7", "#F0E442")
# The least contrast of text with its background: WCAG 2's AA level for normal text.
MIN_CONTRAST = 4.5
DPI = 150
# Fixed SVG ids and no timestamp: the same report writes the same bytes.
_SVG_RC: dict[Any, Any] = {"svg.hashsalt": "evalsite", "svg.fonttype": "none"}


@dataclass(frozen=True)
class ReportFigure:
    """A drawn figure with its title and the alt text that states its finding."""

    figure: Figure
    title: str
    alt: str


def luminance(colour: Colour) -> float:
    """Return a colour's relative luminance (WCAG 2: linearised sRGB, weighted)."""
    rgb = to_rgba_array(colour)[0, :3]
    channels = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    return float(channels @ np.array([0.2126, 0.7152, 0.0722]))


def contrast_ratio(first: Colour, second: Colour) -> float:
    """Return the WCAG contrast ratio of two colours, from 1 (none) to 21 (black on white)."""
    light, dark = sorted((luminance(first), luminance(second)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def text_colour(background: Colour) -> str:
    """Return black or white, whichever contrasts more with ``background``.

    One of them always reaches √21 ≈ 4.58:1, above WCAG's 4.5:1 for normal text.
    """
    on_black = contrast_ratio(INK, background)
    return INK if on_black >= contrast_ratio(PAPER, background) else PAPER


def ci_name(level: float | None = None) -> str:
    """Return the interval's name at ``level`` (the report options' by default): "95% CI"."""
    level = report_options().level if level is None else level
    return f"{100 * level:g}% CI"


def number(value: float, digits: int = 2) -> str:
    """Return ``value`` rounded for reading (a minus sign, not a hyphen), "n/a" if missing."""
    if value is None or not math.isfinite(float(value)):
        return "n/a"
    return f"{value:.{digits}f}".replace("-", "−")


def interval_text(
    low: float, high: float, *, digits: int = 2, unit: str = "", level: float | None = None
) -> str:
    """Return an interval as the alt texts say it: "95% CI 1.80–2.40" ("no interval")."""
    if not (math.isfinite(float(low)) and math.isfinite(float(high))):
        return "no interval"
    dash = " to " if min(low, high) < 0 else "–"
    return f"{ci_name(level)} {number(low, digits)}{dash}{number(high, digits)}{unit}"


def estimate_text(
    value: float,
    low: float,
    high: float,
    *,
    n: int | None = None,
    digits: int = 2,
    unit: str = "",
    n_unit: str = "",
    level: float | None = None,
) -> str:
    """Return an estimate as the alt texts say it: "2.10, 95% CI 1.80–2.40, n=40"."""
    interval = interval_text(low, high, digits=digits, unit=unit, level=level)
    text = f"{number(value, digits)}{unit}, {interval}"
    if n is not None:
        text += f", n={int(n)}" + (f" {n_unit}" if n_unit else "")
    return text


def extremes_text(
    table: pd.DataFrame,
    *,
    name: str,
    value: str,
    low: str,
    high: str,
    n: str,
    on: str = "",
    digits: int = 2,
    unit: str = "",
    n_unit: str = "",
    words: tuple[str, str] = ("scores highest", "lowest"),
) -> str:
    """Return the sentence that names the highest and the lowest row of ``table`` by
    ``value``, each with its interval and n: "A scores highest on X (…) and B lowest (…)"
    (``words``: what is said of the first and the last)."""
    rows = table.dropna(subset=[value]).sort_values(value, ascending=False, kind="stable")
    if rows.empty:
        return f"No estimate{on} yet."

    def said(row: pd.Series) -> str:
        return estimate_text(
            row[value], row[low], row[high], n=row[n], digits=digits, unit=unit, n_unit=n_unit
        )

    top, bottom = rows.iloc[0], rows.iloc[-1]
    if len(rows) == 1:
        return f"{top[name]}{on}: {said(top)}."
    first, last = words
    return f"{top[name]} {first}{on} ({said(top)}) and {bottom[name]} {last} ({said(bottom)})."


def one_sided_text(
    win_rates: pd.DataFrame, *, n: str, judgments: str = "judgments", on: str = ""
) -> str:
    """Return the sentence naming the model pair whose win rate (``model_a``'s, with
    ``ci_low``/``ci_high``) is furthest from a draw, winner first, with its n and interval."""
    rates = win_rates.dropna(subset=["win_rate"])
    if rates.empty:
        return f"No decisive judgment{on} yet."
    row = rates.loc[(rates["win_rate"] - 0.5).abs().idxmax()]
    winner, loser = row["model_a"], row["model_b"]
    rate, low, high = (float(row[c]) * 100 for c in ("win_rate", "ci_low", "ci_high"))
    if rate < 50:
        winner, loser, rate, low, high = loser, winner, 100 - rate, 100 - high, 100 - low
    return (
        f"The most one-sided pair{on}: {winner} is chosen over {loser} in {number(rate, 0)}% "
        f"of their {int(row[n])} {judgments} ({interval_text(low, high, digits=0, unit='%')})."
    )


def methods(values: pd.Series) -> str:
    """Return the distinct interval methods of a ``ci_method`` column, in order, joined."""
    return "; ".join(dict.fromkeys(str(v) for v in values if isinstance(v, str) and v))


def error_bars(value: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Return matplotlib's 2×N error-bar lengths for intervals [low, high] around ``value``.

    An end an ulp on the wrong side of its estimate (floating-point noise: an interval of
    zero width) draws as zero, and a missing end draws no bar; matplotlib refuses both.
    """
    lengths = np.vstack([np.asarray(value) - low, np.asarray(high) - value])
    return np.clip(np.nan_to_num(lengths), 0.0, None)


def figure_new(width: float, height: float) -> Figure:
    """Return an empty figure laid out by matplotlib's constrained layout (room for the
    title, the footnote and labels outside the axes)."""
    return Figure(figsize=(width, height), layout="constrained", facecolor=PAPER)


def figure_finish(figure: Figure, *, title: str, alt: str, note: str = "") -> ReportFigure:
    """Give ``figure`` its title and footnote (the intervals' method, what n counts) and
    return it with its alt text."""
    width = figure.get_figwidth()
    figure.suptitle(textwrap.fill(title, max(30, int(width * 11))), fontsize=11)
    if note:
        figure.supxlabel(textwrap.fill(note, max(40, int(width * 15))), fontsize=7, color=INK)
    return ReportFigure(figure=figure, title=title, alt=alt)


def n_labels(
    ax: Axes, x: np.ndarray, top: np.ndarray, counts: Sequence[Any], *, vertical: bool
) -> None:
    """Write "n=…" above each bar (over its error bar), in ink on the white of the axes."""
    for xi, yi, count in zip(x, top, counts, strict=True):
        if count is None or (isinstance(count, float) and math.isnan(count)):
            continue
        ax.annotate(
            f"n={int(count)}",
            (xi, 0.0 if math.isnan(yi) else yi),
            xytext=(0, 2),
            textcoords="offset points",
            ha="center",
            va="bottom",
            rotation=90 if vertical else 0,
            fontsize=6.5,
            color=INK,
            annotation_clip=False,
        )


def bar_figure(
    table: pd.DataFrame,
    *,
    group: str,
    bar: str,
    value: str,
    n: str,
    title: str,
    alt: str,
    ylabel: str,
    interval: tuple[str, str] | None = None,
    note: str = "",
    ylim: tuple[float, float] | None = None,
    marked: str = "",
) -> ReportFigure:
    """Draw grouped bars (one group per ``group`` value, one bar per ``bar``), each with its
    interval (``interval``: the columns of its lower and upper ends) and its n above it."""
    groups = list(dict.fromkeys(table[group]))
    bars = sorted(set(table[bar]))
    fig = figure_new(min(12.0, 2.6 + len(groups) * (0.6 + 0.45 * len(bars))), 4.2)
    ax = fig.subplots()
    width = 0.8 / max(1, len(bars))
    x = np.arange(len(groups))
    for i, name in enumerate(bars):
        rows = table[table[bar] == name].set_index(group).reindex(groups)
        label = f"{name} (reference)" if name == marked else str(name)
        heights = rows[value].to_numpy(dtype=float)
        tops = heights
        yerr = None
        if interval is not None:
            low, high = (rows[c].to_numpy(dtype=float) for c in interval)
            yerr = error_bars(heights, low, high)
            tops = np.where(np.isfinite(high), np.fmax(high, heights), heights)
        at = x + (i - (len(bars) - 1) / 2) * width
        ax.bar(
            at,
            np.nan_to_num(heights),
            width,
            yerr=yerr,
            capsize=3,
            label=label,
            color=PALETTE[i % len(PALETTE)],
            hatch="//" if name == marked else None,
            edgecolor=INK,
            linewidth=0.5,
            error_kw={"ecolor": INK, "elinewidth": 0.8},
        )
        if ylim:  # an interval past the scale's end is cut there; so is its label's place
            tops = np.fmin(tops, ylim[1])
        n_labels(ax, at, tops, list(rows[n]), vertical=len(bars) > 2)
    ax.set_xticks(x, [textwrap.fill(str(g), 16, break_long_words=False) for g in groups])
    ax.set_ylabel(ylabel)
    if ylim:
        ax.set_ylim(*ylim)
    ax.legend(fontsize="small", frameon=False, loc="upper left", bbox_to_anchor=(1, 1))
    ax.spines[["top", "right"]].set_visible(False)
    return figure_finish(fig, title=title, alt=alt, note=note)


def interval_rows(
    ax: Axes,
    labels: Sequence[str],
    value: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    *,
    colour: str = PALETTE[0],
) -> None:
    """Draw one row per label, top down: the estimate as a dot, its interval as a line."""
    y = np.arange(len(labels))[::-1]
    ax.errorbar(
        value,
        y,
        xerr=error_bars(value, low, high),
        fmt="o",
        color=colour,
        ecolor=INK,
        capsize=3,
        markeredgecolor=INK,
        markeredgewidth=0.5,
    )
    ax.set_yticks(y, labels)
    ax.set_ylim(-0.7, len(labels) - 0.3)
    ax.spines[["top", "right"]].set_visible(False)


def win_rate_figure(
    table: pd.DataFrame,
    *,
    title: str,
    alt: str,
    note: str,
    question: str | None = None,
    n: str = "n",
    marked: str | None = None,
) -> ReportFigure:
    """Draw each model pair's win rate of ``model_a`` with its interval, one row per pair
    (and question, when ``question`` names its column), its n in the row's label, with "*"
    where the boolean column ``marked`` is true; the line at 0.5 is a draw."""
    labels = []
    for row in table.to_dict("records"):
        pair = f"{row['model_a']} vs {row['model_b']} (n={int(row[n])})"
        pair += "*" if marked and row[marked] else ""
        labels.append(f"{row[question]}: {pair}" if question else pair)
    fig = figure_new(7.0, 1.6 + 0.32 * max(1, len(table)))
    ax = fig.subplots()
    interval_rows(
        ax,
        labels,
        table["win_rate"].to_numpy(dtype=float),
        table["ci_low"].to_numpy(dtype=float),
        table["ci_high"].to_numpy(dtype=float),
    )
    ax.axvline(0.5, color=INK, linewidth=0.6, linestyle=":")
    ax.set_xlim(0, 1)
    ax.set_xlabel(f"share of judgments won by the first model ({ci_name()})")
    return figure_finish(fig, title=title, alt=alt, note=note)


def figure_write(figure: ReportFigure, stem: Path) -> list[Path]:
    """Write ``figure`` as ``{stem}.svg`` and ``{stem}.png`` with its title and alt text in
    their metadata, the same bytes for the same figure; return the paths."""
    written = []
    with matplotlib.rc_context(_SVG_RC):
        for ext, metadata in (
            ("svg", {"Title": figure.title, "Description": figure.alt, "Date": None}),
            ("png", {"Title": figure.title, "Description": figure.alt}),
        ):
            path = stem.with_name(f"{stem.name}.{ext}")
            figure.figure.savefig(path, dpi=DPI, metadata=metadata)
            written.append(path)
    return written


__all__: Sequence[str] = [
    "ReportFigure",
    "bar_figure",
    "ci_name",
    "contrast_ratio",
    "error_bars",
    "estimate_text",
    "extremes_text",
    "figure_finish",
    "figure_new",
    "figure_write",
    "interval_rows",
    "interval_text",
    "methods",
    "number",
    "one_sided_text",
    "text_colour",
    "win_rate_figure",
]
