"""Percentile bootstrap intervals over resampled items (and raters), fast where it can be.

A resample of items is drawn as multiplicities of item "patterns" (items with equal additive
features are interchangeable), and the statistic of a whole chunk of resamples is one matrix
product of multiplicities and features (docs/statistics.md, "Fast path"). When raters repeat
across items, ``krippendorff_alpha_ci`` and ``percent_agreement_ci`` resample the raters too
by default (``twoway``, the pigeonhole bootstrap; ``interval`` names the choice).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from typing import Any, TypeAlias

import numpy as np
import pandas as pd
from scipy import sparse, stats

from evalstats.agreement import limits, twoway
from evalstats.agreement.alpha import (
    _metric,
    _pair_agreement,
    krippendorff_alpha,
    percent_agreement,
)
from evalstats.agreement.coding import (
    AgreementUndefinedWarning,
    Estimate,
    Level,
    Ratings,
    _Coded,
    _encode,
)
from evalstats.agreement.kappa import _fleiss_from_sums, _fleiss_table, fleiss_kappa
from evalstats.options import report_options


def _percentile(stats: np.ndarray, value: float, ci: float) -> Estimate:
    ok = stats[~np.isnan(stats)]
    if len(ok) < len(stats):
        warnings.warn(
            f"{len(stats) - len(ok)} of {len(stats)} resamples had an undefined statistic and "
            "were left out of the interval",
            AgreementUndefinedWarning,
            stacklevel=3,
        )
    if len(ok) == 0:
        return Estimate(value, float("nan"), float("nan"))
    low, high = np.quantile(ok, [(1.0 - ci) / 2.0, (1.0 + ci) / 2.0])
    return Estimate(value, float(low), float(high))


def _check_boot(n_boot: int, ci: float) -> None:
    if n_boot < 1:
        raise ValueError(f"n_boot must be at least 1, got {n_boot}")
    if not 0.0 < ci < 1.0:
        raise ValueError(f"ci must lie strictly between 0 and 1, got {ci}")


def _compress(features: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return the distinct rows of per-item features and each item's row ("pattern")."""
    patterns, pattern_of = np.unique(features, axis=0, return_inverse=True)
    return patterns, pattern_of.ravel()


