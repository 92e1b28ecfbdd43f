"""Two-way (units x raters) intervals for agreement: the pigeonhole bootstrap.

In a crowd study the same workers rate many units, so a bootstrap that resamples units alone
treats each worker's habits (leniency, taste, a favourite label) as fixed and its interval is
too narrow (issue #33: Fleiss' kappa 27-30% coverage with a pool of 8-20 workers). The
pigeonhole bootstrap (Owen, 2007) resamples units (or the clusters that hold them: a
dialogue's utterances) and raters independently with replacement; a judgment (u, r) enters a
resample with multiplicity C_u * W_r. Owen shows it is mildly conservative, and McCullagh
(2000) that no bootstrap of a crossed design is exact (docs/statistics.md, "Two-way
intervals").

A rater drawn twice sits twice in each of its units: the copies are not a pair (a pair of a
rater with itself would agree by construction), so every pair statistic here counts only
pairs of distinct original raters, weighted W_r W_s. With all weights 1 each statistic is
exactly the usual one. Everything is a function of per-unit weighted counts a_uc = sum_r W_r
[y_ur = c] and self-weights s_uc = sum_r W_r^2 [y_ur = c], one sparse product per chunk of
resamples: O(judgments x resamples) in all.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import pandas as pd
from scipy import sparse

from evalstats.agreement import limits
from evalstats.agreement.alpha import _metric
from evalstats.agreement.coding import COLUMNS, Level, _codes
from evalstats.options import INTERVALS

TWO_WAY = "two-way bootstrap, items × raters (pigeonhole, corrected)"
UNITS = "bootstrap over items"
# A rater on 1.5 units (clusters) or fewer on average is mostly a fresh rater: the rater
# dimension then repeats the unit dimension and resampling both counts its noise twice.
REPEAT_RULE = 1.5
# Above this many distinct values the V x V coincidences per resample are not worth it.
MAX_VALUES = 64
# Resamples per variance part: the interval is value -/+ t sd, and an sd from 250 draws is
# within about 4.5% (1 / sqrt(2 x 249)) of its limit; more only costs time, which grows with
# judgments x resamples (10^5 judgments: 10.7 s at 1,000 draws per part, 2.7 s at 250).
VARIANCE_DRAWS = 250
# Raters left out one at a time by the jackknife up to this many, else in this many groups.
JACKKNIFE_GROUPS = 200


def units_per_rater(units: np.ndarray, raters: np.ndarray) -> float:
    """Return the mean number of distinct units (or clusters) per rater."""
    pairs = pd.DataFrame({"u": units, "r": raters}).drop_duplicates()
    return float(len(pairs) / max(pairs["r"].nunique(), 1))


def two_way_chosen(units: np.ndarray, raters: np.ndarray, interval: str) -> bool:
    """Return whether ``interval`` ("auto", "two-way", "units") means the two-way bootstrap:
    "auto" chooses it when raters repeat (more than ``REPEAT_RULE`` units each on average)."""
    if interval not in INTERVALS:
        raise ValueError(f"interval must be one of {INTERVALS}, got {interval!r}")
    if interval == "auto":
        return units_per_rater(units, raters) > REPEAT_RULE
    return interval == "two-way"


@dataclass(frozen=True)
class Cells:
    """Judgments coded for the pigeonhole bootstrap: per judgment its unit, rater, value."""

    unit: np.ndarray  # unit (item) code of each judgment, 0..n_units-1
    cluster_of_unit: np.ndarray  # the resampled cluster of each unit (itself by default)
    rater: np.ndarray
    code: np.ndarray  # value code, 0..n_values-1, into ``values``
    values: np.ndarray
    n_raters: int

    @property
    def n_units(self) -> int:
        return len(self.cluster_of_unit)

    @property
    def n_clusters(self) -> int:
        return int(self.cluster_of_unit.max()) + 1 if len(self.cluster_of_unit) else 0


def cells_code(data: pd.DataFrame, level: str = "nominal", cluster: str | None = None) -> Cells:
    """Code a long DataFrame (``item``, ``rater``, ``value``, optionally ``cluster``)."""
    missing = set(COLUMNS) - set(data.columns)
    if missing:
        raise ValueError(f"judgments need columns {COLUMNS}; missing {sorted(missing)}")
    data = data[data["value"].notna()]
    # Sorted codes: the same judgments in any row order (or layout) get the same resamples.
    unit, _ = _factorize(data["item"])
    rater, raters = _factorize(data["rater"])
    values, code = _codes(data["value"].to_numpy(), level)
    if cluster is None:
        of_unit = np.arange(int(unit.max()) + 1 if len(unit) else 0)
    else:
        clusters, _ = pd.factorize(data[cluster])
        of_unit = np.zeros(int(unit.max()) + 1 if len(unit) else 0, dtype=np.intp)
        of_unit[unit] = clusters
    return Cells(unit, of_unit, rater, code, np.asarray(values), len(raters))


def _factorize(ids: pd.Series) -> tuple[np.ndarray, pd.Index]:
    try:
        return pd.factorize(ids, sort=True)
    except TypeError:  # ids of mixed types: first-seen order
        return pd.factorize(ids)


def _counts(cells: Cells, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return a (units, V, b) weighted counts and s (units, V, b) self-weights of b resamples
    whose rater multiplicities are the columns of ``w`` (raters x b)."""
    v = len(cells.values)
    rows = cells.unit * v + cells.code
    shape = (cells.n_units * v, cells.n_raters)
    s = sparse.csr_matrix((np.ones(len(rows)), (rows, cells.rater)), shape=shape)
    b = w.shape[1]
    a = np.asarray(s @ w).reshape(cells.n_units, v, b)
    self_w = np.asarray(s @ (w * w)).reshape(cells.n_units, v, b)
    return a, self_w


