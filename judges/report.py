"""The judge–human agreement report: pure pandas/numpy, no ORM (``judges.selectors`` feeds it).

Inputs are long frames with one row per answer: ``crowd`` (``item``, ``rater``, ``question``,
``label``) and ``judges`` (the same plus ``judge``, the judge's name, ``shown``, the
position the judge chose on an A/B item — "first"/"second" — or None, and ``order``, the order
it was shown the two responses — "ab"/"ba" — or None). ``label`` is what the
answer means whatever was shown (an A/B choice is the model chosen, or both/neither), so the
judge's two orders and the crowd's random ones compare. ``models`` maps an item to its
system(s) for the rankings.

Per judge rater and question:

- **κ with the crowd's majority** (Cohen's; quadratic weights for ordinal questions): the
  majority label (nominal; ties left out) or the median (ordinal; a median between two
  ratings left out) of the item's workers but one, each left out in turn, against the
  judge's label: the consensus each worker is compared with in the crowd's own κ, so the two
  compare whatever the number of workers per item (``judges.agreement._against_others``);
- **κ with individual workers**: every (judge, worker) pair of answers on an item, pooled;
  beside it the **crowd's own** κ, each worker against the majority (median) of the others
  on the item, the ceiling a judge is measured against;
- **Krippendorff's α** of the crowd, and of the crowd with the judge as one more rater;

each with a percentile bootstrap interval over items (a drawn item keeps all its answers, the
agreement module's unit; ``docs/statistics.md``). Per judge and question the **rank
correlation** (Kendall's τ-b) of the judge's and the crowd's model scores (Likert: the mean
rating; yes/no: the share of yes; A/B: the share of comparisons won, both/neither a half), with
the same bootstrap over items. For A/B, **position bias**: on items judged in both orders, the
share whose verdict did not change, and the share of "first" among the judge's decisive
answers (Wilson interval; the crowd's share beside it). Then the items where judge and crowd
disagree most. The κ and α table is ``judges.agreement``'s, the rankings ``judges.rankings``';
this module adds the position bias, the disagreements and the figure, and builds the report.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from evalstats import figures
from evalstats.figures import ReportFigure
from judges.agreement import agreement_table, labels_ordinal
from judges.rankings import ranking_tables

DECISIVE = ("first", "second")
TOP_DISAGREEMENTS = 20


@dataclass
class JudgeReport:
    """The report's tables, its figure and its notes."""

    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    figures: dict[str, ReportFigure] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _wilson(k: int, n: int, level: float) -> tuple[float, float]:
    """Return Wilson's interval of the share k / n (NaN without answers)."""
    if n == 0:
        return float("nan"), float("nan")
    z = float(stats.norm.ppf(0.5 + level / 2))
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return float(centre - half), float(centre + half)


def position_bias(crowd_shown: pd.Series, judges: pd.DataFrame, *, level: float) -> pd.DataFrame:
    """Return per judge: items judged in both orders (``order``: "ab"/"ba"), the share whose
    verdict (the model chosen, both or neither) did not change, and the share of "first"
    among its decisive answers (Wilson interval), the crowd's beside it."""
    if "order" not in judges or judges["order"].isna().all():
        return pd.DataFrame()
    ordered = judges.dropna(subset=["order"])
    crowd_decisive = crowd_shown[crowd_shown.isin(DECISIVE)]
    crowd_first = float((crowd_decisive == "first").mean()) if len(crowd_decisive) else np.nan
    rows = []
    for judge, mine in ordered.groupby("judge", sort=True):
        per_item = mine.groupby(["item", "question"])["label"].agg(list)
        both = per_item[per_item.map(len) == 2]
        decisive = mine[mine["shown"].isin(DECISIVE)]
        first = int((decisive["shown"] == "first").sum())
        low, high = _wilson(first, len(decisive), level)
        rows.append(
            {
                "judge": judge,
                "items_both_orders": len(both),
                "consistent": float(both.map(lambda v: v[0] == v[1]).mean())
                if len(both)
                else np.nan,
                "decisive": len(decisive),
                "first_share": first / len(decisive) if len(decisive) else np.nan,
                "first_low": low,
                "first_high": high,
                "crowd_first_share": crowd_first,
            }
        )
    return pd.DataFrame(rows)