def _resampled_sums(
    patterns: np.ndarray, pattern_of: np.ndarray, n_boot: int, seed: int | None
) -> Iterator[np.ndarray]:
    """Yield, chunk by chunk, the feature sums of ``n_boot`` resamples of the items.

    Items with the same pattern are interchangeable, so when patterns repeat a lot their
    multiplicities are drawn directly: a multinomial over patterns with the observed
    frequencies has the same law as drawing items with replacement and grouping them.
    """
    n_items, n_pat = len(pattern_of), len(patterns)
    rng = np.random.default_rng(seed)
    by_item = n_pat * 8 > n_items  # few repeats: drawing items is the cheaper way
    chunk = max(1, limits.CHUNK_ELEMENTS // (n_items if by_item else n_pat))
    freq = np.bincount(pattern_of, minlength=n_pat) / n_items
    for start in range(0, n_boot, chunk):
        b = min(chunk, n_boot - start)
        if by_item:
            draws = pattern_of[rng.integers(0, n_items, size=(b, n_items))]
            draws += (np.arange(b) * n_pat)[:, None]
            mult = np.bincount(draws.ravel(), minlength=b * n_pat).reshape(b, n_pat)
        else:
            mult = rng.multinomial(n_items, freq, size=b)
        yield mult @ patterns


_Prepared: TypeAlias = tuple[np.ndarray, np.ndarray, Callable[[np.ndarray], np.ndarray]]


def _interval_features(c: _Coded) -> _Prepared:
    m, cells = c.m.astype(float), sparse.coo_matrix(c.counts)
    n_c = np.bincount(cells.col, weights=cells.data, minlength=c.n_values)
    x = c.values.astype(float)
    x = x - (n_c @ x) / n_c.sum()  # centring keeps the moment sums from cancelling
    s1 = np.bincount(cells.row, weights=cells.data * x[cells.col], minlength=c.n_units)
    s2 = np.bincount(cells.row, weights=cells.data * x[cells.col] ** 2, minlength=c.n_units)
    dev = x[cells.col] - (s1 / m)[cells.row]
    ss = np.bincount(cells.row, weights=cells.data * dev * dev, minlength=c.n_units)
    features = np.zeros((c.n_items, 4))
    # Over the ordered pairs of a unit, sum (x_i - x_j)^2 = 2 m SS_u (SS: squares about mean).
    features[c.item_of_unit] = np.column_stack([2.0 * m * ss / (m - 1.0), m, s1, s2])

    def interval(s: np.ndarray) -> np.ndarray:
        n = s[:, 1]
        return 1.0 - (n - 1.0) * s[:, 0] / (2.0 * (n * s[:, 3] - s[:, 2] ** 2))

    return *_compress(features), interval


def _alpha_features(c: _Coded, level: str) -> _Prepared | None:
    """Return per-pattern additive features, each item's pattern, and alpha of feature sums.

    Alpha of any resample of items is a function of sums over its items of these features, so
    a resample costs one matrix product instead of a recomputation from the judgments. Returns
    None when the features would not fit in memory (then the caller recomputes per resample).
    """
    if level == "interval":
        return _interval_features(c)
    n_uc = c.counts
    if sparse.issparse(n_uc) or c.n_items * c.n_values > limits.DENSE_CELLS:
        return None
    per_item = np.zeros((c.n_items, c.n_values))
    per_item[c.item_of_unit] = n_uc
    counts, pattern_of = _compress(per_item)
    m = counts.sum(axis=1)
    w = np.divide(1.0, m - 1.0, out=np.zeros_like(m), where=m >= 2)
    v = c.n_values
    if level == "ordinal":
        if len(counts) * v * v > limits.DENSE_CELLS:
            return None
        # The ordinal metric depends on each resample's own marginals: keep the whole per-unit
        # coincidence contribution (V x V) so every resample gets its own metric.
        outer = counts[:, :, None] * counts[:, None, :] - counts[:, :, None] * np.eye(v)
        features = (outer * w[:, None, None]).reshape(len(counts), -1)

        def ordinal(s: np.ndarray) -> np.ndarray:
            o = s.reshape(len(s), v, v)
            nc = o.sum(axis=2)
            n = nc.sum(axis=1)
            mid = np.cumsum(nc, axis=1) - nc / 2.0
            obs = (o * (mid[:, :, None] - mid[:, None, :]) ** 2).sum(axis=(1, 2))
            centred = mid - ((nc * mid).sum(axis=1) / n)[:, None]
            return 1.0 - (n - 1.0) * obs / (2.0 * n * (nc * centred * centred).sum(axis=1))

        return features, pattern_of, ordinal
    codes = np.arange(v)
    delta2 = _metric(level, c.values, np.zeros(v))(codes[:, None], codes[None, :])
    observed = ((counts @ delta2) * counts).sum(axis=1) * w  # delta_cc = 0: no diagonal term

    def fixed_metric(s: np.ndarray) -> np.ndarray:
        nc = s[:, 1:]
        expected = np.einsum("bi,ij,bj->b", nc, delta2, nc)
        return 1.0 - (nc.sum(axis=1) - 1.0) * s[:, 0] / expected

    return np.column_stack([observed, counts]), pattern_of, fixed_metric


def _feature_bootstrap(
    prepared: _Prepared, value: float, n_boot: int, ci: float, seed: int | None
) -> Estimate:
    patterns, pattern_of, stat = prepared
    with np.errstate(divide="ignore", invalid="ignore"):
        parts = [stat(s) for s in _resampled_sums(patterns, pattern_of, n_boot, seed)]
    stats = np.concatenate(parts)
    stats[~np.isfinite(stats)] = np.nan  # 0/0 resamples (no variation) are undefined
    return _percentile(stats, value, ci)


def bootstrap_ci(
    statistic: Callable[[Any], float],
    data: Ratings,
    *,
    n_boot: int = 1000,
    ci: float = 0.95,
    seed: int | None = 0,
    item_axis: int = 0,
) -> Estimate:
    """Bootstrap a percentile confidence interval for ``statistic`` by resampling items.

    A long DataFrame is resampled by its ``item`` column (a drawn item keeps all its rows and
    each copy becomes a distinct item); an array along ``item_axis`` (0 for a Fleiss table,
    1 for a raters x items array). Resamples whose statistic is undefined are left out, with a
    warning. This recomputes the statistic per resample; the ``*_ci`` wrappers are much faster.
    """
    _check_boot(n_boot, ci)
    rng = np.random.default_rng(seed)
    value = float(statistic(data))
    stats = np.empty(n_boot)
    if isinstance(data, pd.DataFrame):
        items, _ = pd.factorize(data["item"])
        n_items = int(items.max() + 1) if len(items) else 0
        order = np.argsort(items, kind="stable")
        sizes = np.bincount(items, minlength=n_items)
        starts = np.cumsum(sizes) - sizes
    else:
        data = np.asarray(data)
        n_items = data.shape[item_axis]
    if n_items == 0:
        raise ValueError("there are no items to resample")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AgreementUndefinedWarning)
        for b in range(n_boot):
            draw = rng.integers(0, n_items, size=n_items)
            if isinstance(data, pd.DataFrame):
                size = sizes[draw]
                within = np.arange(size.sum()) - np.repeat(np.cumsum(size) - size, size)
                sample = data.iloc[order[np.repeat(starts[draw], size) + within]].copy()
                sample["item"] = np.repeat(np.arange(n_items), size)
            else:
                sample = np.take(data, draw, axis=item_axis)
            stats[b] = statistic(sample)
    return _percentile(stats, value, ci)


