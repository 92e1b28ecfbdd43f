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
  majority label of the item's workers (nominal; ties left out) or their median (ordinal;
  a median between two ratings left out), against the judge's label;
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
disagree most.
"""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from evalstats import agreement, figures
from evalstats.figures import ReportFigure

DECISIVE = ("first", "second")
HALF = ("both", "neither")
TOP_DISAGREEMENTS = 20


@dataclass
class JudgeReport:
    """The report's tables, its figure and its notes."""

    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    figures: dict[str, ReportFigure] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _ordinal(values: pd.Series) -> bool:
    """Tell whether a question's labels are numbers (a rating scale): ordinal statistics."""
    return bool(len(values)) and all(
        isinstance(v, int | float | np.integer | np.floating) and not isinstance(v, bool)
        for v in values
    )


def crowd_consensus(crowd: pd.DataFrame, *, ordinal: bool) -> pd.Series:
    """Return each item's crowd label: the median (ordinal; None between two ratings) or the
    majority label (nominal; None on a tie)."""
    if ordinal:
        median = crowd.groupby("item")["label"].median()
        return median.where(median == np.floor(median))
    counts = crowd.groupby(["item", "label"]).size()
    top = counts.groupby(level="item").transform("max")
    winners = counts[counts == top].reset_index()
    unique = winners.groupby("item")["label"].agg(lambda s: s.iloc[0] if len(s) == 1 else None)
    return unique


def _codes(labels: Sequence[Any], *, ordinal: bool) -> tuple[np.ndarray, list[Any]]:
    values = sorted(set(labels), key=lambda v: (float(v), 0) if ordinal else (0, str(v)))
    index = {v: i for i, v in enumerate(values)}
    return np.array([index[v] for v in labels], dtype=int), values


def _kappas(confusions: np.ndarray, k: int, *, ordinal: bool) -> np.ndarray:
    """Return Cohen's kappa of each row of flattened k×k confusion counts (NaN if undefined)."""
    i, j = np.indices((k, k))
    w = ((i - j) ** 2 if ordinal else (i != j)).astype(float).ravel()
    total = confusions.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = confusions / total
        grid = p.reshape(-1, k, k)
        expected = np.einsum("bi,bj->bij", grid.sum(axis=2), grid.sum(axis=1)).reshape(-1, k * k)
        chance = expected @ w
        value = 1.0 - (p @ w) / chance
    value[~np.isfinite(value)] = np.nan
    return value


@dataclass(frozen=True)
class Kappa:
    """A pooled kappa over items, its bootstrap interval and how many items and pairs."""

    value: float
    low: float
    high: float
    items: int
    pairs: int
    agreement: float


def pooled_kappa(
    pairs: pd.DataFrame, *, ordinal: bool, n_boot: int, level: float, seed: int
) -> Kappa:
    """Return Cohen's kappa of (``a``, ``b``) label pairs pooled over items, with a percentile
    bootstrap over items: each item's confusion counts are summed with multinomial weights."""
    nan = float("nan")
    pairs = pairs.dropna(subset=["a", "b"])
    if pairs.empty:
        return Kappa(nan, nan, nan, 0, 0, nan)
    codes, values = _codes(list(pairs["a"]) + list(pairs["b"]), ordinal=ordinal)
    k, n = len(values), len(pairs)
    items, _ = pd.factorize(pairs["item"])
    n_items = int(items.max()) + 1
    per_item = np.zeros((n_items, k * k))
    np.add.at(per_item, (items, codes[:n] * k + codes[n:]), 1.0)
    value = float(_kappas(per_item.sum(axis=0, keepdims=True), k, ordinal=ordinal)[0])
    same = float(np.mean(codes[:n] == codes[n:]))
    if n_boot < 1 or n_items < 2 or np.isnan(value):
        return Kappa(value, nan, nan, n_items, n, same)
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(n_items, np.full(n_items, 1.0 / n_items), size=n_boot)
    boot = _kappas(draws @ per_item, k, ordinal=ordinal)
    boot = boot[np.isfinite(boot)]
    if not len(boot):
        return Kappa(value, nan, nan, n_items, n, same)
    low, high = np.quantile(boot, [0.5 - level / 2, 0.5 + level / 2])
    return Kappa(value, float(low), float(high), n_items, n, same)


def _consensus_of(labels: list[Any], *, ordinal: bool) -> Any:
    """Return the consensus of a list of labels as ``crowd_consensus`` makes it (or None)."""
    if not labels:
        return None
    if ordinal:
        median = float(np.median(np.asarray(labels, dtype=float)))
        return median if median == np.floor(median) else None
    counts = Counter(labels).most_common()
    if len(counts) > 1 and counts[0][1] == counts[1][1]:
        return None
    return counts[0][0]


