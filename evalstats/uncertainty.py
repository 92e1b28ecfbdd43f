"""Design-aware confidence intervals of crowd ratings: items crossed with raters.

Pure numpy/pandas/scipy, no ORM. A crowd study's judgments are not independent: ratings of
the same item share the item, and ratings by the same worker share the worker's leniency.
The intervals here account for that (docs/statistics.md, "Design-aware intervals", states
each method and its sources; the bootstraps over conversations and dialogues are
``cluster_bootstrap``'s, the report options ``options``'):

- ``rater_effects`` (``evalstats.raters``): the variance of the raters' effects on their
  votes, by unbiased moments of a crossed items x raters random-effects model (Henderson, 1953).
- ``crossed_mean`` / ``crossed_contrast``: a mean of item scores (mean rating, majority label,
  win) and a difference of two such means; their variance adds the items' own variance to
  the covariance that shared raters induce (linearised through each vote's slope), with a t
  interval on Satterthwaite's (1946) degrees of freedom, or Wilson's for a proportion.
- ``crossed_contrast``'s ``taste``: the raters' taste per model (``evalstats.taste``), which
  a difference does not cancel; a model's mean takes leniency and taste together
  (``within_model_effects``).
- ``holm``: Holm's (1979) step-down adjustment of model-vs-reference p-values.
- ``mean_comparisons``: a Likert report's table of model means against the reference.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import pandas as pd
from scipy import sparse, stats

from evalstats.options import report_options
from evalstats.raters import RaterEffects as RaterEffects
from evalstats.raters import rater_effects as rater_effects
from evalstats.taste import rater_model_effects, within_model_effects

CROSSED = "crossed items×raters (moments), t"
CROSSED_WILSON = "crossed items×raters (moments), Wilson"
CROSSED_TASTE = "crossed items×raters + rater×model (moments), t"
INDEPENDENT = "independent judgments (comparison only)"
# A share this near 0 or 1 is 0 or 1: the rounding of a weighted mean of 0/1 scores.
ROUNDING = 1e-9


class Interval(NamedTuple):
    """An estimate, its confidence bounds, standard error and the method that gave them."""

    value: float
    low: float
    high: float
    se: float
    method: str


class Contrast(NamedTuple):
    """A difference of two means with its interval and two-sided p-value (not adjusted)."""

    value: float
    low: float
    high: float
    se: float
    p: float
    method: str


def pivotal_weights(votes: pd.DataFrame, column: str = "value") -> np.ndarray:
    """Return per 0/1 vote the chance that it is pivotal, from the other votes' share.

    Smooth in the votes (unlike the observed pivotal indicator of ``majority_slopes``) and
    free of the vote itself, so it can weigh a rater's residuals without selecting them:
    P(the m - 1 other votes split evenly) at their shrunken share (others + 1/2) / m.
    """
    m = votes.groupby("item")[column].transform("size").to_numpy(dtype=float)
    yes = votes.groupby("item")[column].transform("sum").to_numpy(dtype=float)
    p = (yes - votes[column].to_numpy(dtype=float) + 0.5) / m  # the other votes' share
    odd = stats.binom.pmf((m - 1.0) / 2.0, m - 1.0, p)
    even = 0.5 * (stats.binom.pmf(m / 2.0 - 1.0, m - 1.0, p) + stats.binom.pmf(m / 2.0, m - 1.0, p))
    return np.where(m % 2 == 1, odd, even)


def _slopes(slopes: pd.DataFrame, items: pd.Index, columns: list[str]) -> list[sparse.csr_matrix]:
    """Return one items x raters matrix of d(score_i)/d(vote_ir) per vote component."""
    part = slopes[slopes["item"].isin(items)]
    row = items.get_indexer(part["item"])
    col, raters = pd.factorize(part["rater"])
    shape = (len(items), len(raters))
    return [
        sparse.csr_matrix((part[c].to_numpy(dtype=float), (row, col)), shape=shape) for c in columns
    ]


def _rater_term(c: np.ndarray, d: list[sparse.csr_matrix], tau: np.ndarray) -> float:
    """Return sum_{i != j} c_i c_j Cov(L_i, L_j) = sum_{i != j} c_i c_j sum_r D_ir' tau D_jr."""
    loads = np.column_stack([np.asarray(m.T @ c).ravel() for m in d])  # raters x d
    total = float(np.einsum("rk,kl,rl->", loads, tau, loads))
    own = 0.0
    for k in range(len(d)):
        for l_ in range(len(d)):
            if tau[k, l_]:
                own += tau[k, l_] * float(
                    (c * c) @ np.asarray(d[k].multiply(d[l_]).sum(axis=1)).ravel()
                )
    return total - own