def krippendorff_alpha_ci(
    data: Ratings,
    level: Level = "nominal",
    *,
    n_boot: int = 1000,
    ci: float = 0.95,
    seed: int | None = 0,
    interval: str | None = None,
) -> Estimate:
    """Return Krippendorff's alpha with a percentile bootstrap CI.

    ``interval`` (None: the report options'): "auto" resamples items and raters (the
    pigeonhole bootstrap, ``twoway``) when raters repeat across items, else items; "two-way"
    or "units" force one. ``interval_method`` names the one taken.
    """
    _check_boot(n_boot, ci)
    value = krippendorff_alpha(data, level)
    if np.isnan(value):
        return Estimate(value, float("nan"), float("nan"))
    cells = _two_way_cells(data, level, interval)
    if cells is not None and (
        level in ("nominal", "interval") or len(cells.values) <= twoway.MAX_VALUES
    ):
        stat = twoway.alpha_statistic(level, cells.values)
        return two_way_interval(cells, stat, value, n_boot=n_boot, ci=ci, seed=seed)
    prepared = _alpha_features(_encode(data, level), level)
    if prepared is None:  # many distinct values: fall back to recomputing per resample
        layout = 0 if isinstance(data, pd.DataFrame) else 1
        return bootstrap_ci(
            lambda d: krippendorff_alpha(d, level),
            data,
            n_boot=n_boot,
            ci=ci,
            seed=seed,
            item_axis=layout,
        )
    return _feature_bootstrap(prepared, value, n_boot, ci, seed)


