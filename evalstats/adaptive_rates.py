"""Win rates that adaptive pair allocation does not bias (pure numpy/pandas, no ORM).

Under adaptive allocation (``evalstats.adaptive``) which pair is judged next depends on the
judgments so far, and the raw summaries the reports print stop estimating what they estimate
under uniform allocation:

- **A pair's win rate** (``ranking.win_rates``, and its A:B ratio): a pair whose judgments
  happen to exaggerate the gap looks decided and is starved, keeping its exaggerated share;
  one whose judgments understate the gap keeps being judged and is pulled back to the truth.
  The share at the (data-chosen) end is biased toward the winner: a sample mean under
  optional stopping.
- **A model's pooled win rate** (``ranking.bradley_terry``'s ``win_rate``): every judgment
  counts once, so the opponents are weighted by how often the sampler chose them (close ones,
  by design, far more often); under uniform allocation the same number is, nearly, the mean
  over opponents of the pair's share.

A Bradley–Terry fit to every judgment does not escape the first: the fitted gaps of adjacent
pairs are exaggerated the same way and add up along the ranking (bench/adaptive.py measures
it). What is free of the steering is the part of the design that did not depend on outcomes:
every pair's first ``adaptive_min_per_pair`` judgments, handed out before steering starts (a
pair's place in that phase depends on its count, never on its results). The corrected rates
are **model-based on those judgments**: a Firth Bradley–Terry fit (as the report's) to each
pair's first ``first`` judgments; a pair's rate is expit(s_a - s_b), a model's the mean over
its opponents, each weighted equally: under uniform allocation that is what the pooled rate
estimates. The fit pools every pair's floor judgments through the ranking, which keeps its
error below the raw share's. With ``first=None`` (uniform allocation) every judgment is used.
Inverse-probability weights were the alternative; they need each judgment's selection
probability (not stored: the plan lives in the cache, and allocation falls back to uniform
when a plan's items run out) and blow up for the pairs the rule starves (weights near 0).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import expit

from evalstats import ranking

PAIR_RATE_COLUMNS = ["model_a", "model_b", "decisive", "win_rate", "corrected", "ratio_corrected"]
MODEL_RATE_COLUMNS = ["model", "opponents", "win_rate", "corrected"]
SCORE = {"a": 1.0, "b": 0.0, "both": 0.5}


def first_judgments(parameters: Mapping[str, Any]) -> int | None:
    """Return how many of each pair's first judgments the corrected rates may use: the
    campaign's ``adaptive_min_per_pair`` under adaptive allocation, None (all) otherwise."""
    if parameters.get("allocation") != "adaptive":
        return None
    return int(parameters.get("adaptive_min_per_pair", 0))


def first_mask(a: np.ndarray, b: np.ndarray, first: int | None) -> np.ndarray:
    """Return which judgments are among their (unordered) pair's first ``first``, the
    judgments given in order of submission; all of them when ``first`` is None."""
    if first is None:
        return np.ones(len(a), dtype=bool)
    low, high = np.minimum(a, b), np.maximum(a, b)
    pair = pd.Series(list(zip(low.tolist(), high.tolist(), strict=True)), dtype=object)
    return (pair.groupby(pair).cumcount() < first).to_numpy()


def _strengths(data: pd.DataFrame) -> dict[str, float]:
    """Return Firth Bradley–Terry log-strengths fitted within each comparison component of
    the canonical outcomes ``data`` (rates across components are not defined)."""
    out: dict[str, float] = {}
    for models in ranking.comparison_components(data):
        inside = data[data["a"].isin(models) & data["b"].isin(models)]
        if len(models) < 2 or inside.empty:
            continue
        ia = pd.Index(models).get_indexer(inside["a"]).astype(np.int64)
        ib = pd.Index(models).get_indexer(inside["b"]).astype(np.int64)
        score = inside["outcome"].map(SCORE).to_numpy(dtype=float)
        fitted = ranking._fit_firth(ranking._wins(ia, ib, score, len(models)))
        out.update(zip(models, fitted.tolist(), strict=True))
    return out


def _fit_first(data: pd.DataFrame, first: int | None, keep: list[str]) -> dict[str, float]:
    """Return strengths from the ``keep`` outcomes of each pair's first ``first`` rows."""
    mask = first_mask(data["a"].to_numpy(), data["b"].to_numpy(), first)
    chosen = data[mask & data["outcome"].isin(keep).to_numpy()]
    return _strengths(chosen) if len(chosen) else {}


def pair_rates(outcomes: pd.DataFrame, *, first: int | None) -> pd.DataFrame:
    """Return per model pair (oriented by name, as ``ranking.win_rates``): decisive
    judgments, the raw share won by ``model_a`` among them, and the corrected share
    expit(s_a - s_b) with its A:B ratio, from a Firth Bradley–Terry fit to the decisive
    judgments among each pair's first ``first`` (``first_judgments``; rows in order of
    submission). Both estimate P(model_a chosen | decisive); "both" and "neither" are left
    out, as in ``win_rates``. The corrected share is NaN where the first judgments link the
    two models by no decisive one.
    """
    if outcomes.empty:
        return pd.DataFrame(columns=PAIR_RATE_COLUMNS)
    data = ranking._canonical(outcomes).reset_index(drop=True)
    strength = _fit_first(data, first, ["a", "b"])
    decisive = data[data["outcome"].isin(["a", "b"])]
    rows = []
    for (a, b), part in decisive.groupby(["a", "b"], sort=True):
        corrected = np.nan
        if a in strength and b in strength:
            corrected = float(expit(strength[a] - strength[b]))
        rows.append(
            {
                "model_a": a,
                "model_b": b,
                "decisive": len(part),
                "win_rate": float((part["outcome"] == "a").mean()),
                "corrected": corrected,
                "ratio_corrected": corrected / (1.0 - corrected),
            }
        )
    return pd.DataFrame(rows, columns=PAIR_RATE_COLUMNS)


def model_rates(outcomes: pd.DataFrame, *, first: int | None) -> pd.DataFrame:
    """Return per model: its opponents (its comparison component), the raw pooled win rate
    (``ranking.bradley_terry``'s: "both" half a win, "neither" left out, every judgment once)
    and the corrected one, the mean over those opponents, each weighted equally, of
    expit(s_model - s_opponent) from a Firth Bradley–Terry fit with the same ties to each
    pair's first ``first`` judgments (``first_judgments``; rows in order of submission).
    """
    if outcomes.empty:
        return pd.DataFrame(columns=MODEL_RATE_COLUMNS)
    data = ranking._canonical(outcomes).reset_index(drop=True)
    strength = _fit_first(data, first, ["a", "b", "both"])
    decided = data[data["outcome"] != "neither"]
    score = decided["outcome"].map(SCORE).to_numpy(dtype=float)
    raw = pd.concat(
        [
            pd.Series(score, index=decided["a"].to_numpy()),
            pd.Series(1.0 - score, index=decided["b"].to_numpy()),
        ]
    )
    raw = raw.groupby(level=0).mean()
    rows = []
    for models in ranking.comparison_components(data):
        for model in models:
            if model not in raw.index:
                continue
            others = np.array([strength[o] for o in models if o != model and o in strength])
            corrected = np.nan
            if model in strength and len(others):
                corrected = float(expit(strength[model] - others).mean())
            rows.append(
                {
                    "model": model,
                    "opponents": len(models) - 1,
                    "win_rate": float(raw[model]),
                    "corrected": corrected,
                }
            )
    return pd.DataFrame(rows, columns=MODEL_RATE_COLUMNS)