def disagreements(
    crowd: pd.DataFrame, judges: pd.DataFrame, *, top: int = TOP_DISAGREEMENTS
) -> pd.DataFrame:
    """Return the items where judge and crowd differ most: the share of workers who answered
    otherwise (nominal) or the distance from the crowd's mean in scale steps (ordinal)."""
    rows = []
    for question, asked in crowd.groupby("question", sort=True):
        ordinal = labels_ordinal(asked["label"])
        votes = asked.groupby("item")["label"].agg(list)
        for (judge, item), mine in judges[judges["question"] == question].groupby(
            ["rater", "item"], sort=False
        ):
            if item not in votes.index:
                continue
            label, crowd_votes = mine["label"].iloc[0], votes[item]
            if ordinal:
                gap = abs(float(label) - float(np.mean(crowd_votes)))
            else:
                gap = float(np.mean([v != label for v in crowd_votes]))
            rows.append(
                {
                    "judge": judge,
                    "question": question,
                    "item": item,
                    "judge_label": label,
                    "crowd_votes": ", ".join(map(str, sorted(crowd_votes, key=str))),
                    "disagreement": gap,
                }
            )
    if not rows:
        return pd.DataFrame(
            columns=["judge", "question", "item", "judge_label", "crowd_votes", "disagreement"]
        )
    table = pd.DataFrame(rows).sort_values(
        ["disagreement", "judge", "question", "item"], ascending=[False, True, True, True]
    )
    return table.head(top).reset_index(drop=True)


def agreement_figure(table: pd.DataFrame, *, level: float = 0.95) -> ReportFigure:
    """Return a bar figure: per judge and question (its n: the items the judge and the crowd
    both answered), κ with the majority and with workers, and the crowd's own κ, with their
    intervals; the alt text names where a judge agrees with the crowd's majority most and
    least."""
    ci = figures.ci_name(level)
    fig = figures.figure_new(max(6.0, 1.4 * max(len(table), 1) + 3), 4.4)
    axes = fig.subplots()
    labels = [
        f"{r['judge']}\n{r['question']}" + (f"\n(n={int(r['items'])})" if "items" in r else "")
        for r in table.to_dict("records")
    ]
    x = np.arange(len(table))
    series = (
        ("kappa_majority", "judge vs crowd majority"),
        ("kappa_workers", "judge vs each worker"),
        ("kappa_crowd", "worker vs other workers"),
    )
    width = 0.27
    for n, (column, name) in enumerate(series):
        if table.empty:
            break
        values = table[column].to_numpy(dtype=float)
        errors = figures.error_bars(
            values,
            table[f"{column}_low"].to_numpy(dtype=float),
            table[f"{column}_high"].to_numpy(dtype=float),
        )
        axes.bar(
            x + (n - 1) * width,
            np.nan_to_num(values),
            width,
            label=name,
            color=figures.PALETTE[n],
            edgecolor=figures.INK,
            linewidth=0.5,
        )
        axes.errorbar(x + (n - 1) * width, values, yerr=errors, fmt="none", color=figures.INK)
    axes.set_xticks(x, labels, fontsize=7)
    axes.axhline(0.0, color=figures.INK, linewidth=0.8)
    axes.set_ylabel(f"Cohen's kappa ({ci})")
    axes.legend(fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(1, 1))
    axes.spines[["top", "right"]].set_visible(False)
    return figures.figure_finish(
        fig,
        title="LLM judges and the crowd: agreement (Cohen's κ)",
        alt=f"Bar chart of Cohen's κ per judge and question. {_agreement_found(table)}",
        note=f"Error bars: {ci}, percentile bootstrap over items. n: items both the judge "
        "and the crowd answered. Quadratic weights for ordinal questions.",
    )


def _agreement_found(table: pd.DataFrame) -> str:
    """Say in words where a judge agrees with the crowd's majority most and least."""
    if table.empty or "items" not in table:
        return "No judge has answered an item the crowd answered yet."
    return figures.extremes_text(
        table.assign(who=table["judge"] + " on " + table["question"].astype(str)),
        name="who",
        value="kappa_majority",
        low="kappa_majority_low",
        high="kappa_majority_high",
        n="items",
        n_unit="items",
        words=("agrees with the crowd's majority most", "least"),
    )


def judge_report(
    crowd: pd.DataFrame,
    judges: pd.DataFrame,
    models: Mapping[Any, tuple[str, ...]],
    *,
    crowd_shown: pd.Series | None = None,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> JudgeReport:
    """Build the judge–human agreement report (see the module's docstring)."""
    report = JudgeReport()
    if judges.empty:
        report.notes.append("No judge has answered in this campaign.")
        return report
    if crowd.empty:
        report.notes.append("No crowd answer yet: nothing to compare the judges with.")
        return report
    table = agreement_table(crowd, judges, n_boot=n_boot, level=level, seed=seed)
    report.tables["agreement"] = table
    scores, taus = ranking_tables(crowd, judges, models, n_boot=n_boot, level=level, seed=seed)
    if not taus.empty:
        report.tables["ranking"] = taus
        report.tables["model_scores"] = scores
    bias = position_bias(
        crowd_shown if crowd_shown is not None else pd.Series(dtype=object), judges, level=level
    )
    if not bias.empty:
        report.tables["position_bias"] = bias
    report.tables["disagreements"] = disagreements(crowd, judges)
    report.figures["agreement"] = agreement_figure(table, level=level)
    return report