def fleiss_kappa_ci(
    counts: pd.DataFrame | np.ndarray | list[list[int]],
    *,
    n_boot: int = 1000,
    ci: float = 0.95,
    seed: int | None = 0,
) -> Estimate:
    """Return Fleiss' kappa with a percentile bootstrap CI over resampled items (rows)."""
    _check_boot(n_boot, ci)
    value = fleiss_kappa(counts)
    table = _fleiss_table(counts)
    if np.isnan(value):
        return Estimate(value, float("nan"), float("nan"))
    n_items, n = len(table), float(table[0].sum())
    features = np.column_stack([(table * table).sum(axis=1), table])

    def stat(s: np.ndarray) -> np.ndarray:
        return _fleiss_from_sums(s[:, 0], s[:, 1:], n_items, n)

    return _feature_bootstrap((*_compress(features), stat), value, n_boot, ci, seed)


def percent_agreement_ci(
    data: Ratings,
    *,
    n_boot: int = 1000,
    ci: float = 0.95,
    seed: int | None = 0,
    interval: str | None = None,
) -> Estimate:
    """Return pairwise percent agreement with a percentile bootstrap CI: over items and
    raters (pigeonhole) or over items, by ``interval`` as in ``krippendorff_alpha_ci``."""
    _check_boot(n_boot, ci)
    value = percent_agreement(data)
    if np.isnan(value):
        return Estimate(value, float("nan"), float("nan"))
    cells = _two_way_cells(data, "nominal", interval)
    if cells is not None:
        return two_way_interval(
            cells, twoway.percent_statistic, value, n_boot=n_boot, ci=ci, seed=seed
        )
    c = _encode(data, "nominal")
    features = np.zeros((c.n_items, 2))
    features[c.item_of_unit] = np.column_stack([_pair_agreement(c), np.ones(c.n_units)])
    prepared = (*_compress(features), lambda s: s[:, 0] / s[:, 1])
    return _feature_bootstrap(prepared, value, n_boot, ci, seed)


def long_ratings(data: Ratings) -> pd.DataFrame:
    """Return ratings as a long DataFrame (``item``, ``rater``, ``value``), present values."""
    if isinstance(data, pd.DataFrame):
        return data
    arr = np.asarray(data)
    if arr.ndim != 2:
        raise ValueError(f"expected a raters x items array, got {arr.ndim} dimension(s)")
    rater, item = np.indices(arr.shape)
    flat = arr.ravel()
    present = ~pd.isna(flat)
    if flat.dtype.kind in "US":
        present &= flat != flat.dtype.type("nan")
    return pd.DataFrame(
        {"item": item.ravel()[present], "rater": rater.ravel()[present], "value": flat[present]}
    )


def interval_method(data: Ratings, interval: str | None = None) -> str:
    """Return the name of the interval ``krippendorff_alpha_ci`` and ``percent_agreement_ci``
    give ``data`` with ``interval`` (None: the report options'): what a report prints."""
    long = long_ratings(data)
    choice = report_options().interval if interval is None else interval
    if twoway.two_way_chosen(long["item"].to_numpy(), long["rater"].to_numpy(), choice):
        return twoway.TWO_WAY
    return twoway.UNITS


def _two_way_cells(data: Ratings, level: str, interval: str | None) -> twoway.Cells | None:
    """Return the coded judgments when ``interval`` chooses the two-way bootstrap, else None."""
    if interval_method(data, interval) != twoway.TWO_WAY:
        return None
    return twoway.cells_code(long_ratings(data), level)


def two_way_interval(
    cells: twoway.Cells,
    stat: twoway.Statistic,
    value: float,
    *,
    n_boot: int,
    ci: float,
    seed: int | None,
) -> Estimate:
    """Return ``value`` with the two-way interval: value -/+ t sd, variance and degrees of
    freedom ``twoway.corrected_variance``'s; resamples whose statistic is undefined are left
    out with a warning, as in the one-way bootstrap."""
    two = twoway.corrected_variance(cells, stat, n_boot=n_boot, seed=seed)
    if not np.isfinite(_percentile(two.draws, value, ci).low):
        return Estimate(value, float("nan"), float("nan"))
    half = float(stats.t.ppf(0.5 + ci / 2.0, two.df)) * np.sqrt(two.variance)
    return Estimate(value, value - half, value + half)
