"""Judge–crowd agreement: Cohen's κ and Krippendorff's α per judge and question.

Pure pandas/numpy, no ORM; ``judges.report`` puts the table in the judges' report (its
docstring states the inputs). κ with the crowd's majority (median for a rating scale) of
the item's workers but one, each left out in turn (the consensus each worker is compared
with), and with each worker; the crowd's own κ (each worker against the others), and α of
the crowd without and with the judge, each with a percentile bootstrap interval over items.
"""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from evalstats import agreement


def labels_ordinal(values: pd.Series) -> bool:
    """Tell whether a question's labels are numbers (a rating scale): ordinal statistics."""
    return bool(len(values)) and all(
        isinstance(v, int | float | np.integer | np.floating) and not isinstance(v, bool)
        for v in values
    )


def _codes(labels: Sequence[Any], *, ordinal: bool) -> tuple[np.ndarray, list[Any]]:
    values = sorted(set(labels), key=lambda v: (float(v), 0) if ordinal else (0, str(v)))
    index = {v: i for i, v in enumerate(values)}
    return np.array([index[v] for v in labels], dtype=int), values


def _kappas(confusions: np.ndarray, k: int, *, ordinal: bool) -> np.ndarray:
    """Return Cohen's kappa of each row of flattened k×k confusion counts (NaN if undefined)."""
    i, j = np.indices((k, k))
    w = ((i - j) ** 2 if ordinal else (i != j)).astype(float).ravel()
    total = confusions.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = confusions / total
        grid = p.reshape(-1, k, k)
        expected = np.einsum("bi,bj->bij", grid.sum(axis=2), grid.sum(axis=1)).reshape(-1, k * k)
        chance = expected @ w
        value = 1.0 - (p @ w) / chance
    value[~np.isfinite(value)] = np.nan
    return value


@dataclass(frozen=True)
class Kappa:
    """A pooled kappa over items, its bootstrap interval and how many items and pairs."""

    value: float
    low: float
    high: float
    items: int
    pairs: int
    agreement: float

    @property
    def interval(self) -> tuple[float, float, float]:
        """The estimate and its bounds."""
        return self.value, self.low, self.high


def pooled_kappa(
    pairs: pd.DataFrame, *, ordinal: bool, n_boot: int, level: float, seed: int
) -> Kappa:
    """Return Cohen's kappa of (``a``, ``b``) label pairs pooled over items, with a percentile
    bootstrap over items: each item's confusion counts are summed with multinomial weights."""
    nan = float("nan")
    pairs = pairs.dropna(subset=["a", "b"])
    if pairs.empty:
        return Kappa(nan, nan, nan, 0, 0, nan)
    codes, values = _codes(list(pairs["a"]) + list(pairs["b"]), ordinal=ordinal)
    k, n = len(values), len(pairs)
    items, _ = pd.factorize(pairs["item"])
    n_items = int(items.max()) + 1
    per_item = np.zeros((n_items, k * k))
    np.add.at(per_item, (items, codes[:n] * k + codes[n:]), 1.0)
    value = float(_kappas(per_item.sum(axis=0, keepdims=True), k, ordinal=ordinal)[0])
    same = float(np.mean(codes[:n] == codes[n:]))
    if n_boot < 1 or n_items < 2 or np.isnan(value):
        return Kappa(value, nan, nan, n_items, n, same)
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(n_items, np.full(n_items, 1.0 / n_items), size=n_boot)
    boot = _kappas(draws @ per_item, k, ordinal=ordinal)
    boot = boot[np.isfinite(boot)]
    if not len(boot):
        return Kappa(value, nan, nan, n_items, n, same)
    low, high = np.quantile(boot, [0.5 - level / 2, 0.5 + level / 2])
    return Kappa(value, float(low), float(high), n_items, n, same)


def consensus_of(labels: list[Any], *, ordinal: bool) -> Any:
    """Return the consensus of a list of labels: their median (ordinal; None between two
    ratings) or their majority label (nominal; None on a tie)."""
    if not labels:
        return None
    if ordinal:
        median = float(np.median(np.asarray(labels, dtype=float)))
        return median if median == np.floor(median) else None
    counts = Counter(labels).most_common()
    if len(counts) > 1 and counts[0][1] == counts[1][1]:
        return None
    return counts[0][0]