def _leave_one_out(crowd: pd.DataFrame, *, ordinal: bool) -> pd.DataFrame:
    """Return (item, a = a worker's label, b = the consensus of the item's other workers)."""
    rows = []
    for item, labels in crowd.groupby("item", sort=False)["label"].agg(list).items():
        if len(labels) < 2:
            continue
        for i, label in enumerate(labels):
            rows.append((item, label, _consensus_of(labels[:i] + labels[i + 1 :], ordinal=ordinal)))
    return pd.DataFrame(rows, columns=["item", "a", "b"])


def _alpha(long: pd.DataFrame, *, ordinal: bool, n_boot: int, level: float, seed: int) -> tuple:
    nan = float("nan")
    if long.empty:
        return nan, nan, nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", agreement.AgreementUndefinedWarning)
        estimate = agreement.krippendorff_alpha_ci(
            long[["item", "rater", "value"]],
            "ordinal" if ordinal else "nominal",
            n_boot=max(n_boot, 1),
            ci=level,
            seed=seed,
        )
    return estimate.value, estimate.low, estimate.high


def agreement_table(
    crowd: pd.DataFrame, judges: pd.DataFrame, *, n_boot: int, level: float, seed: int
) -> pd.DataFrame:
    """Return one row per judge rater and question: κ with the majority, with workers, the
    crowd's own κ, and α without and with the judge, each with its interval."""
    rows = []
    for question, asked in crowd.groupby("question", sort=True):
        ordinal = _ordinal(asked["label"])
        consensus = crowd_consensus(asked, ordinal=ordinal)
        crowd_own = pooled_kappa(
            _leave_one_out(asked, ordinal=ordinal),
            ordinal=ordinal,
            n_boot=n_boot,
            level=level,
            seed=seed,
        )
        long_crowd = asked.rename(columns={"label": "value"})
        alpha_crowd = _alpha(long_crowd, ordinal=ordinal, n_boot=n_boot, level=level, seed=seed)
        answered = judges[judges["question"] == question]
        for rater, mine in answered.groupby("rater", sort=True):
            own = mine.drop_duplicates("item").set_index("item")["label"]
            shared = asked[asked["item"].isin(own.index)]
            majority = pd.DataFrame(
                {"item": own.index, "a": own.to_numpy(), "b": consensus.reindex(own.index)}
            )
            workers = pd.DataFrame(
                {"item": shared["item"], "a": shared["item"].map(own), "b": shared["label"]}
            )
            with_majority = pooled_kappa(
                majority, ordinal=ordinal, n_boot=n_boot, level=level, seed=seed
            )
            with_workers = pooled_kappa(
                workers, ordinal=ordinal, n_boot=n_boot, level=level, seed=seed
            )
            extra = pd.concat(
                [long_crowd, pd.DataFrame({"item": own.index, "rater": rater, "value": own})],
                ignore_index=True,
            )
            alpha_with = _alpha(extra, ordinal=ordinal, n_boot=n_boot, level=level, seed=seed)
            rows.append(
                {
                    "judge": rater,
                    "question": question,
                    "level": "ordinal" if ordinal else "nominal",
                    "items": with_majority.items,
                    "kappa_majority": with_majority.value,
                    "kappa_majority_low": with_majority.low,
                    "kappa_majority_high": with_majority.high,
                    "agree_majority": with_majority.agreement,
                    "kappa_workers": with_workers.value,
                    "kappa_workers_low": with_workers.low,
                    "kappa_workers_high": with_workers.high,
                    "pairs_workers": with_workers.pairs,
                    "kappa_crowd": crowd_own.value,
                    "kappa_crowd_low": crowd_own.low,
                    "kappa_crowd_high": crowd_own.high,
                    "alpha_crowd": alpha_crowd[0],
                    "alpha_crowd_low": alpha_crowd[1],
                    "alpha_crowd_high": alpha_crowd[2],
                    "alpha_with_judge": alpha_with[0],
                    "alpha_with_judge_low": alpha_with[1],
                    "alpha_with_judge_high": alpha_with[2],
                }
            )
    return pd.DataFrame(rows)


def _item_scores(
    answers: pd.DataFrame, models: Mapping[Any, tuple[str, ...]], *, ordinal: bool
) -> pd.DataFrame | None:
    """Return per answer (item, model, score) for the rankings, or None when the labels are
    not scores (a label set with no order, no model per item)."""
    rows = []
    labels = set(answers["label"])
    yes_no = labels <= {"yes", "no"}
    for item, label in zip(answers["item"], answers["label"], strict=True):
        systems = models.get(item, ())
        if len(systems) == 1 and (ordinal or yes_no):
            rows.append((item, systems[0], float(label) if ordinal else float(label == "yes")))
        elif len(systems) == 2:
            for model in systems:
                score = 1.0 if label == model else 0.5 if label in HALF else 0.0
                rows.append((item, model, score))
        else:
            return None
    return pd.DataFrame(rows, columns=["item", "model", "score"])


