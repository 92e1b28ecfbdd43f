"""Design-aware confidence intervals of crowd ratings: items crossed with raters.

Pure numpy/pandas/scipy, no ORM. A crowd study's judgments are not independent: ratings of
the same item share the item, and ratings by the same worker share the worker's leniency.
The intervals here account for that (docs/statistics.md, "Design-aware intervals", states
each method and its sources; the bootstraps over conversations and dialogues are
``cluster_bootstrap``'s, the report options ``options``'):

- ``rater_effects``: the variance of the raters' effects on their votes, by unbiased moments
  of a crossed items x raters random-effects model (Henderson, 1953).
- ``crossed_mean`` / ``crossed_contrast``: a mean of item scores (mean rating, majority label,
  win) and a difference of two such means; their variance adds the items' own variance to
  the covariance that shared raters induce (linearised through each vote's slope), with a t
  interval on Satterthwaite's (1946) degrees of freedom, or Wilson's for a proportion.
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

CROSSED = "crossed items×raters (moments), t"
CROSSED_WILSON = "crossed items×raters (moments), Wilson"
INDEPENDENT = "independent judgments (comparison only)"


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


class RaterEffects(NamedTuple):
    """Covariance of the raters' additive effects on their votes, and its degrees of freedom.

    ``tau`` is d x d for votes with d components (one for a rating, two for SSA's sensible
    and specific votes); ``df`` is Satterthwaite's degrees of freedom of its diagonal.
    """

    tau: np.ndarray
    df: float


def _codes(votes: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, int, int]:
    """Return item and rater codes of the votes and the numbers of items and raters."""
    item, items = pd.factorize(votes["item"])
    rater, raters = pd.factorize(votes["rater"])
    return item, rater, len(items), len(raters)


def rater_effects(
    votes: pd.DataFrame,
    columns: Sequence[str] = ("value",),
    *,
    weights: Sequence[str] | None = None,
    group: str | None = None,
) -> RaterEffects:
    """Estimate the covariance of rater effects on votes from items judged several times.

    The model is y_ir = a_i + b_ir + e_ir with item effects a (which absorb the models' means),
    rater effects b with covariance tau, and noise e ~ (0, s2); items crossed with raters, any
    unbalanced design. Within-item residuals z_ir = y_ir - mean_i remove the items. Their sum
    of squares W and the between-rater sum of squares Q_b = sum_r n_r g_r g_r', g_r rater
    r's weighted mean residual, have expectations linear in (tau, s2) with coefficients from
    the design alone (Henderson, 1953, method 3 in spirit; docs/statistics.md):
    E W = (sum_i (m_i - 1)) (tau + s2), E Q_b = K tau + L s2. ``weights`` (one column per
    vote component) weigh each rater's votes in g_r: a majority label depends on a rater
    through the votes where the rater is pivotal, so its rater effect is the effect on those
    votes. With one rating per item, raters are compared through their items' residuals from
    their ``group``'s mean (the model's: ``_between_raters``); without ``group``, tau = 0.
    """
    columns = list(columns)
    d = len(columns)
    zero = RaterEffects(np.zeros((d, d)), float("inf"))
    data = votes.dropna(subset=columns)
    m = data.groupby("item")["rater"].transform("size").to_numpy(dtype=float)
    if not (m >= 2).any():
        return _between_raters(data, columns, group) if group else zero
    data, m = data[m >= 2], m[m >= 2]
    y = data[columns].to_numpy(dtype=float)
    w = np.ones_like(y) if weights is None else data[list(weights)].to_numpy(dtype=float)
    item, rater, n_items, n_raters = _codes(data)
    sums = np.zeros((n_items, d))
    np.add.at(sums, item, y)
    z = y - sums[item] / m[:, None]
    n_r = np.bincount(rater, minlength=n_raters).astype(float)
    if (n_r >= 2).sum() < 2:
        return zero
    w_total = float((np.bincount(item)[np.bincount(item) > 0] - 1.0).sum())
    q_w = z.T @ z
    w_r = np.zeros((n_raters, d))
    np.add.at(w_r, rater, w)
    v = np.divide(w, w_r[rater], out=np.zeros_like(w), where=w_r[rater] > 0)
    g = np.zeros((n_raters, d))
    np.add.at(g, rater, v * z)
    q_b = (g * n_r[:, None]).T @ g
    design = _design_moments(item, rater, v, m, n_r, n_items)
    spread = np.diag(design.big_k) - np.diag(design.big_l)
    if (spread <= 0).any():
        return zero
    tau = _covariance_nearest((q_b - design.big_l * q_w / w_total) / (design.big_k - design.big_l))
    noise = np.clip(np.diag(q_w) / w_total - np.diag(tau), 0.0, None)
    # Satterthwaite: n_r g_r^2 is about its expectation times chi2_1.
    expect = design.k_r * np.diag(tau) + n_r[:, None] * design.l_r * noise
    var_tau = 2.0 * (expect * expect).sum(axis=0) / spread**2
    with np.errstate(divide="ignore", invalid="ignore"):
        df = np.where(var_tau > 0, 2.0 * np.diag(tau) ** 2 / var_tau, np.inf)
    return RaterEffects(tau, float(min(np.min(df), n_raters - 1.0)))


def _covariance_nearest(estimate: np.ndarray) -> np.ndarray:
    """Return the covariance matrix nearest a moment estimate: its symmetric part with the
    negative eigenvalues set to 0 (a variance estimated below 0 is 0)."""
    values, vectors = np.linalg.eigh((estimate + estimate.T) / 2.0)
    return (vectors * np.clip(values, 0.0, None)) @ vectors.T


class _DesignMoments(NamedTuple):
    """The coefficients of E Q_b = K tau + L s2, which depend on the design alone.

    ``k_r`` holds each rater's share of K's diagonal and ``l_r`` each rater's weighted
    count behind L's (before the factor n_r): the expectation of n_r g_r^2 that
    Satterthwaite's degrees of freedom need.
    """

    big_k: np.ndarray
    big_l: np.ndarray
    k_r: np.ndarray
    l_r: np.ndarray


def _design_moments(
    item: np.ndarray, rater: np.ndarray, v: np.ndarray, m: np.ndarray, n_r: np.ndarray, n_items: int
) -> _DesignMoments:
    """Return K and L of ``rater_effects`` for votes weighted v within their rater."""
    n_raters, d = len(n_r), v.shape[1]
    h = np.zeros((n_raters, d))
    np.add.at(h, rater, v * (1.0 - 1.0 / m)[:, None])
    u = sparse.csr_matrix((1.0 / m, (item, rater)), shape=(n_items, n_raters))
    cs = []
    for k in range(d):
        vk = sparse.csr_matrix((v[:, k], (item, rater)), shape=(n_items, n_raters))
        ck = sparse.csr_matrix(vk.T @ u)  # raters x raters, sparse: pools can be large
        ck.setdiag(0.0)
        cs.append(ck)
    big_k, big_l = np.zeros((d, d)), np.zeros((d, d))
    k_r = np.zeros((n_raters, d))
    for k in range(d):
        for l_ in range(d):
            shared = np.asarray(cs[k].multiply(cs[l_]).sum(axis=1)).ravel()
            per_rater = n_r * (h[:, k] * h[:, l_] + shared)
            big_k[k, l_] = per_rater.sum()
            cross = np.bincount(rater, weights=v[:, k] * v[:, l_] * (1.0 - 1.0 / m))
            big_l[k, l_] = float((n_r[: len(cross)] * cross).sum())
            if k == l_:
                k_r[:, k] = per_rater
    l_r = np.zeros((n_raters, d))
    np.add.at(l_r, rater, v * v * (1.0 - 1.0 / m)[:, None])
    return _DesignMoments(big_k, big_l, k_r, l_r)


def _between_raters(data: pd.DataFrame, columns: list[str], group: str) -> RaterEffects:
    """One-way random-effects ANOVA of the raters on residuals from each group's mean.

    With a single rating per item, an item's rating is mu_g + b_r + (item and noise), so the
    raters' mean residuals estimate tau by the unbalanced one-way moment estimator
    (MS_b - MS_w) / n0 (Searle, Casella & McCulloch, 1992, section 3.5), with
    Satterthwaite's degrees of freedom.
    """
    d = len(columns)
    y = data[columns].to_numpy(dtype=float)
    z = y - data.groupby(group)[columns].transform("mean").to_numpy(dtype=float)
    rater, raters = pd.factorize(data["rater"])
    n_r = np.bincount(rater).astype(float)
    big_n, n_raters = float(len(z)), len(raters)
    if n_raters < 2 or big_n <= n_raters:
        return RaterEffects(np.zeros((d, d)), float("inf"))
    g = np.zeros((n_raters, d))
    np.add.at(g, rater, z)
    g /= n_r[:, None]
    within = z - g[rater]
    ms_w = (within.T @ within) / (big_n - n_raters)
    centred = g - (n_r @ g) / big_n
    ms_b = ((centred * n_r[:, None]).T @ centred) / (n_raters - 1.0)
    n0 = (big_n - (n_r * n_r).sum() / big_n) / (n_raters - 1.0)
    tau = _covariance_nearest((ms_b - ms_w) / n0)
    top = (n0 * np.diag(tau)) ** 2
    bottom = np.diag(ms_b) ** 2 / (n_raters - 1.0) + np.diag(ms_w) ** 2 / (big_n - n_raters)
    with np.errstate(divide="ignore", invalid="ignore"):
        df = np.where(top > 0, top / bottom, np.inf)
    return RaterEffects(tau, float(min(np.min(df), n_raters - 1.0)))


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
) -> tuple[float, float, float]:
    """Return sum_g sign_g c_g' L_g, its variance and Satterthwaite's degrees of freedom."""
    items = pd.Index([i for _, _, index, _ in groups for i in index])
    d = _slopes(slopes, items, columns)
    c_all = np.concatenate([sign * c for _, c, _, sign in groups])
    value = float(sum(sign * (c @ x) for x, c, _, sign in groups))
    item_parts = []
    start = 0
    for x, c, _, _ in groups:
        n = len(x)
        mine = [m[start : start + n] for m in d]
        ones = np.ones(n)
        # The sample variance misses the items' mean covariance through shared raters.
        shared = _rater_term(ones, mine, effects.tau) / (n * (n - 1.0)) if n > 1 else 0.0
        sigma2 = float(np.var(x, ddof=1)) + shared if n > 1 else float("nan")
        item_parts.append((float((c * c).sum()) * sigma2, n - 1.0))
        start += n
    rater_part = _rater_term(c_all, d, effects.tau)
    total = max(sum(v for v, _ in item_parts) + rater_part, 0.0)
    terms = [v * v / df for v, df in item_parts if df > 0]
    if rater_part > 0 and np.isfinite(effects.df):
        terms.append(rater_part**2 / effects.df)
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
    """Return Wilson's (1927) interval for a share p at the effective size p(1 - p) / se^2."""
    n = p * (1.0 - p) / (se * se) if se > 0 and 0.0 < p < 1.0 else float(n_items)
    centre = (p + z * z / (2.0 * n)) / (1.0 + z * z / n)
    half = z / (1.0 + z * z / n) * np.sqrt(p * (1.0 - p) / n + z * z / (4.0 * n * n))
    # At p = 0 or 1 a bound equals p up to rounding: keep p inside its interval exactly.
    return float(min(max(centre - half, 0.0), p)), float(max(min(centre + half, 1.0), p))


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
) -> Contrast:
    """Return mean(A) - mean(B) of item scores with a crossed t interval and its p-value.

    A and B are different items (two models' responses); a rater who judged both shifts both
    means alike, which the rater term (with opposite signs) takes into account.
    """
    xa, ca, ia = _group(scores_a, weights_a)
    xb, cb, ib = _group(scores_b, weights_b)
    nan = float("nan")
    if len(xa) < 2 or len(xb) < 2:
        value = float(ca @ xa - cb @ xb) if len(xa) and len(xb) else nan
        return Contrast(value, nan, nan, nan, nan, CROSSED)
    groups = [(xa, ca, ia, 1.0), (xb, cb, ib, -1.0)]
    value, var, df = _crossed(groups, slopes, effects, list(columns))
    se = float(np.sqrt(var))
    half = float(stats.t.ppf(0.5 + level / 2.0, df)) * se
    p = float(2.0 * stats.t.sf(abs(value) / se, df)) if se > 0 else nan
    return Contrast(value, value - half, value + half, se, p, CROSSED)


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


