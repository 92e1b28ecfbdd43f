"""Aggregate crowd judgments into gold labels, and estimate how good each rater is.

Judgments are a long DataFrame with columns ``item``, ``rater``, ``value`` (one row per
judgment; rows whose value is missing are ignored). Pure pandas/numpy plus crowd-kit for the
latent-class models; no ORM. ``docs/statistics.md`` states the rules and their sources.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Literal, TypeAlias

import numpy as np
import pandas as pd

TiePolicy: TypeAlias = Literal["report", "drop", "raise"]
TIE_POLICIES: tuple[str, ...] = ("report", "drop", "raise")
COLUMNS: tuple[str, str, str] = ("item", "rater", "value")
NON_NEUTRAL = "non-neutral"
# Rows of leave-one-out vote tables built at once in rater_agreement: bounds peak memory.
_CHUNK_ELEMENTS = 1 << 22


class TiedLabelWarning(UserWarning):
    """Warn that some items had no single best label and were given a missing label."""


def _judgments(judgments: pd.DataFrame) -> pd.DataFrame:
    missing = set(COLUMNS) - set(judgments.columns)
    if missing:
        raise ValueError(f"judgments need columns {COLUMNS}; missing {sorted(missing)}")
    j = judgments.loc[judgments["value"].notna(), list(COLUMNS)]
    if j["item"].isna().any() or j["rater"].isna().any():
        raise ValueError("item and rater ids must not be missing")
    dup = j.duplicated(["item", "rater"])
    if dup.any():
        pairs = j.loc[dup, ["item", "rater"]].head(5).to_records(index=False).tolist()
        raise ValueError(f"a rater judged an item more than once, e.g. (item, rater) = {pairs}")
    return j


def majority_vote(judgments: pd.DataFrame, ties: TiePolicy = "report") -> pd.DataFrame:
    """Return each item's most-voted value, with an explicit policy for ties.

    A tie (two or more values sharing the top count) is never broken by row order or at
    random. ``ties="report"`` keeps tied items with a missing ``label`` and ``tied=True``;
    ``"drop"`` leaves them out; ``"raise"`` raises ``ValueError`` naming them. The result is
    indexed by item with columns ``label``, ``votes`` (the top count), ``n_votes``, ``tied``
    and ``candidates`` (the values sharing the top count, sorted when they can be).
    """
    if ties not in TIE_POLICIES:
        raise ValueError(f"ties must be one of {TIE_POLICIES}, got {ties!r}")
    j = _judgments(judgments)
    try:
        counts = j.groupby(["item", "value"], sort=True).size()
    except TypeError:  # values of mixed, unorderable types: order is then irrelevant
        counts = j.groupby(["item", "value"], sort=False).size()
    by_item = counts.groupby(level="item", sort=False)
    top = by_item.transform("max")
    winners = counts[counts == top].reset_index().groupby("item", sort=False)["value"]
    result = pd.DataFrame(
        {
            "votes": by_item.max(),
            "n_votes": by_item.sum(),
            "candidates": winners.agg(tuple),
            "first": winners.first(),
            "n_top": winners.size(),
        }
    )
    result["tied"] = result["n_top"] > 1
    result["label"] = result["first"].where(~result["tied"])
    result = result[["label", "votes", "n_votes", "tied", "candidates"]]
    if result["tied"].any() and ties == "raise":
        tied = result.index[result["tied"]].tolist()
        raise ValueError(f"{len(tied)} item(s) have tied votes, e.g. {tied[:10]}")
    if ties == "drop":
        result = result[~result["tied"]]
    return result


def emotionlines_labels(
    counts: pd.DataFrame | np.ndarray | list[list[int]],
    labels: list[str] | tuple[str, ...],
    *,
    threshold: int | None = None,
    fallback: str = NON_NEUTRAL,
) -> pd.Series:
    """Return the gold label per item by the EmotionLines rule, as its released data applies it.

    ``counts`` is items x labels (votes per label; 5 per item in the paper). A label is gold
    when it has at least ``threshold`` votes (default: an absolute majority of the item's
    votes, 3 of 5) and no other label has as many; every other item gets ``fallback``
    ("non-neutral"). PROTOCOLS.md section 4 explains why this, not a literal reading of the
    paper's "more than two emotions" sentence, is the rule.
    """
    table = np.asarray(counts)
    names = np.asarray(labels, dtype=object)
    if table.ndim != 2 or table.shape[1] != len(names):
        raise ValueError(f"counts must be items x {len(names)} labels, got shape {table.shape}")
    if (table < 0).any() or not np.array_equal(table, np.round(table)):
        raise ValueError("counts must be non-negative whole numbers of votes")
    totals = table.sum(axis=1)
    if (totals == 0).any():
        raise ValueError(f"items without votes: rows {np.flatnonzero(totals == 0)[:10].tolist()}")
    if threshold is not None and threshold < 1:
        raise ValueError(f"threshold must be at least 1 vote, got {threshold}")
    need = totals // 2 + 1 if threshold is None else threshold
    top = table.max(axis=1)
    unique_top = (table == top[:, None]).sum(axis=1) == 1
    gold = np.where((top >= need) & unique_top, names[table.argmax(axis=1)], fallback)
    index = counts.index if isinstance(counts, pd.DataFrame) else None
    return pd.Series(gold, index=index, name="label", dtype=object)


@contextmanager
def _quiet_crowdkit() -> Iterator[None]:
    """Silence the pandas 4 deprecations (``inplace=``, ``copy=``) raised inside crowd-kit.

    crowd-kit 1.4.2 still passes those keywords; with pandas 3.1 it works but warns on every
    iteration, burying real warnings. Only that category is silenced, only around its calls.
    """
    category = getattr(pd.errors, "Pandas4Warning", None)
    with warnings.catch_warnings():
        if category is not None:
            warnings.filterwarnings("ignore", category=category, module=r"(crowdkit|pandas)\.")
        yield


def _crowdkit_frame(judgments: pd.DataFrame) -> pd.DataFrame:
    j = _judgments(judgments)
    if j.empty:
        raise ValueError("there are no judgments to aggregate")
    return j.rename(columns={"item": "task", "rater": "worker", "value": "label"})


def _posterior_labels(probas: pd.DataFrame) -> pd.Series:
    """Take each item's most probable label; a tied maximum gives a missing label, loudly."""
    best = probas.max(axis=1)
    tied = probas.ge(best.to_numpy()[:, None] - 1e-12).sum(axis=1) > 1
    labels = probas.idxmax(axis=1).astype(object).where(~tied)
    if tied.any():
        warnings.warn(
            f"{int(tied.sum())} item(s) have tied posterior labels and get a missing label, "
            f"e.g. {tied.index[tied][:5].tolist()}",
            TiedLabelWarning,
            stacklevel=3,
        )
    labels.index.name, labels.name = "item", "label"
    return labels