def _leave_one_out(crowd: pd.DataFrame, *, ordinal: bool) -> pd.DataFrame:
    """Return (item, a = a worker's label, b = the consensus of the item's other workers)."""
    rows = []
    for item, labels in crowd.groupby("item", sort=False)["label"].agg(list).items():
        if len(labels) < 2:
            continue
        for i, label in enumerate(labels):
            rows.append((item, label, consensus_of(labels[:i] + labels[i + 1 :], ordinal=ordinal)))
    return pd.DataFrame(rows, columns=["item", "a", "b"])


def _against_others(crowd: pd.DataFrame, own: pd.Series, *, ordinal: bool) -> pd.DataFrame:
    """Return (item, a = the judge's label, b = the consensus of the item's workers but one),
    once per worker left out: the very consensus each worker is compared with in
    ``_leave_one_out``. So a judge who answers as a worker would scores the crowd's own κ in
    expectation, whatever the number of workers per item; against the full majority it gained
    or lost up to 0.08 by that number's parity (a majority of 3 never ties, one of 2 often
    does)."""
    others = _leave_one_out(crowd[crowd["item"].isin(own.index)], ordinal=ordinal)
    return others.assign(a=others["item"].map(own))


def _alpha(
    long: pd.DataFrame, *, ordinal: bool, n_boot: int, level: float, seed: int
) -> tuple[float, float, float]:
    """Return Krippendorff's alpha of the long answers with its bootstrap interval."""
    nan = float("nan")
    if long.empty:
        return nan, nan, nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", agreement.AgreementUndefinedWarning)
        estimate = agreement.krippendorff_alpha_ci(
            long[["item", "rater", "value"]],
            "ordinal" if ordinal else "nominal",
            n_boot=max(n_boot, 1),
            ci=level,
            seed=seed,
        )
    return estimate.value, estimate.low, estimate.high


def agreement_table(
    crowd: pd.DataFrame, judges: pd.DataFrame, *, n_boot: int, level: float, seed: int
) -> pd.DataFrame:
    """Return one row per judge rater and question: κ with the majority, with workers, the
    crowd's own κ, and α without and with the judge, each with its interval."""
    rows = []
    for question, asked in crowd.groupby("question", sort=True):
        ordinal = labels_ordinal(asked["label"])
        crowd_own = pooled_kappa(
            _leave_one_out(asked, ordinal=ordinal),
            ordinal=ordinal,
            n_boot=n_boot,
            level=level,
            seed=seed,
        )
        long_crowd = asked.rename(columns={"label": "value"})
        alpha_crowd = _alpha(long_crowd, ordinal=ordinal, n_boot=n_boot, level=level, seed=seed)
        answered = judges[judges["question"] == question]
        for rater, mine in answered.groupby("rater", sort=True):
            own = mine.drop_duplicates("item").set_index("item")["label"]
            shared = asked[asked["item"].isin(own.index)]
            majority = _against_others(asked, own, ordinal=ordinal)
            workers = pd.DataFrame(
                {"item": shared["item"], "a": shared["item"].map(own), "b": shared["label"]}
            )
            with_majority = pooled_kappa(
                majority, ordinal=ordinal, n_boot=n_boot, level=level, seed=seed
            )
            with_workers = pooled_kappa(
                workers, ordinal=ordinal, n_boot=n_boot, level=level, seed=seed
            )
            extra = pd.concat(
                [long_crowd, pd.DataFrame({"item": own.index, "rater": rater, "value": own})],
                ignore_index=True,
            )
            alpha_with = _alpha(extra, ordinal=ordinal, n_boot=n_boot, level=level, seed=seed)
            rows.append(
                {
                    "judge": rater,
                    "question": question,
                    "level": "ordinal" if ordinal else "nominal",
                    "items": with_majority.items,
                    **_bounds("kappa_majority", with_majority.interval),
                    "agree_majority": with_majority.agreement,
                    **_bounds("kappa_workers", with_workers.interval),
                    "pairs_workers": with_workers.pairs,
                    **_bounds("kappa_crowd", crowd_own.interval),
                    **_bounds("alpha_crowd", alpha_crowd),
                    **_bounds("alpha_with_judge", alpha_with),
                }
            )
    return pd.DataFrame(rows)


def _bounds(name: str, estimate: tuple[float, float, float]) -> dict[str, float]:
    """Return a table's three columns of an estimate: ``name``, ``name_low``, ``name_high``."""
    value, low, high = estimate
    return {name: value, f"{name}_low": low, f"{name}_high": high}
