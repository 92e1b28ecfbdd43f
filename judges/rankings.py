"""Judge–crowd rankings: the models' scores by the crowd and by each judge, and Kendall's τ-b.

Pure pandas/numpy/scipy, no ORM; ``judges.report`` puts the tables in the judges' report.
A model's score is the mean rating (Likert), the share of yes (yes/no) or the share of
comparisons won, both/neither a half (A/B); τ-b's interval is a bootstrap over items.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from judges.agreement import labels_ordinal

HALF = ("both", "neither")


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
        ordinal = labels_ordinal(asked["label"])
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
            low, high = _tau_interval(c, j, n_boot=n_boot, level=level, seed=seed)
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
    """Return Kendall's τ-b of two score vectors over the models both scored (NaN: no spread)."""
    ok = np.isfinite(x) & np.isfinite(y)
    if ok.sum() < 2 or np.ptp(x[ok]) == 0 or np.ptp(y[ok]) == 0:
        return float("nan")
    return float(stats.kendalltau(x[ok], y[ok]).statistic)


def _tau_interval(
    crowd: np.ndarray, judge: np.ndarray, *, n_boot: int, level: float, seed: int
) -> tuple[float, float]:
    """Return the percentile bootstrap interval over items of Kendall's τ-b between the
    crowd's and the judge's model scores (items × models × (sum, count) each); NaN when
    there are too few items or models to rank."""
    n_items, n_models = crowd.shape[:2]
    if n_boot < 1 or n_items < 2 or n_models < 3:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(n_items, np.full(n_items, 1 / n_items), n_boot)
    with np.errstate(divide="ignore", invalid="ignore"):
        cb = (draws @ crowd[..., 0]) / (draws @ crowd[..., 1])
        jb = (draws @ judge[..., 0]) / (draws @ judge[..., 1])
    boot = np.array([_tau(x, y) for x, y in zip(cb, jb, strict=True)])
    boot = boot[np.isfinite(boot)]
    if not len(boot):
        return float("nan"), float("nan")
    low, high = np.quantile(boot, [0.5 - level / 2, 0.5 + level / 2])
    return float(low), float(high)