def dawid_skene(
    judgments: pd.DataFrame, *, n_iter: int = 100, tol: float = 1e-5
) -> tuple[pd.Series, pd.Series]:
    """Fit Dawid and Skene (1979) with crowd-kit; return labels per item and accuracy per rater.

    A rater's accuracy is the prior-weighted diagonal of their estimated confusion matrix,
    sum_c prior_c P(rater says c | truth c): the chance they give the true label.
    """
    from crowdkit.aggregation import DawidSkene

    with _quiet_crowdkit():
        model = DawidSkene(n_iter=n_iter, tol=tol).fit(_crowdkit_frame(judgments))
    if model.errors_ is None or model.probas_ is None:  # only for empty data, excluded above
        raise ValueError("there are no judgments to aggregate")
    errors = model.errors_.stack()  # (worker, observed label, true label) -> probability
    errors.index = errors.index.set_names(["worker", "observed", "truth"])
    errors = errors.reset_index(name="p")
    diagonal = errors[errors["observed"] == errors["truth"]]
    weighted = diagonal["p"] * diagonal["truth"].map(model.priors_)
    accuracy = weighted.groupby(diagonal["worker"]).sum().rename("accuracy")
    accuracy.index.name = "rater"
    return _posterior_labels(model.probas_), accuracy


def _canonical_order(data: pd.DataFrame) -> pd.DataFrame:
    """Sort ``task``/``worker``/``label`` rows into an order of their content alone.

    Items go by their text; workers by what they answered (their sorted item and label
    pairs), their names only breaking ties between workers who answered alike, whom the model
    cannot tell apart. The same judgments in any row order, with the workers under any names
    (the import pipeline's pseudonyms), come out in the same order.
    """
    data = data.reset_index(drop=True)
    text = pd.DataFrame({"t": data["task"].astype(str), "l": data["label"].astype(str)})
    text["pair"] = text["t"] + "\x1f" + text["l"]
    text["w"] = data["worker"]
    answered = text.sort_values(["t", "l"]).groupby("w", sort=False)["pair"].agg("\x1e".join)
    names = answered.index.astype(str).to_numpy()
    rank = np.argsort(np.lexsort((names, answered.to_numpy().astype(str))))
    keys = pd.DataFrame({"t": text["t"], "r": data["worker"].map(pd.Series(rank, answered.index))})
    return data.iloc[keys.sort_values(["t", "r"]).index.to_numpy()].reset_index(drop=True)


def _mace_fit(
    data: pd.DataFrame, *, n_restarts: int, n_iter: int, seed: int
) -> tuple[pd.DataFrame, pd.Series]:
    """Fit crowd-kit's MACE on ``data`` in canonical order, its ids replaced by numbers.

    crowd-kit 1.4.2 numbers workers, labels and items by first appearance (its random start
    is drawn per number) but reads the M-step's counts in sorted order of their names, so a
    worker's counts could update another's parameters: the fit depended on row order and on
    what the workers are called. Numbered by first appearance in the canonical order, the
    two orders agree. Return the label probabilities (items x labels) and competence.
    """
    from crowdkit.aggregation import MACE

    data = _canonical_order(data)
    codes = {c: pd.factorize(data[c]) for c in ("task", "worker", "label")}
    numbered = pd.DataFrame({c: codes[c][0] for c in codes})
    model = MACE(n_restarts=n_restarts, n_iter=n_iter, random_state=seed).fit(numbered)
    if model.probas_ is None or model.spamming_ is None:  # only for empty data, excluded above
        raise ValueError("there are no judgments to aggregate")
    probas = model.probas_.sort_index().sort_index(axis=1)
    probas.index = codes["task"][1][probas.index.to_numpy()]
    probas.columns = codes["label"][1][probas.columns.to_numpy()]
    workers = pd.Index(codes["worker"][1], name="rater")
    return probas, pd.Series(model.spamming_[:, 1], index=workers, name="competence")