def _group(scores: pd.Series, weights: pd.Series | None) -> tuple[np.ndarray, np.ndarray, pd.Index]:
    scores = scores.dropna()
    w = (
        pd.Series(1.0, index=scores.index)
        if weights is None
        else weights.reindex(scores.index).astype(float)
    )
    return scores.to_numpy(dtype=float), (w / w.sum()).to_numpy(), pd.Index(scores.index)


def _crossed(
    groups: list[tuple[np.ndarray, np.ndarray, pd.Index, float]],
    slopes: pd.DataFrame,
    effects: RaterEffects,
    columns: list[str],
    taste: RaterEffects | None = None,
) -> tuple[float, float, float]:
    """Return sum_g sign_g c_g' L_g, its variance and Satterthwaite's degrees of freedom.

    ``taste`` (omega of ``rater_model_effects``) adds the raters' effects that covary within a
    group only: omega times each group's own rater term, which no sign cancels.
    """
    items = pd.Index([i for _, _, index, _ in groups for i in index])
    d = _slopes(slopes, items, columns)
    c_all = np.concatenate([sign * c for _, c, _, sign in groups])
    value = float(sum(sign * (c @ x) for x, c, _, sign in groups))
    omega = np.zeros_like(effects.tau) if taste is None else taste.tau
    item_parts, taste_part, start = [], 0.0, 0
    for x, c, _, _ in groups:
        n = len(x)
        mine = [m[start : start + n] for m in d]
        ones = np.ones(n)
        # The sample variance misses the items' mean covariance through shared raters.
        shared = _rater_term(ones, mine, effects.tau + omega) / (n * (n - 1.0)) if n > 1 else 0.0
        sigma2 = float(np.var(x, ddof=1)) + shared if n > 1 else float("nan")
        item_parts.append((float((c * c).sum()) * sigma2, n - 1.0))
        taste_part += _rater_term(c, mine, omega) if omega.any() else 0.0
        start += n
    rater_part = _rater_term(c_all, d, effects.tau)
    total = max(sum(v for v, _ in item_parts) + rater_part + taste_part, 0.0)
    terms = [v * v / df for v, df in item_parts if df > 0]
    if rater_part > 0 and np.isfinite(effects.df):
        terms.append(rater_part**2 / effects.df)
    if taste is not None and taste_part > 0 and np.isfinite(taste.df):
        terms.append(taste_part**2 / taste.df)
    df = total * total / sum(terms) if sum(terms) > 0 else float("inf")
    return value, total, df


def crossed_mean(
    scores: pd.Series,
    slopes: pd.DataFrame,
    effects: RaterEffects,
    *,
    columns: Sequence[str] = ("slope",),
    weights: pd.Series | None = None,
    level: float = 0.95,
    proportion: bool = False,
) -> Interval:
    """Return the weighted mean of item scores with a crossed items x raters t interval.

    ``scores``: one per item (a mean rating, a 0/1 majority label), indexed by item.
    ``slopes``: ``item``, ``rater`` and per vote component (``columns``) how much the item's
    score moves with that rater's vote (1/m for a mean of m ratings; for a majority label,
    whether the vote was pivotal: ``majority_slopes``). ``effects``: ``rater_effects`` of
    the votes. ``weights`` (e.g. ratings per item, for the mean of all ratings) default to
    equal. Var = sum c_i^2 Var(L_i) + sum_{i != j} c_i c_j sum_r D_ir' tau D_jr.

    A ``proportion`` (scores in [0, 1]) gets Wilson's score interval at the effective sample
    size p(1 - p) / Var (Kish's design effect), which stays inside [0, 1] and keeps its
    coverage near 0 and 1, where the symmetric interval does not.
    """
    x, c, index = _group(scores, weights)
    nan = float("nan")
    if len(x) < 2:
        value = float(c @ x) if len(x) else nan
        return Interval(value, nan, nan, nan, CROSSED)
    value, var, df = _crossed([(x, c, index, 1.0)], slopes, effects, list(columns))
    se = float(np.sqrt(var))
    t = float(stats.t.ppf(0.5 + level / 2.0, df))
    if proportion:
        low, high = _wilson(value, se, t, len(x))
        return Interval(value, low, high, se, CROSSED_WILSON)
    return Interval(value, value - t * se, value + t * se, se, CROSSED)


