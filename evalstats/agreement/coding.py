"""Read ratings in either layout and count values per item: what every coefficient comes from.

Two input layouts are accepted wherever ratings are: a long DataFrame with columns ``item``,
``rater``, ``value`` (one row per judgment), or a raters x items array with NaN (or None) for a
missing value; in a NumPy string array, the text "nan" (what ``np.asarray`` makes of NaN among
strings, and what the ``krippendorff`` package reads as missing).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple, TypeAlias

import numpy as np
import pandas as pd
from scipy import sparse

from evalstats.agreement import limits

Level: TypeAlias = Literal["nominal", "ordinal", "interval", "ratio"]
Ratings: TypeAlias = pd.DataFrame | np.ndarray | list[list[Any]]
LEVELS: tuple[str, ...] = ("nominal", "ordinal", "interval", "ratio")
COLUMNS: tuple[str, str, str] = ("item", "rater", "value")


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
    if not hi - lo < limits.DENSE_VALUES or n_items * (hi - lo + 1) > limits.DENSE_CELLS:
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


# Labels of up to 8 ASCII characters are coded as integers, 7 bits a character, in chunks of
# this many values: each chunk's passes (ASCII check, key, "nan" test) run on data in cache.
_ASCII_CHUNK = 1 << 16
_ASCII_WIDTH = 8
# "nan" as _ascii_keys codes it (a width under 3 never holds it).
_NAN_KEY = ord("n") + 128 * ord("a") + 128 * 128 * ord("n")


def _ascii_keys(flat: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Return the positions of the present labels of a NumPy string array of at most 8
    characters and each one's key (its characters, 7 bits each), or None if one is not ASCII.

    Two base-128 sums per value (characters 0-3 and 4-7, exact in 32 bits) instead of a
    Python string each; the text "nan" (key ``_NAN_KEY``) is missing, as in the package.
    """
    unit = np.uint32 if flat.dtype.kind == "U" else np.uint8
    width = flat.dtype.itemsize // np.dtype(unit).itemsize
    words = np.ascontiguousarray(flat).view(unit).reshape(len(flat), width)
    low, high = min(width, 4), max(width - 4, 0)
    weights = (128 ** np.arange(4, dtype=np.uint32)).astype(np.uint32)
    wheres, keys = [], []
    for start in range(0, len(flat), _ASCII_CHUNK):
        chunk = words[start : start + _ASCII_CHUNK]
        if int(chunk.max()) >= 128:
            return None
        key = np.matmul(chunk[:, :low], weights[:low]).astype(np.uint32, copy=False)
        present = key != _NAN_KEY
        if high:
            rest = np.matmul(chunk[:, 4:], weights[:high]).astype(np.uint32, copy=False)
            present |= rest != 0
        where = np.flatnonzero(present)
        wide = key[where].astype(np.uint64)
        if high:
            wide |= rest[where].astype(np.uint64) << np.uint64(28)
        wheres.append(where + start)
        keys.append(wide)
    if not wheres:
        return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.uint64)
    return np.concatenate(wheres), np.concatenate(keys)


def _ascii_labels(keys: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Return the labels that ``_ascii_keys`` coded as ``keys``, in a string array of ``dtype``."""
    unit = np.uint32 if dtype.kind == "U" else np.uint8
    width = dtype.itemsize // np.dtype(unit).itemsize
    shifts = np.uint64(7) * np.arange(width, dtype=np.uint64)
    chars = (keys[:, None] >> shifts[None, :]) & np.uint64(127)
    return np.ascontiguousarray(chars.astype(unit)).view(dtype).ravel()


def _present_labels(flat: np.ndarray) -> tuple[np.ndarray, np.ndarray, Any]:
    """Return the positions of the present labels of a 1-D object or NumPy string array, their
    codes and the distinct labels (``pd.factorize``'s order). None and NaN are missing, and
    "nan" in a string array.

    ASCII labels of up to 8 characters (A/B outcomes, emotion names) are factorized as the
    integers ``_ascii_keys`` makes of them, exactly and without a Python string per value.
    """
    if flat.dtype.kind in "US" and flat.dtype.itemsize > 0 and len(flat):
        width = flat.dtype.itemsize // (4 if flat.dtype.kind == "U" else 1)
        coded = _ascii_keys(flat) if width <= _ASCII_WIDTH else None
        if coded is not None:
            where, keys = coded
            codes, distinct = pd.factorize(keys)
            return where, codes, _ascii_labels(np.asarray(distinct, np.uint64), flat.dtype)
    if flat.dtype.kind in "US":
        codes, uniques = pd.factorize(flat.astype(object))
        uniques = np.asarray(uniques, dtype=flat.dtype)
        # np.asarray turned NaN into the text "nan" in a string array: it is missing there.
        missing = np.flatnonzero(uniques == ("nan" if flat.dtype.kind == "U" else b"nan"))
        if len(missing):
            keep = np.ones(len(uniques), dtype=bool)
            keep[missing] = False
            renumber = np.cumsum(keep) - 1
            renumber[missing] = -1
            codes, uniques = renumber[codes], uniques[keep]
    else:
        codes, uniques = pd.factorize(flat)
    where = np.flatnonzero(codes >= 0)
    return where, codes[where], uniques


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
    if n_items * v > limits.DENSE_CELLS:
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
            # Code the present labels once, rater-major: no transposed copy.
            where, codes, uniques = _present_labels(arr.ravel())
            labels = _label_counts(where % arr.shape[1], codes, uniques, arr.shape[1], level)
            if labels is not None:
                return labels
        item, vals, n_items = _array_values(arr)
    m = np.bincount(item, minlength=n_items)
    pairable = m >= 2
    keep = pairable[item]
    unit = (np.cumsum(pairable) - 1)[item[keep]]
    values, code = _codes(vals[keep], level)
    n_units, n_values = int(pairable.sum()), len(values)
    if n_units * n_values <= limits.DENSE_CELLS:
        counts = np.bincount(unit * n_values + code, minlength=n_units * n_values)
        counts = counts.reshape(n_units, n_values)
    else:
        ones = np.ones(len(code))
        counts = sparse.csr_matrix((ones, (unit, code)), shape=(n_units, n_values))
    return _Coded(values, counts, m[pairable], n_items, np.flatnonzero(pairable))
