"""Krippendorff's alpha (2011), its coincidence matrix, and pairwise percent agreement."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
from scipy import sparse

from evalstats.agreement import limits
from evalstats.agreement.coding import Level, Ratings, _Coded, _encode, _undefined


def _coincidences(c: _Coded) -> np.ndarray | sparse.coo_matrix:
    """Build o_ck = sum_u (n_uc n_uk - [c=k] n_uc) / (m_u - 1) from per-unit bincounts."""
    w = 1.0 / (c.m - 1.0)
    if isinstance(c.counts, np.ndarray) and c.n_values <= limits.DENSE_VALUES:
        v = c.n_values
        counts = np.empty((c.n_units, v + 1))
        counts[:, :v] = c.counts
        counts[:, v] = 1.0  # its row of the product is sum_u w_u n_uc, the diagonal term
        product = counts.T @ (counts[:, :v] * w[:, None])
        o = product[:v]
        o[np.diag_indices_from(o)] -= product[v]
        return o
    counts = sparse.csr_matrix(c.counts)
    o = counts.T @ sparse.diags(w) @ counts
    return (o - sparse.diags(np.asarray(counts.T @ w).ravel())).tocoo()


def _metric(level: str, values: np.ndarray, n_c: np.ndarray) -> Callable[..., np.ndarray]:
    """Return delta^2(c, k) on value codes for the level (Krippendorff 2011, section D)."""
    if level == "nominal":
        return lambda a, b: (a != b).astype(float)
    v = values.astype(float)
    if level == "ratio":

        def ratio(a: np.ndarray, b: np.ndarray) -> np.ndarray:
            s = v[a] + v[b]
            d = np.divide(v[a] - v[b], s, out=np.zeros(np.broadcast(a, b).shape), where=s != 0)
            return d * d

        return ratio
    # Ordinal: delta_ck = sum_{g=c..k} n_g - (n_c + n_k)/2, i.e. the difference of mid-ranks
    # N_c - n_c/2 of the pairable values, so it is the interval metric on those mid-ranks.
    x = v if level == "interval" else np.cumsum(n_c) - n_c / 2.0
    return lambda a, b: (x[a] - x[b]) ** 2


def _expected_sum(level: str, values: np.ndarray, n_c: np.ndarray) -> float:
    """Return sum_ck n_c n_k delta^2_ck, in closed form where the level allows it."""
    n = n_c.sum()
    if level == "nominal":
        return float(n * n - (n_c * n_c).sum())
    if level in ("interval", "ordinal"):
        x = values.astype(float) if level == "interval" else np.cumsum(n_c) - n_c / 2.0
        centred = x - (n_c * x).sum() / n  # centring keeps large values from cancelling
        return float(2.0 * n * (n_c * centred * centred).sum())
    delta2, codes, total = _metric(level, values, n_c), np.arange(len(n_c)), 0.0
    step = max(1, limits.DENSE_CELLS // max(len(n_c), 1))
    for start in range(0, len(n_c), step):  # blocks of rows bound memory for many values
        rows = codes[start : start + step]
        total += float(n_c[rows] @ delta2(rows[:, None], codes[None, :]) @ n_c)
    return total


def coincidence_matrix(data: Ratings) -> pd.DataFrame:
    """Return Krippendorff's coincidence matrix of the pairable values, labelled by value."""
    c = _encode(data, "nominal")
    o = _coincidences(c)
    dense = o if isinstance(o, np.ndarray) else o.toarray()
    used = dense.sum(axis=1) > 0  # drop values of a numeric span that nobody used
    return pd.DataFrame(dense[used][:, used], index=c.values[used], columns=c.values[used])


def krippendorff_alpha(data: Ratings, level: Level = "nominal") -> float:
    """Compute Krippendorff's alpha for any number of raters, missing values and 4 levels.

    ``data`` is a long DataFrame (``item``, ``rater``, ``value``) or a raters x items array
    with NaN for missing. Units with fewer than two values are ignored. Returns NaN with an
    ``AgreementUndefinedWarning`` when no unit has two values or all pairable values are equal.
    """
    c = _encode(data, level)
    if c.n_units == 0:
        return _undefined("alpha is undefined: no unit has two or more values")
    o = _coincidences(c)
    # The coincidence matrix's marginals are the value frequencies n_c (whole numbers).
    n_c = np.rint(np.asarray(o.sum(axis=1)).ravel())
    expected = _expected_sum(level, c.values, n_c)
    if expected == 0:
        return _undefined("alpha is undefined: all pairable values are equal (no variation)")
    delta2 = _metric(level, c.values, n_c)
    if isinstance(o, np.ndarray):
        codes = np.arange(c.n_values)
        observed = float((o * delta2(codes[:, None], codes[None, :])).sum())
    else:
        observed = float((o.data * delta2(o.row, o.col)).sum())
    return 1.0 - (n_c.sum() - 1.0) * observed / expected


def percent_agreement(data: Ratings) -> float:
    """Return pairwise percent agreement: agreeing rating pairs per item, averaged over items.

    For each item with two or more ratings, the share of its m(m-1)/2 pairs of ratings that
    agree; the mean over those items (Fleiss' P-bar when every item has the same raters).
    """
    c = _encode(data, "nominal")
    if c.n_units == 0:
        return _undefined("percent agreement is undefined: no item has two or more ratings")
    return float(np.mean(_pair_agreement(c)))


def _pair_agreement(c: _Coded) -> np.ndarray:
    """Return each pairable unit's share of agreeing pairs, sum_c n_uc(n_uc - 1) / m(m - 1)."""
    cells = sparse.coo_matrix(c.counts)
    same = np.bincount(cells.row, weights=cells.data * (cells.data - 1.0), minlength=c.n_units)
    return same / (c.m * (c.m - 1.0))