def _wilson(p: float, se: float, z: float, n_items: int) -> tuple[float, float]:
    """Return Wilson's (1927) interval for a share p at the effective size p(1 - p) / se^2.

    A share within rounding of 0 or 1 is that bound: a weighted mean of 400 ones can come out
    as 1 - 1e-16, whose "effective size" p(1 - p) / se^2 is then about 0 and its interval
    [0, 1] (7 of 60 generic-bot studies of 400 responses; docs/statistics.md).
    """
    p = 0.0 if p < ROUNDING else 1.0 if p > 1.0 - ROUNDING else p
    n = p * (1.0 - p) / (se * se) if se > 0 and 0.0 < p < 1.0 else float(n_items)
    centre = (p + z * z / (2.0 * n)) / (1.0 + z * z / n)
    half = z / (1.0 + z * z / n) * np.sqrt(p * (1.0 - p) / n + z * z / (4.0 * n * n))
    # At p = 0 or 1 a bound equals p up to rounding: keep p inside its interval exactly.
    return float(min(max(centre - half, 0.0), p)), float(max(min(centre + half, 1.0), p))


def mover_average(first: Interval, second: Interval, se_average: float) -> tuple[float, float]:
    """Return the interval of (first + second) / 2 from the two estimates' own intervals by
    the method of variance estimates recovery (MOVER; Zou & Donner 2008, Newcombe 2011):
    each side adds the components' distances to their bounds on that side, correlated as
    their average's standard error says (cov = 2 se_average^2 - (se_1^2 + se_2^2) / 2).

    SSA, the average of sensibleness and specificity: where both are near 0 or 1 (a generic
    bot: sensible 97%, specific 3%) the average is near 0.5 but its symmetric interval rests
    on a few rare labels, and covered 84% in bench/coverage.py; the components' Wilson
    intervals carry what those few labels cannot say.
    """
    value = (first.value + second.value) / 2.0
    rho = 0.0
    if first.se > 0 and second.se > 0:
        cov = 2.0 * se_average**2 - (first.se**2 + second.se**2) / 2.0
        rho = float(np.clip(cov / (first.se * second.se), -1.0, 1.0))
    sides = []
    for d1, d2 in (
        (first.value - first.low, second.value - second.low),
        (first.high - first.value, second.high - second.value),
    ):
        sides.append(float(np.sqrt(max(d1 * d1 + d2 * d2 + 2.0 * rho * d1 * d2, 0.0))) / 2.0)
    return value - sides[0], value + sides[1]


def crossed_contrast(
    scores_a: pd.Series,
    scores_b: pd.Series,
    slopes: pd.DataFrame,
    effects: RaterEffects,
    *,
    columns: Sequence[str] = ("slope",),
    weights_a: pd.Series | None = None,
    weights_b: pd.Series | None = None,
    level: float = 0.95,
    taste: RaterEffects | None = None,
) -> Contrast:
    """Return mean(A) - mean(B) of item scores with a crossed t interval and its p-value.

    A and B are different items (two models' responses); a rater who judged both shifts both
    means alike, which the rater term (with opposite signs) takes into account. Their taste
    for each model (``taste``: ``rater_model_effects``) does not cancel and widens the interval.
    """
    xa, ca, ia = _group(scores_a, weights_a)
    xb, cb, ib = _group(scores_b, weights_b)
    nan = float("nan")
    method = CROSSED if taste is None else CROSSED_TASTE
    if len(xa) < 2 or len(xb) < 2:
        value = float(ca @ xa - cb @ xb) if len(xa) and len(xb) else nan
        return Contrast(value, nan, nan, nan, nan, method)
    groups = [(xa, ca, ia, 1.0), (xb, cb, ib, -1.0)]
    value, var, df = _crossed(groups, slopes, effects, list(columns), taste)
    se = float(np.sqrt(var))
    half = float(stats.t.ppf(0.5 + level / 2.0, df)) * se
    p = float(2.0 * stats.t.sf(abs(value) / se, df)) if se > 0 else nan
    return Contrast(value, value - half, value + half, se, p, method)


def mean_slopes(judgments: pd.DataFrame) -> pd.DataFrame:
    """Return ``item``, ``rater``, ``slope`` = 1/m_i: how a mean of m_i ratings moves."""
    m = judgments.groupby("item")["rater"].transform("size")
    return judgments[["item", "rater"]].assign(slope=1.0 / m.to_numpy(dtype=float))


