"""Fleiss' kappa (1971) from a count table and Cohen's kappa (1960, weighted 1968)."""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import pandas as pd

from evalstats.agreement.coding import _codes, _undefined


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