Statistic = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]


def _pairs(a: np.ndarray, self_w: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per unit and resample: M (values), T (weight of distinct-rater pairs), pairable."""
    m = a.sum(axis=1)
    t = m * m - self_w.sum(axis=1)
    ok = (t > 1e-9) & (c > 0)
    return m, t, ok


def percent_statistic(a: np.ndarray, self_w: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Mean over pairable units (weight C_u) of the share of distinct-rater pairs that agree."""
    m, t, ok = _pairs(a, self_w, c)
    share = np.divide((a * a - self_w).sum(axis=1), t, out=np.zeros_like(t), where=ok)
    weight = np.where(ok, c, 0.0)
    return (weight * share).sum(axis=0) / weight.sum(axis=0)


def fleiss_statistic(a: np.ndarray, self_w: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Fleiss' kappa generalised to weights: P-bar as in ``percent_statistic``, chance from
    the weighted share of each category among the pairable units' values."""
    m, t, ok = _pairs(a, self_w, c)
    share = np.divide((a * a - self_w).sum(axis=1), t, out=np.zeros_like(t), where=ok)
    weight = np.where(ok, c, 0.0)
    p_bar = (weight * share).sum(axis=0) / weight.sum(axis=0)
    p = (a * weight[:, None, :]).sum(axis=0) / (weight * m).sum(axis=0)
    p_e = (p * p).sum(axis=0)
    return np.where(p_e < 1.0 - 1e-12, (p_bar - p_e) / (1.0 - p_e), np.nan)


def alpha_statistic(level: str, values: np.ndarray) -> Statistic:
    """Return Krippendorff's alpha at ``level`` as a function of weighted counts.

    The coincidences are o_ck = sum_u g_u (a_uc a_uk - [c = k] s_uc), g_u = C_u M_u / T_u:
    each unit weighs its values, spread over its distinct-rater pairs (1 / (m_u - 1) when
    every weight is 1); alpha = 1 - (n - 1) sum o delta / sum n_c n_k delta, the metric of
    the resample's own marginals at the ordinal level.
    """

    def stat(a: np.ndarray, self_w: np.ndarray, c: np.ndarray) -> np.ndarray:
        m, t, ok = _pairs(a, self_w, c)
        g = np.divide(c * m, t, out=np.zeros_like(t), where=ok)
        n_c = (g[:, None, :] * (a * m[:, None, :] - self_w)).sum(axis=0).T  # (b, V)
        n = n_c.sum(axis=1)
        if level == "nominal":
            observed = (g * (m * m - (a * a).sum(axis=1))).sum(axis=0)
            expected = n * n - (n_c * n_c).sum(axis=1)
        elif level == "interval":
            x = values.astype(float)
            x = x - x.mean()
            s1 = np.einsum("uvb,v->ub", a, x)
            s2 = np.einsum("uvb,v->ub", a, x * x)
            observed = (g * 2.0 * (m * s2 - s1 * s1)).sum(axis=0)
            mean = (n_c @ x) / n
            expected = 2.0 * n * (n_c * (x[None, :] - mean[:, None]) ** 2).sum(axis=1)
        else:
            q = np.einsum("ub,ucb,ukb->bck", g, a, a)
            if level == "ordinal":
                mid = np.cumsum(n_c, axis=1) - n_c / 2.0
                delta = (mid[:, :, None] - mid[:, None, :]) ** 2
            else:
                codes = np.arange(len(values))
                fixed = _metric(level, values, np.zeros(len(values)))(codes[:, None], codes)
                delta = np.broadcast_to(fixed, q.shape)
            observed = (q * delta).sum(axis=(1, 2))
            expected = np.einsum("bc,bck,bk->b", n_c, delta, n_c)
        return 1.0 - (n - 1.0) * observed / expected

    return stat


def _draws(rng: np.random.Generator, n: int, b: int) -> np.ndarray:
    """Return n x b multiplicities: each column n draws with replacement from n."""
    picks = rng.integers(0, n, size=(b, n)) + (np.arange(b) * n)[:, None]
    return np.bincount(picks.ravel(), minlength=b * n).reshape(b, n).T.astype(float)


def resampled(
    cells: Cells,
    stat: Statistic,
    *,
    n_boot: int,
    seed: int | None,
    raters: bool = True,
    units: bool = True,
) -> np.ndarray:
    """Return ``stat`` of ``n_boot`` pigeonhole resamples (clusters x raters), NaN where
    undefined; with ``raters=False`` (``units=False``) the raters (clusters) keep weight 1."""
    rng = np.random.default_rng(seed)
    n_cl, n_r = cells.n_clusters, cells.n_raters
    per = max(cells.n_units * len(cells.values), 1)
    chunk = max(1, min(n_boot, limits.CHUNK_ELEMENTS // per))
    out = []
    for start in range(0, n_boot, chunk):
        b = min(chunk, n_boot - start)
        clusters = _draws(rng, n_cl, b) if units else np.ones((n_cl, b))
        w = _draws(rng, n_r, b) if raters else np.ones((n_r, b))
        a, self_w = _counts(cells, w)
        with np.errstate(divide="ignore", invalid="ignore"):
            out.append(stat(a, self_w, clusters[cells.cluster_of_unit]))
    boot = np.concatenate(out)
    boot[~np.isfinite(boot)] = np.nan
    return boot


class TwoWayVariance(NamedTuple):
    """The two-way variance of a statistic, its degrees of freedom and the pigeonhole draws."""

    variance: float
    df: float
    draws: np.ndarray


def corrected_variance(
    cells: Cells, stat: Statistic, *, n_boot: int, seed: int | None, jackknife: bool = False
) -> TwoWayVariance:
    """Return the two-way variance 2 V_units + 2 V_raters - V_pigeonhole, its degrees of
    freedom and the pigeonhole draws (docs/statistics.md, "Two-way intervals").

    For a linear statistic of cells y = a_i + b_j + e_ij the pigeonhole bootstrap's variance
    counts the cells' own noise three times, each one-way bootstrap once, the truth once
    (Owen, 2007), so this combination is unbiased; it is never below either one-way variance
    (each is a part of the truth). Its units' and raters' shares are then scaled by G / (G - 1)
    (a bootstrap's plug-in variance over G clusters is (G - 1) / G of the unbiased one), and
    the degrees of freedom are Satterthwaite's (1946) of the two shares, G - 1 each: with a
    pool of 8 raters the rater share is known only to 7 degrees of freedom. G is Kish's
    effective number of units (raters) from their numbers of judgments (``_effective``).

    With ``jackknife`` the raters' share is set to the delete-a-rater jackknife's level
    (``rater_jackknife``) instead of the bootstrap's: for Fleiss' kappa, whose chance term and
    pairs make it a ratio of U-statistics in the raters, the rater bootstrap's variance was
    0.67 of the Monte-Carlo variance with a pool of 20 (docs/statistics.md).
    """
    return corrected_variances(cells, stat, n_boot=n_boot, seed=seed, jackknife=jackknife)[0]


def corrected_variances(
    cells: Cells, stat: Statistic, *, n_boot: int, seed: int | None, jackknife: bool = False
) -> list[TwoWayVariance]:
    """Return ``corrected_variance`` of each column of a statistic of several columns (the
    share of each label), from one set of resamples; a 1-D statistic is one column."""
    n_boot = min(n_boot, VARIANCE_DRAWS)
    rng = np.random.default_rng(seed)
    seeds = rng.integers(1 << 62, size=4)
    both = resampled(cells, stat, n_boot=n_boot, seed=int(seeds[0]))
    by_unit = resampled(cells, stat, n_boot=n_boot, seed=int(seeds[1]), raters=False)
    by_rater = resampled(cells, stat, n_boot=n_boot, seed=int(seeds[2]), units=False)
    sizes = (
        _effective(np.bincount(cells.cluster_of_unit[cells.unit])),
        _effective(np.bincount(cells.rater)),
    )
    draws = both.reshape(len(both), -1)
    parts = [x.reshape(len(x), -1) for x in (both, by_unit, by_rater)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a column undefined in every draw
        v_both, v_unit, v_rater = (np.nanvar(x, axis=0, ddof=1) for x in parts)
    v_jack = (
        rater_jackknife(cells, stat, seed=int(seeds[3]))
        if jackknife
        else np.full(draws.shape[1], np.nan)
    )
    out = []
    for k in range(draws.shape[1]):
        three = (float(v_both[k]), float(v_unit[k]), float(v_rater[k]))
        variance, df = _combined(three, float(v_jack[k]), sizes)
        out.append(TwoWayVariance(variance, df, both if both.ndim == 1 else draws[:, k]))
    return out


def _combined(
    three: tuple[float, float, float], v_jack: float, sizes: tuple[float, float]
) -> tuple[float, float]:
    """Return the corrected variance and its Satterthwaite degrees of freedom from the three
    bootstrap variances (pigeonhole, units, raters), the raters' jackknife variance (NaN:
    none) and the effective numbers of units and raters (``corrected_variance``)."""
    v_both, v_unit, v_rater = three
    total = max(2.0 * (v_unit + v_rater) - v_both, v_unit, v_rater)
    if not np.isfinite(total) or v_unit + v_rater <= 0:
        return total, float("inf")
    g_u, g_r = sizes
    part_u = total * v_unit / (v_unit + v_rater) * g_u / (g_u - 1.0)
    # The jackknife is unbiased where the plug-in bootstrap is (G - 1) / G of the truth, so it
    # replaces both the bootstrap's level and the G / (G - 1) scaling of the raters' share.
    jack = np.isfinite(v_jack) and v_jack > 0 and v_rater > 0
    scale = v_jack / v_rater if jack else g_r / (g_r - 1.0)
    part_r = total * v_rater / (v_unit + v_rater) * scale
    df = (part_u + part_r) ** 2 / (part_u**2 / (g_u - 1.0) + part_r**2 / (g_r - 1.0))
    return part_u + part_r, float(df)


def rater_jackknife(cells: Cells, stat: Statistic, *, seed: int | None) -> np.ndarray:
    """Return the delete-a-group jackknife variance over raters of each column of ``stat``.

    Each rater is its own group up to ``JACKKNIFE_GROUPS`` raters, beyond that the raters are
    dealt at random into that many groups (Kish & Frankel, 1974). The jackknife variance is
    never below the truth on average for any symmetric statistic of independent raters (Efron
    & Stein, 1981), where the bootstrap's can be well below it for a ratio of pair sums.
    """
    n_r = cells.n_raters
    groups = min(n_r, JACKKNIFE_GROUPS)
    group_of = np.random.default_rng(seed).permutation(n_r) % groups
    per = max(cells.n_units * len(cells.values), 1)
    chunk = max(1, min(groups, limits.CHUNK_ELEMENTS // per))
    out = []
    for start in range(0, groups, chunk):
        left_out = np.arange(start, min(start + chunk, groups))
        w = (group_of[:, None] != left_out[None, :]).astype(float)
        a, self_w = _counts(cells, w)
        with np.errstate(divide="ignore", invalid="ignore"):
            out.append(stat(a, self_w, np.ones((cells.n_units, len(left_out)))))
    loo = np.concatenate(out).reshape(groups, -1)
    loo[~np.isfinite(loo)] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        spread = np.nansum((loo - np.nanmean(loo, axis=0)) ** 2, axis=0)
        return np.where(groups > 1, (groups - 1.0) / groups * spread, np.nan)


def _effective(sizes: np.ndarray) -> float:
    """Return Kish's (1965) effective number of clusters of these sizes, at least 2: a pool
    where two workers did most of the work is nearer two workers than twenty."""
    sizes = sizes.astype(float)
    return max(float(sizes.sum() ** 2 / (sizes * sizes).sum()), 2.0)


def full_weights(cells: Cells, stat: Statistic) -> float:
    """Return ``stat`` with every weight 1: the statistic of the data themselves."""
    a, self_w = _counts(cells, np.ones((cells.n_raters, 1)))
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(stat(a, self_w, np.ones((cells.n_units, 1)))[0])


def statistic_for(kind: str, level: Level, values: np.ndarray) -> Statistic:
    """Return the weighted statistic of ``kind`` ("alpha", "percent", "fleiss")."""
    if kind == "alpha":
        return alpha_statistic(level, values)
    return percent_statistic if kind == "percent" else fleiss_statistic


def label_rate_statistic(cells: Cells, threshold: int | None = None) -> Statistic:
    """Return the share of units whose label by EmotionLines' rule is each value, and last the
    share with none (the fallback), as a function of weighted counts: (resamples, V + 1).

    A unit's label is the value with more than half its weighted votes M_u (``threshold``:
    at least threshold x M_u / m_u, m_u its votes, and no other value as many); a rater drawn
    twice votes twice, one not drawn not at all, as the resampled crowd would have labelled
    it. Units are weighted C_u; units left without votes are left out. With every weight 1
    these are exactly ``aggregation.emotionlines_labels``' shares.
    """
    votes = np.bincount(cells.unit, minlength=cells.n_units).astype(float)[:, None]

    def stat(a: np.ndarray, self_w: np.ndarray, c: np.ndarray) -> np.ndarray:
        m = a.sum(axis=1)
        top = a.max(axis=1)
        if threshold is None:
            won = top > m / 2.0
        else:
            unique = (a == top[:, None, :]).sum(axis=1) == 1
            won = unique & (top >= threshold * m / np.maximum(votes, 1.0) - 1e-9)
        weight = np.where(m > 0, c, 0.0)
        chosen = (a == top[:, None, :]) & (won & (m > 0))[:, None, :]
        shares = (chosen * weight[:, None, :]).sum(axis=0) / weight.sum(axis=0)
        return np.vstack([shares, 1.0 - shares.sum(axis=0)[None, :]]).T

    return stat