def _model_sums(scores: pd.DataFrame, items: pd.Index, models: list[str]) -> np.ndarray:
    """Return items × models × (sum, count) of the scores."""
    out = np.zeros((len(items), len(models), 2))
    i = items.get_indexer(scores["item"])
    m = pd.Index(models).get_indexer(scores["model"])
    np.add.at(out, (i, m, 0), scores["score"].to_numpy(dtype=float))
    np.add.at(out, (i, m, 1), 1.0)
    return out


def ranking_tables(
    crowd: pd.DataFrame,
    judges: pd.DataFrame,
    models: Mapping[Any, tuple[str, ...]],
    *,
    n_boot: int,
    level: float,
    seed: int,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Return the models' scores by the crowd and each judge, and per judge and question
    Kendall's τ-b between the two rankings with a bootstrap interval over items."""
    scores_rows, tau_rows = [], []
    for question, asked in crowd.groupby("question", sort=True):
        ordinal = _ordinal(asked["label"])
        crowd_scores = _item_scores(asked, models, ordinal=ordinal)
        if crowd_scores is None:
            continue
        for judge, mine in judges[judges["question"] == question].groupby("judge", sort=True):
            judge_scores = _item_scores(mine, models, ordinal=ordinal)
            if judge_scores is None or judge_scores.empty:
                continue
            items = pd.Index(sorted(set(judge_scores["item"]) & set(crowd_scores["item"])))
            names = sorted(set(judge_scores["model"]) | set(crowd_scores["model"]))
            c = _model_sums(crowd_scores[crowd_scores["item"].isin(items)], items, names)
            j = _model_sums(judge_scores[judge_scores["item"].isin(items)], items, names)
            with np.errstate(divide="ignore", invalid="ignore"):
                crowd_mean = c[..., 0].sum(0) / c[..., 1].sum(0)
                judge_mean = j[..., 0].sum(0) / j[..., 1].sum(0)
            for name, cm, jm in zip(names, crowd_mean, judge_mean, strict=True):
                scores_rows.append(
                    {
                        "judge": judge,
                        "question": question,
                        "model": name,
                        "crowd": cm,
                        "judge_score": jm,
                    }
                )
            tau = _tau(crowd_mean, judge_mean)
            low = high = float("nan")
            if n_boot >= 1 and len(items) >= 2 and len(names) >= 3:
                rng = np.random.default_rng(seed)
                draws = rng.multinomial(len(items), np.full(len(items), 1 / len(items)), n_boot)
                with np.errstate(divide="ignore", invalid="ignore"):
                    cb = (draws @ c[..., 0]) / (draws @ c[..., 1])
                    jb = (draws @ j[..., 0]) / (draws @ j[..., 1])
                boot = np.array([_tau(x, y) for x, y in zip(cb, jb, strict=True)])
                boot = boot[np.isfinite(boot)]
                if len(boot):
                    low, high = (
                        float(q) for q in np.quantile(boot, [0.5 - level / 2, 0.5 + level / 2])
                    )
            tau_rows.append(
                {
                    "judge": judge,
                    "question": question,
                    "models": len(names),
                    "items": len(items),
                    "kendall_tau": tau,
                    "tau_low": low,
                    "tau_high": high,
                }
            )
    return pd.DataFrame(scores_rows), pd.DataFrame(tau_rows)


def _tau(x: np.ndarray, y: np.ndarray) -> float:
    ok = np.isfinite(x) & np.isfinite(y)
    if ok.sum() < 2 or np.ptp(x[ok]) == 0 or np.ptp(y[ok]) == 0:
        return float("nan")
    return float(stats.kendalltau(x[ok], y[ok]).statistic)


def _wilson(k: int, n: int, level: float) -> tuple[float, float]:
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
        ordinal = _ordinal(asked["label"])
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
    found = "No judge has answered an item the crowd answered yet."
    if not table.empty and "items" in table:
        found = figures.extremes_text(
            table.assign(who=table["judge"] + " on " + table["question"].astype(str)),
            name="who",
            value="kappa_majority",
            low="kappa_majority_low",
            high="kappa_majority_high",
            n="items",
            n_unit="items",
            words=("agrees with the crowd's majority most", "least"),
        )
    return figures.figure_finish(
        fig,
        title="LLM judges and the crowd: agreement (Cohen's κ)",
        alt=f"Bar chart of Cohen's κ per judge and question. {found}",
        note=f"Error bars: {ci}, percentile bootstrap over items. n: items both the judge "
        "and the crowd answered. Quadratic weights for ordinal questions.",
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