def majority_slopes(votes: pd.DataFrame, column: str = "value") -> np.ndarray:
    """Return per 0/1 vote whether it was pivotal: the item's majority with it 1 minus with it 0.

    A tie counts as half a label; the expectation of this difference over the other votes is
    the derivative of the majority label with respect to the vote's probability.
    """
    y = votes[column].to_numpy(dtype=float)
    m = votes.groupby("item")[column].transform("size").to_numpy(dtype=float)
    yes = votes.groupby("item")[column].transform("sum").to_numpy(dtype=float)
    others = yes - y

    def label(k: np.ndarray) -> np.ndarray:
        return np.where(2 * k > m, 1.0, np.where(2 * k == m, 0.5, 0.0))

    return label(others + 1.0) - label(others)


def holm(pvalues: Sequence[float]) -> np.ndarray:
    """Return Holm's (1979) step-down adjusted p-values (NaN stays NaN, order kept)."""
    p = np.asarray(pvalues, dtype=float)
    out = np.full(len(p), np.nan)
    ok = np.flatnonzero(~np.isnan(p))
    if not len(ok):
        return out
    order = ok[np.argsort(p[ok], kind="stable")]
    m = len(order)
    adjusted = np.maximum.accumulate((m - np.arange(m)) * p[order])
    out[order] = np.minimum(adjusted, 1.0)
    return out


MEAN_COLUMNS = [
    "model",
    "aspect",
    "ci_low",
    "ci_high",
    "ci_method",
    "diff",
    "diff_low",
    "diff_high",
    "p",
    "p_holm",
    "better",
]


def aspect_effects(
    part: pd.DataFrame, *, design: bool
) -> tuple[RaterEffects, RaterEffects, RaterEffects | None]:
    """Return the raters' effects across models (tau), within a model (V) and their taste.

    One model's mean moves with its raters' leniency and taste for that model (V = tau +
    omega); a difference of two models' means with the leniency of the raters they share
    (tau) and their taste (omega), each model's own. Without the design (the method
    "independent") there is no taste and V is tau.
    """
    effects = rater_effects(part, group="model")
    if not design:
        return effects, effects, None
    return effects, within_model_effects(part), rater_model_effects(part)


def mean_comparisons(
    ratings: pd.DataFrame,
    *,
    reference: str | None,
    level: float | None = None,
    alpha: float = 0.05,
) -> pd.DataFrame:
    """Return per model and aspect the mean's crossed interval and the test against the reference.

    ``ratings`` has ``model``, ``aspect``, ``item``, ``rater``, ``value``. The mean is that of
    all ratings (items weighted by their number of ratings), its interval ``crossed_mean``'s
    with the raters' variance within a model (``within_model_effects``: leniency and taste);
    each model other than ``reference`` gets ``diff`` = its mean minus the reference's on the
    same aspect with ``crossed_contrast``'s interval and p-value (with the raters' taste per
    model, ``rater_model_effects``), ``p_holm`` adjusted over every comparison of the table
    (Holm), and ``better`` when p_holm < ``alpha`` and the difference is positive. ``level``
    defaults to the report options'; their method "independent" takes every rating as an
    independent unit (the paper's SEM, with t).
    """
    options = report_options()
    level = options.level if level is None else level
    rows = []
    for aspect, part in ratings.groupby("aspect", sort=False):
        part = part.dropna(subset=["value"])
        if options.method == "independent":
            part = part.assign(item=np.arange(len(part)), rater=np.arange(len(part)))
        effects, within, taste = aspect_effects(part, design=options.method == "design")
        slopes = mean_slopes(part)
        by_item = part.groupby("item").agg(
            score=("value", "mean"), n=("value", "size"), model=("model", "first")
        )
        groups = {m: g for m, g in by_item.groupby("model", sort=True)}
        ref = groups.get(reference) if reference else None
        for model, g in groups.items():
            est = crossed_mean(g["score"], slopes, within, weights=g["n"], level=level)
            row: dict[str, object] = {
                "model": model,
                "aspect": aspect,
                "ci_low": est.low,
                "ci_high": est.high,
                "ci_method": est.method if options.method == "design" else INDEPENDENT,
            }
            if ref is not None and model != reference:
                diff = crossed_contrast(
                    g["score"],
                    ref["score"],
                    slopes,
                    effects,
                    weights_a=g["n"],
                    weights_b=ref["n"],
                    level=level,
                    taste=taste,
                )
                row.update(diff=diff.value, diff_low=diff.low, diff_high=diff.high, p=diff.p)
            rows.append(row)
    table = pd.DataFrame(rows).reindex(columns=MEAN_COLUMNS)
    table["p_holm"] = holm(table["p"].to_numpy(dtype=float))
    table["better"] = (table["p_holm"] < alpha) & (table["diff"] > 0)
    return table