def mace(
    judgments: pd.DataFrame, *, n_restarts: int = 10, n_iter: int = 50, seed: int = 0
) -> tuple[pd.Series, pd.Series]:
    """Fit MACE (Hovy et al. 2013) with crowd-kit; return labels per item and competence.

    A rater's competence is the posterior probability that they are not spamming, i.e. that
    their answer copies the true label (MACE's theta). The result depends neither on the
    rows' order nor on the workers' names (``_mace_fit``).
    """
    with _quiet_crowdkit():
        probas, competence = _mace_fit(
            _crowdkit_frame(judgments), n_restarts=n_restarts, n_iter=n_iter, seed=seed
        )
    return _posterior_labels(probas), competence


def rater_agreement(judgments: pd.DataFrame) -> pd.DataFrame:
    """Return, per rater, how often they agree with the majority of the other raters.

    For each judgment the item's votes without it are counted (leave-one-out); when one value
    has strictly the most of them, the judgment is compared with it. Judgments on items with
    no other rater, or whose leave-one-out votes tie, are not compared (ties are never broken).
    Columns: ``n_judgments``, ``n_compared``, ``n_agree``, ``agreement`` (= n_agree /
    n_compared; NaN exactly when n_compared is 0).
    """
    j = _judgments(judgments)
    items, _ = pd.factorize(j["item"])
    codes, _ = pd.factorize(j["value"])
    raters, rater_ids = pd.factorize(j["rater"])
    n_items, n_values = (int(items.max()) + 1, len(np.unique(codes))) if len(j) else (0, 0)
    votes = np.bincount(items * n_values + codes, minlength=n_items * n_values).reshape(
        n_items, max(n_values, 1)
    )
    compared = np.zeros(len(j), dtype=bool)
    agree = np.zeros(len(j), dtype=bool)
    step = max(1, _CHUNK_ELEMENTS // max(n_values, 1))
    for start in range(0, len(j), step):
        rows = np.arange(start, min(start + step, len(j)))
        loo = votes[items[rows]]
        loo[np.arange(len(rows)), codes[rows]] -= 1
        top = loo.max(axis=1)
        single = (loo == top[:, None]).sum(axis=1) == 1
        compared[rows] = (top > 0) & single
        agree[rows] = compared[rows] & (loo[np.arange(len(rows)), codes[rows]] == top)
    n_raters = len(rater_ids)
    result = pd.DataFrame(
        {
            "n_judgments": np.bincount(raters, minlength=n_raters),
            "n_compared": np.bincount(raters, weights=compared, minlength=n_raters).astype(int),
            "n_agree": np.bincount(raters, weights=agree, minlength=n_raters).astype(int),
        },
        index=pd.Index(rater_ids, name="rater"),
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        result["agreement"] = result["n_agree"] / result["n_compared"].replace(0, np.nan)
    return result


# --- the report's choice of aggregation -------------------------------------------------------

Aggregate: TypeAlias = Literal["majority", "ds", "mace"]
AGGREGATES: tuple[str, ...] = ("majority", "ds", "mace")
AGGREGATE_NAMES: dict[str, str] = {
    "majority": "majority vote (ties left unlabeled)",
    "ds": "Dawid–Skene (1979)",
    "mace": "MACE (Hovy et al. 2013)",
}


def labels_aggregate(
    judgments: pd.DataFrame, method: str = "majority", *, seed: int = 0
) -> tuple[pd.DataFrame, pd.Series | None]:
    """Return each item's label by ``method`` and, for a latent-class model, each rater's
    estimated reliability.

    The labels are indexed by item with columns ``label`` (missing when tied), ``tied`` and
    ``n_votes``. The reliability is Dawid–Skene's accuracy or MACE's competence per rater,
    None for the majority vote. A tied posterior gives a missing label, as a tied vote does.
    """
    if method not in AGGREGATES:
        raise ValueError(f"aggregate must be one of {', '.join(AGGREGATES)}, got {method!r}")
    j = _judgments(judgments)
    if method == "majority" or j.empty:
        votes = majority_vote(j, ties="report")[["label", "tied", "n_votes"]]
        return votes, (None if method == "majority" else pd.Series(dtype=float, name="quality"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TiedLabelWarning)
        if method == "ds":
            labels, quality = dawid_skene(j)
        else:
            labels, quality = mace(j, seed=seed)
    n_votes = j.groupby("item", sort=False).size()
    result = pd.DataFrame({"label": labels.astype(object)})
    result["tied"] = result["label"].isna()
    result["n_votes"] = n_votes.reindex(result.index).to_numpy()
    return result, quality.rename("quality")