def mean_comparisons(
    ratings: pd.DataFrame,
    *,
    reference: str | None,
    level: float | None = None,
    alpha: float = 0.05,
) -> pd.DataFrame:
    """Return per model and aspect the mean's crossed interval and the test against the reference.

    ``ratings`` has ``model``, ``aspect``, ``item``, ``rater``, ``value``. The mean is that of
    all ratings (items weighted by their number of ratings), its interval ``crossed_mean``'s;
    each model other than ``reference`` gets ``diff`` = its mean minus the reference's on the
    same aspect with ``crossed_contrast``'s interval and p-value, ``p_holm`` adjusted over
    every comparison of the table (Holm), and ``better`` when p_holm < ``alpha`` and the
    difference is positive. ``level`` defaults to the report options'; their method
    "independent" takes every rating as an independent unit (the paper's SEM, with t).
    """
    options = report_options()
    level = options.level if level is None else level
    rows = []
    for aspect, part in ratings.groupby("aspect", sort=False):
        part = part.dropna(subset=["value"])
        if options.method == "independent":
            part = part.assign(item=np.arange(len(part)), rater=np.arange(len(part)))
        effects = rater_effects(part, group="model")
        slopes = mean_slopes(part)
        by_item = part.groupby("item").agg(
            score=("value", "mean"), n=("value", "size"), model=("model", "first")
        )
        groups = {m: g for m, g in by_item.groupby("model", sort=True)}
        ref = groups.get(reference) if reference else None
        for model, g in groups.items():
            est = crossed_mean(g["score"], slopes, effects, weights=g["n"], level=level)
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
                )
                row.update(diff=diff.value, diff_low=diff.low, diff_high=diff.high, p=diff.p)
            rows.append(row)
    table = pd.DataFrame(rows).reindex(columns=MEAN_COLUMNS)
    table["p_holm"] = holm(table["p"].to_numpy(dtype=float))
    table["better"] = (table["p_holm"] < alpha) & (table["diff"] > 0)
    return table
