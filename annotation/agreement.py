"""Measure inter-rater agreement: Krippendorff's alpha, Fleiss' and Cohen's kappa, % agreement.

Pure numpy/pandas, no ORM. ``docs/statistics.md`` states every formula, its conventions and its
sources. Two input layouts are accepted wherever ratings are: a long DataFrame with columns
``item``, ``rater``, ``value`` (one row per judgment), or a raters x items array with NaN (or
None) for a missing value; in a NumPy string array, the text "nan" (what ``np.asarray`` makes
of NaN among strings, and what the ``krippendorff`` package reads as missing).

Undefined is not invalid: malformed input raises ``ValueError``; a coefficient that is 0/0 on
well-formed data (no pairable values, a single category everywhere, one rater) returns NaN and
emits ``AgreementUndefinedWarning`` saying why, so a report over many campaigns shows "n/a"
instead of crashing, and nothing is NaN without a message.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple, TypeAlias

import numpy as np
import pandas as pd
from scipy import sparse

Level: TypeAlias = Literal["nominal", "ordinal", "interval", "ratio"]
Ratings: TypeAlias = pd.DataFrame | np.ndarray | list[list[Any]]
LEVELS: tuple[str, ...] = ("nominal", "ordinal", "interval", "ratio")
COLUMNS: tuple[str, str, str] = ("item", "rater", "value")

# Above these sizes the per-unit count matrix / coincidence matrix would not fit comfortably in
# memory as dense arrays, so sparse forms are used instead.
_DENSE_CELLS = 1 << 24
_DENSE_VALUES = 1024
# Elements of one chunk of bootstrap resamples (resamples x patterns): bounds peak memory.
_CHUNK_ELEMENTS = 1 << 22


class AgreementUndefinedWarning(RuntimeWarning):
    """Warn that a coefficient is undefined (0/0) on the given data, so NaN is returned."""


class Estimate(NamedTuple):
    """A point estimate with the bounds of its bootstrap percentile confidence interval."""

    value: float
    low: float
    high: float


def _undefined(reason: str) -> float:
    warnings.warn(reason, AgreementUndefinedWarning, stacklevel=3)
    return float("nan")


@dataclass(frozen=True)
class _Coded:
    """Per-unit value counts of the pairable units: what every coefficient here comes from."""

    values: np.ndarray  # sorted distinct pairable values; column k counts values[k]
    counts: np.ndarray | sparse.csr_matrix  # n_uc: pairable units x values (sparse if large)
    m: np.ndarray  # number of values in each pairable unit (m_u >= 2)
    n_items: int  # all items, pairable or not (what the bootstrap resamples)
    item_of_unit: np.ndarray  # item index (0..n_items-1) of each pairable unit

    @property
    def n_units(self) -> int:
        return len(self.m)

    @property
    def n_values(self) -> int:
        return len(self.values)


# Krippendorff: a unit with fewer than two values has no pairable value and is ignored.


def _long_values(data: pd.DataFrame, level: str) -> tuple[np.ndarray, Any, int]:
    missing = set(COLUMNS) - set(data.columns)
    if missing:
        raise ValueError(f"judgments need columns {COLUMNS}; missing {sorted(missing)}")
    items, _ = pd.factorize(data["item"])
    raters, _ = pd.factorize(data["rater"])
    if (items < 0).any() or (raters < 0).any():
        raise ValueError("item and rater ids must not be missing")
    n_raters = int(raters.max() + 1) if len(raters) else 1
    dup = pd.Series(items.astype(np.int64) * n_raters + raters).duplicated().to_numpy()
    if dup.any():
        pairs = data.loc[dup, ["item", "rater"]].head(5).to_records(index=False).tolist()
        raise ValueError(f"a rater judged an item more than once, e.g. (item, rater) = {pairs}")
    value = data["value"]
    if isinstance(value.dtype, pd.CategoricalDtype) and value.dtype.ordered and level == "ordinal":
        # An ordered categorical (a Likert scale by name) carries its order in its codes.
        value = pd.Series(value.cat.codes.to_numpy(), index=value.index).where(value.notna())
    present = value.notna().to_numpy()
    # Text stays in its (Arrow) array: pd.factorize codes it there without a Python object each.
    vals = value.array[present] if pd.api.types.is_string_dtype(value.dtype) else None
    if vals is None or isinstance(value.dtype, np.dtype):
        vals = value.to_numpy()[present]
    return items[present], vals, int(items.max() + 1) if len(items) else 0


def _array_values(arr: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    n_raters, n_items = arr.shape
    flat = arr.T.ravel()  # item-major: value k belongs to item k // n_raters
    present = ~np.isnan(flat) if flat.dtype.kind == "f" else ~pd.isna(flat)
    return np.flatnonzero(present) // n_raters, flat[present], n_items


def _small_int_counts(arr: np.ndarray, level: str) -> _Coded | None:
    """Count values per item straight from a numeric array of small whole numbers, or None.

    Likert scales and coded labels take this path: the present values are gathered once (a
    crowd's raters x items array is mostly missing) and counted with one bincount over
    item * span + value, no per-value index arrays.
    """
    if arr.dtype.kind not in "fiu" or arr.size == 0:
        return None
    n_raters, n_items = arr.shape
    flat = arr.ravel()  # rater-major: value k belongs to item k % n_items
    if arr.dtype.kind == "f":
        where = np.flatnonzero(~np.isnan(flat))
        if not len(where):
            return None
        vals = flat[where]
    else:
        where, vals = np.arange(flat.size), flat
    lo, hi = float(vals.min()), float(vals.max())
    if not hi - lo < _DENSE_VALUES or n_items * (hi - lo + 1) > _DENSE_CELLS:
        return None
    span = int(hi - lo) + 1
    if level == "ratio" and lo < 0:
        raise ValueError("ratio alpha needs non-negative values (a scale with an absolute 0)")
    shifted = vals - lo
    codes = shifted.astype(np.intp)
    if not np.array_equal(codes, shifted):
        return None
    codes += (where % n_items) * span
    table = np.bincount(codes, minlength=n_items * span).reshape(n_items, span)
    m = table.sum(axis=1)
    pairable = m >= 2
    # Values of the span that nobody used keep a zero column: they weigh nothing in any sum.
    counts = table if pairable.all() else table[pairable]
    values = (np.arange(span) + lo).astype(arr.dtype)
    return _Coded(values, counts, m[pairable], n_items, np.flatnonzero(pairable))


def _codes(vals: np.ndarray, level: str) -> tuple[np.ndarray, np.ndarray]:
    """Return the sorted distinct values and each value's index among them."""
    if level != "nominal":
        try:
            vals = np.asarray(vals, dtype=float)
        except (TypeError, ValueError):
            raise ValueError(f"{level} alpha needs numeric values") from None
        if level == "ratio" and (vals < 0).any():
            raise ValueError("ratio alpha needs non-negative values (a scale with an absolute 0)")
    codes, uniques = pd.factorize(vals)
    uniques = np.asarray(uniques)
    try:
        order = np.argsort(uniques, kind="stable")
    except TypeError:  # unorderable nominal labels: any order will do
        return uniques, codes
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return uniques[order], rank[codes]


def _factorize_labels(flat: np.ndarray) -> tuple[np.ndarray, Any]:
    """``pd.factorize`` for a 1-D object or NumPy string array; "nan" is missing in the latter.

    ASCII labels of up to 8 characters (A/B outcomes, emotion names) are factorized as the
    64-bit integers their bytes make, exactly and without a Python string per value.
    """
    if flat.dtype.kind not in "US" or flat.dtype.itemsize == 0 or not len(flat):
        return pd.factorize(flat)
    unit = np.uint32 if flat.dtype.kind == "U" else np.uint8
    width = flat.dtype.itemsize // np.dtype(unit).itemsize
    words = np.ascontiguousarray(flat).view(unit).reshape(len(flat), width)
    if width <= 8 and int(words.max()) < 128:
        # "nan" (missing; most of a crowd's raters x items array) is found column by column,
        # and only the present labels are packed and factorized.
        missing = np.ones(len(flat), dtype=bool)
        for j, char in enumerate("nan\0"[:width] if width > 3 else "nan"[:width]):
            missing &= words[:, j] == ord(char)
        if width < 3:
            missing[:] = False
        present = np.flatnonzero(~missing)
        packed = np.zeros((len(present), 8), dtype=np.uint8)
        packed[:, :width] = words[present]
        found, keys = pd.factorize(packed.view(np.uint64).ravel())
        codes = np.full(len(flat), -1, dtype=np.intp)
        codes[present] = found
        back = np.asarray(keys, dtype=np.uint64).view(np.uint8).reshape(-1, 8)[:, :width]
        return codes, np.ascontiguousarray(back.astype(unit)).view(flat.dtype).ravel()
    else:
        codes, uniques = pd.factorize(flat.astype(object))
        uniques = np.asarray(uniques, dtype=flat.dtype)
    missing = np.flatnonzero(uniques == ("nan" if flat.dtype.kind == "U" else b"nan"))
    if len(missing):
        keep = np.ones(len(uniques), dtype=bool)
        keep[missing] = False
        renumber = np.cumsum(keep) - 1
        renumber[missing] = -1
        codes, uniques = renumber[codes], uniques[keep]
    return codes, uniques


def _label_counts(
    item: np.ndarray, codes: np.ndarray, uniques: Any, n_items: int, level: str
) -> _Coded | None:
    """Count labels per item from their codes (``pd.factorize``), or None if too many cells.

    String labels (A/B outcomes, emotion names) take this path: each distinct label is
    compared, sorted and converted once, the rest is one bincount of integers. Labels seen
    only on unpairable items keep a zero column: they weigh nothing in any sum.
    """
    values, rank = _codes(np.asarray(uniques, dtype=object), level)
    v = len(values)
    if n_items * v > _DENSE_CELLS:
        return None
    m = np.bincount(item, minlength=n_items)
    pairable = m >= 2
    table = np.bincount(item * v + rank[codes], minlength=n_items * v).reshape(n_items, v)
    counts = table if pairable.all() else table[pairable]
    return _Coded(values, counts, m[pairable], n_items, np.flatnonzero(pairable))


def _encode(data: Ratings, level: str) -> _Coded:
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, got {level!r}")
    if isinstance(data, pd.DataFrame):
        item, vals, n_items = _long_values(data, level)
        if vals.dtype.kind in "OUS":
            codes, uniques = pd.factorize(vals)
            labels = _label_counts(item, codes, uniques, n_items, level)
            if labels is not None:
                return labels
    else:
        arr = np.asarray(data)
        if arr.ndim != 2:
            raise ValueError(f"expected a raters x items array, got {arr.ndim} dimension(s)")
        fast = _small_int_counts(arr, level)
        if fast is not None:
            return fast
        if arr.dtype.kind in "OUS":
            # Code the labels once; None and NaN (missing) get code -1, and so does "nan" in a
            # NumPy string array, where np.asarray has turned NaN into that text.
            codes, uniques = _factorize_labels(arr.ravel())  # rater-major: no transposed copy
            present = codes >= 0
            item = np.flatnonzero(present) % arr.shape[1]
            labels = _label_counts(item, codes[present], uniques, arr.shape[1], level)
            if labels is not None:
                return labels
        item, vals, n_items = _array_values(arr)
    m = np.bincount(item, minlength=n_items)
    pairable = m >= 2
    keep = pairable[item]
    unit = (np.cumsum(pairable) - 1)[item[keep]]
    values, code = _codes(vals[keep], level)
    n_units, n_values = int(pairable.sum()), len(values)
    if n_units * n_values <= _DENSE_CELLS:
        counts = np.bincount(unit * n_values + code, minlength=n_units * n_values)
        counts = counts.reshape(n_units, n_values)
    else:
        ones = np.ones(len(code))
        counts = sparse.csr_matrix((ones, (unit, code)), shape=(n_units, n_values))
    return _Coded(values, counts, m[pairable], n_items, np.flatnonzero(pairable))


def _coincidences(c: _Coded) -> np.ndarray | sparse.coo_matrix:
    """Build o_ck = sum_u (n_uc n_uk - [c=k] n_uc) / (m_u - 1) from per-unit bincounts."""
    w = 1.0 / (c.m - 1.0)
    if isinstance(c.counts, np.ndarray) and c.n_values <= _DENSE_VALUES:
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
    step = max(1, _DENSE_CELLS // max(len(n_c), 1))
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


def _fleiss_table(counts: pd.DataFrame | np.ndarray | list[list[int]]) -> np.ndarray:
    table = np.asarray(counts, dtype=float)
    if table.ndim != 2:
        raise ValueError("counts must be an items x categories table")
    if (table < 0).any() or not np.array_equal(table, np.round(table)):
        raise ValueError("counts must be non-negative whole numbers of raters")
    totals = table.sum(axis=1)
    if len(totals) and (totals != totals[0]).any():
        bad = np.flatnonzero(totals != totals[0])
        names = list(counts.index[bad]) if isinstance(counts, pd.DataFrame) else bad.tolist()
        raise ValueError(
            f"Fleiss' kappa needs the same number of raters on every item: row 0 has "
            f"{totals[0]:g}, rows {names[:10]} have {totals[bad][:10].tolist()}"
        )
    return table


def _fleiss_from_sums(sum_sq: np.ndarray, cat: np.ndarray, n_items: int, n: float) -> np.ndarray:
    p_bar = (sum_sq - n_items * n) / (n_items * n * (n - 1.0))
    p = cat / (n_items * n)
    p_e = (p * p).sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(p_e < 1.0, (p_bar - p_e) / (1.0 - p_e), np.nan)


def fleiss_kappa(counts: pd.DataFrame | np.ndarray | list[list[int]]) -> float:
    """Compute Fleiss' kappa (1971) from an items x categories table of rater counts.

    Every row must sum to the same number of raters (a ValueError names the rows that do not).
    Returns NaN with a warning when there are no items, fewer than two raters per item, or a
    single category used throughout (chance agreement is then 1).
    """
    table = _fleiss_table(counts)
    if table.shape[0] == 0:
        return _undefined("Fleiss' kappa is undefined: no items")
    n = float(table[0].sum())
    if n < 2:
        return _undefined("Fleiss' kappa is undefined: fewer than two raters per item")
    if np.count_nonzero(table.sum(axis=0)) < 2:
        return _undefined("Fleiss' kappa is undefined: a single category throughout")
    return float(_fleiss_from_sums((table * table).sum(), table.sum(axis=0), len(table), n))


def cohen_kappa(
    rater_a: Any, rater_b: Any, *, weights: Literal["linear", "quadratic"] | None = None
) -> float:
    """Compute Cohen's kappa between two raters' labels for the same items (in the same order).

    Pairs with a missing label are dropped. Weighted kappa weighs a disagreement by the distance
    of the two labels' positions in sorted label order (|i-j| or (i-j)^2), as scikit-learn does.
    """
    a, b = (
        pd.Series(np.asarray(rater_a, dtype=object)),
        pd.Series(np.asarray(rater_b, dtype=object)),
    )
    if len(a) != len(b):
        raise ValueError(f"the two raters judged {len(a)} and {len(b)} items; need the same")
    if weights not in (None, "linear", "quadratic"):
        raise ValueError(f"weights must be None, 'linear' or 'quadratic', got {weights!r}")
    both = (a.notna() & b.notna()).to_numpy()
    if not both.any():
        return _undefined("Cohen's kappa is undefined: no item has labels from both raters")
    labels, codes = _codes(np.concatenate([a[both].to_numpy(), b[both].to_numpy()]), "nominal")
    k, n = len(labels), int(both.sum())
    observed = np.bincount(codes[:n] * k + codes[n:], minlength=k * k).reshape(k, k) / n
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0))
    i, j = np.indices((k, k))
    w = {None: (i != j).astype(float), "linear": np.abs(i - j), "quadratic": (i - j) ** 2}[weights]
    chance = float((w * expected).sum())
    if chance == 0:
        return _undefined("Cohen's kappa is undefined: both raters used one and the same label")
    return 1.0 - float((w * observed).sum()) / chance


# --- bootstrap -------------------------------------------------------------------------------


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
    chunk = max(1, _CHUNK_ELEMENTS // (n_items if by_item else n_pat))
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
    if sparse.issparse(n_uc) or c.n_items * c.n_values > _DENSE_CELLS:
        return None
    per_item = np.zeros((c.n_items, c.n_values))
    per_item[c.item_of_unit] = n_uc
    counts, pattern_of = _compress(per_item)
    m = counts.sum(axis=1)
    w = np.divide(1.0, m - 1.0, out=np.zeros_like(m), where=m >= 2)
    v = c.n_values
    if level == "ordinal":
        if len(counts) * v * v > _DENSE_CELLS:
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
) -> Estimate:
    """Return Krippendorff's alpha with a percentile bootstrap CI over resampled items."""
    _check_boot(n_boot, ci)
    value = krippendorff_alpha(data, level)
    if np.isnan(value):
        return Estimate(value, float("nan"), float("nan"))
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
    data: Ratings, *, n_boot: int = 1000, ci: float = 0.95, seed: int | None = 0
) -> Estimate:
    """Return pairwise percent agreement with a percentile bootstrap CI over resampled items."""
    _check_boot(n_boot, ci)
    value = percent_agreement(data)
    if np.isnan(value):
        return Estimate(value, float("nan"), float("nan"))
    c = _encode(data, "nominal")
    features = np.zeros((c.n_items, 2))
    features[c.item_of_unit] = np.column_stack([_pair_agreement(c), np.ones(c.n_units)])
    prepared = (*_compress(features), lambda s: s[:, 0] / s[:, 1])
    return _feature_bootstrap(prepared, value, n_boot, ci, seed)
