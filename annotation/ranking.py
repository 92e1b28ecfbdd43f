"""Paired-comparison statistics: win tables, A:B ratios, sign tests and Bradley–Terry ranking.

Input is a long DataFrame of outcomes, one row per judgment, with columns ``item``, ``a`` and
``b`` (the two models compared) and ``outcome``: ``"a"`` (a chosen), ``"b"``, ``"both"``
(both equally good) or ``"neither"``. Pure pandas/numpy/scipy; no ORM. ``docs/statistics.md``
states the conventions:

- the A:B ratio is wins of A over B divided by wins of B over A (ED, Rashkin et al. 2019,
  Figure 5); "both" and "neither" count in neither side;
- the sign test is the two-sided exact binomial test of A's wins among decisive judgments;
- Bradley–Terry counts "both" as half a win each way and leaves "neither" out (it says
  nothing about which is better; its rate is reported separately); each pair that met gets
  ``prior`` virtual wins each way, which keeps strengths finite when a model never loses;
  CIs are percentiles of a bootstrap over items;
- strengths are only comparable within a connected component of the comparison graph (models
  as nodes, an edge for every pair with an "a", "b" or "both" judgment): ``bradley_terry``
  refuses data with several components (``DisconnectedComparisons``), and
  ``bradley_terry_components`` ranks within each one.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd
from scipy.sparse import coo_array
from scipy.sparse.csgraph import connected_components
from scipy.stats import binomtest

from annotation.agreement import _resampled_sums

OUTCOMES = ("a", "b", "both", "neither")
PAIR_COLUMNS = [
    "model_a",
    "model_b",
    "n",
    "a_wins",
    "b_wins",
    "both",
    "neither",
    "ratio",
    "sign_test_p",
]
BT_COLUMNS = ["rank", "model", "strength", "ci_low", "ci_high", "n", "win_rate", "neither_rate"]


class DisconnectedComparisons(ValueError):
    """The models fall into groups never compared with each other: no single ranking exists.

    ``components`` lists the groups (each a sorted list of model names), largest first.
    """

    def __init__(self, components: list[list[str]]) -> None:
        self.components = components
        groups = "; ".join(f"{{{', '.join(c)}}}" for c in components)
        super().__init__(
            f"the comparison graph has {len(components)} components, {groups}: no judgment "
            "links one group to another, so Bradley–Terry strengths are not comparable across "
            "them and there is no single ranking; rank within each group "
            "(bradley_terry_components) or add comparisons between the groups"
        )


def _canonical(outcomes: pd.DataFrame) -> pd.DataFrame:
    """Orient every comparison so that ``a`` < ``b`` by name, flipping the outcome with it."""
    bad = set(outcomes["outcome"].unique()) - set(OUTCOMES)
    if bad:
        raise ValueError(f"unknown outcome(s) {sorted(map(str, bad))}; use {OUTCOMES}")
    if (outcomes["a"] == outcomes["b"]).any():
        raise ValueError("a model cannot be compared with itself")
    flip = outcomes["a"] > outcomes["b"]
    swapped = _lookup(
        outcomes["outcome"], {"a": "b", "b": "a", "both": "both", "neither": "neither"}
    )
    return pd.DataFrame(
        {
            "item": outcomes["item"],
            "a": outcomes["a"].where(~flip, outcomes["b"]),
            "b": outcomes["b"].where(~flip, outcomes["a"]),
            "outcome": outcomes["outcome"].where(~flip, swapped),
        }
    )


def _lookup(values: pd.Series, mapping: dict[Any, Any]) -> pd.Series:
    """Return ``values.map(mapping)`` (same index and dtype), looking each distinct value up
    once instead of each row (a million judgments hold four outcomes)."""
    codes, uniques = pd.factorize(values, use_na_sentinel=False)
    mapped = pd.Series(uniques).map(mapping)
    return pd.Series(mapped.to_numpy()[codes], index=values.index, dtype=mapped.dtype)


def pair_table(outcomes: pd.DataFrame) -> pd.DataFrame:
    """Return per model pair: n, wins each way, both, neither, A:B ratio, sign-test p.

    The ratio is inf when B never won and A did, NaN when neither won; the p-value is NaN
    without decisive judgments.
    """
    if outcomes.empty:
        return pd.DataFrame(columns=PAIR_COLUMNS)
    data = _canonical(outcomes)
    counts = (
        data.groupby(["a", "b"])["outcome"]
        .value_counts()
        .unstack(fill_value=0)
        .reindex(columns=list(OUTCOMES), fill_value=0)
    )
    rows = []
    for (a, b), row in counts.iterrows():
        wins_a, wins_b = int(row["a"]), int(row["b"])
        decisive = wins_a + wins_b
        rows.append(
            {
                "model_a": a,
                "model_b": b,
                "n": int(row.sum()),
                "a_wins": wins_a,
                "b_wins": wins_b,
                "both": int(row["both"]),
                "neither": int(row["neither"]),
                "ratio": _ratio(wins_a, wins_b),
                "sign_test_p": binomtest(wins_a, decisive, 0.5).pvalue if decisive else np.nan,
            }
        )
    return pd.DataFrame(rows, columns=PAIR_COLUMNS)


def _ratio(wins: float, losses: float) -> float:
    if losses:
        return wins / losses
    return np.inf if wins else np.nan


def ratio_matrix(pairs: pd.DataFrame, models: list[str] | None = None) -> pd.DataFrame:
    """Return the full square of A:B ratios (row model over column model) from a pair table.

    Cells of pairs never compared, and the diagonal, are NaN.
    """
    names = models or sorted(set(pairs["model_a"]) | set(pairs["model_b"]))
    matrix = pd.DataFrame(np.nan, index=names, columns=names, dtype=float)
    for row in pairs.itertuples():
        if row.model_a in matrix.index and row.model_b in matrix.index:
            matrix.loc[row.model_a, row.model_b] = _ratio(row.a_wins, row.b_wins)
            matrix.loc[row.model_b, row.model_a] = _ratio(row.b_wins, row.a_wins)
    matrix.index.name = "model"
    return matrix


def group_ratios(matrix: pd.DataFrame, groups: dict[str, list[list[str]]]) -> pd.DataFrame:
    """Average the A:B ratios of each named group of (A, B) pairs (ED's Table 5).

    Pairs not compared yet are skipped and counted; an infinite ratio makes the mean inf.
    """
    rows = []
    for name, pairs in groups.items():
        values = [
            matrix.loc[a, b]
            for a, b in pairs
            if a in matrix.index and b in matrix.columns and not np.isnan(matrix.loc[a, b])
        ]
        rows.append(
            {
                "group": name,
                "pairs": len(pairs),
                "pairs_with_data": len(values),
                "mean_ratio": float(np.mean(values)) if values else np.nan,
            }
        )
    return pd.DataFrame(rows, columns=["group", "pairs", "pairs_with_data", "mean_ratio"])


def _fit(wins: np.ndarray, *, tol: float = 1e-10, max_iter: int = 10_000) -> np.ndarray:
    """Fit Bradley–Terry strengths by Hunter's (2004) MM algorithm; return log-strengths.

    ``wins[i, j]`` is how often i beat j (ties already split). Models with no comparison at
    all get NaN; log-strengths of the others have mean 0.
    """
    games = wins + wins.T
    seen = games.sum(axis=1) > 0
    w, g = wins[np.ix_(seen, seen)], games[np.ix_(seen, seen)]
    total = w.sum(axis=1)
    p = np.ones(len(total))
    for _ in range(max_iter):
        with np.errstate(divide="ignore", invalid="ignore"):
            denom = np.where(g > 0, g / (p[:, None] + p[None, :]), 0.0).sum(axis=1)
        new = total / denom
        new /= np.exp(np.mean(np.log(new)))
        if np.max(np.abs(np.log(new) - np.log(p))) < tol:
            p = new
            break
        p = new
    strength = np.full(len(wins), np.nan)
    strength[seen] = np.log(p)
    return strength


def _wins(
    index_a: np.ndarray,
    index_b: np.ndarray,
    score: np.ndarray,
    k: int,
    weight: np.ndarray | None = None,
) -> np.ndarray:
    """Return the k × k matrix of (weighted) wins, a tie being half a win each way."""
    wins = np.zeros((k, k))
    w = np.ones(len(score)) if weight is None else weight
    np.add.at(wins, (index_a, index_b), w * score)
    np.add.at(wins, (index_b, index_a), w * (1 - score))
    return wins


def _fit_batch(wins: np.ndarray, *, tol: float = 1e-10, max_iter: int = 10_000) -> np.ndarray:
    """Fit ``_fit`` on each of a stack of win matrices (B x k x k) at once; return B x k.

    Every model must have played in every matrix (the prior's virtual wins see to that).
    Each fit stops at the iteration where its own ``_fit`` would, so the results are
    ``_fit``'s.
    """
    games = wins + wins.transpose(0, 2, 1)
    total = wins.sum(axis=2)
    p = np.ones(total.shape)
    active = np.arange(len(p))
    for _ in range(max_iter):
        g, q = games[active], p[active]
        with np.errstate(divide="ignore", invalid="ignore"):
            denom = np.where(g > 0, g / (q[:, :, None] + q[:, None, :]), 0.0).sum(axis=2)
        new = total[active] / denom
        new /= np.exp(np.mean(np.log(new), axis=1))[:, None]
        converged = np.max(np.abs(np.log(new) - np.log(q)), axis=1) < tol
        p[active] = new
        active = active[~converged]
        if not len(active):
            break
    return np.log(p)


# Per-item features (items x cells of the win matrix) above this many elements are not built;
# the bootstrap then weighs judgments per resample instead.
_PATTERN_CELLS = 1 << 24


def _patterns(features: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return the distinct rows of ``features`` and each row's index among them, by hashing
    the rows' bytes (``np.unique(axis=0)`` sorts them, 10x slower at 10^5 items)."""
    rows = np.ascontiguousarray(features)
    keys = rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).ravel()
    pattern_of, _ = pd.factorize(pd.Series(keys.tolist()))
    first = np.unique(pattern_of, return_index=True)[1]
    return rows[first], pattern_of


def _bootstrap(
    item: pd.Series,
    index_a: np.ndarray,
    index_b: np.ndarray,
    score: np.ndarray,
    virtual: np.ndarray,
    *,
    n_boot: int,
    seed: int,
) -> np.ndarray:
    """Return ``n_boot`` Bradley–Terry fits (n_boot x k) on resamples of the items.

    An item adds its judgments' wins to a few cells of the win matrix; items that add the same
    amounts (the same pair and tally of outcomes) are interchangeable, so a resample is drawn
    as multiplicities of these patterns (``agreement._resampled_sums``: a multinomial with the
    observed frequencies has the law of drawing items with replacement) and its win matrix is
    one product. The fits of a chunk of resamples then run together (``_fit_batch``).
    """
    k = len(virtual)
    draws = np.empty((n_boot, k))
    if not n_boot:
        return draws
    codes, _ = pd.factorize(item.astype(str), sort=True)
    n_items = int(codes.max()) + 1
    # Cell i * k + j of the flattened win matrix gains score for (i, j), 1 - score for (j, i).
    cell = np.concatenate([index_a * k + index_b, index_b * k + index_a])
    gain = np.concatenate([score, 1.0 - score])
    used, cell = np.unique(cell, return_inverse=True)
    rows = np.concatenate([codes, codes])
    if n_items * len(used) > _PATTERN_CELLS:
        rng = np.random.default_rng(seed)
        for r in range(n_boot):
            weight = np.bincount(rng.integers(0, n_items, n_items), minlength=n_items)
            flat = np.bincount(cell, weights=weight[rows] * gain, minlength=len(used))
            wins = np.zeros(k * k)
            wins[used] = flat
            draws[r] = _fit(wins.reshape(k, k) + virtual)
        return draws
    features = np.bincount(rows * len(used) + cell, weights=gain, minlength=n_items * len(used))
    patterns, pattern_of = _patterns(features.reshape(n_items, len(used)))
    batched = bool((virtual + virtual.T > 0).any(axis=1).all())  # every model always plays
    done = 0
    for sums in _resampled_sums(patterns, pattern_of, n_boot, seed):
        wins = np.zeros((len(sums), k * k))
        wins[:, used] = sums
        wins = wins.reshape(-1, k, k) + virtual
        if batched:
            draws[done : done + len(sums)] = _fit_batch(wins)
        else:
            draws[done : done + len(sums)] = [_fit(w) for w in wins]
        done += len(sums)
    return draws


def comparison_components(outcomes: pd.DataFrame) -> list[list[str]]:
    """Return the connected components of the comparison graph, largest first.

    Nodes are every model in ``outcomes``; two models are linked when at least one judgment
    between them chose a side or "both" (a "neither" says nothing about which is better and
    is left out of the Bradley–Terry fit, so it links nothing). A model judged only "neither"
    is a component of its own. Each component is a sorted list; ties in size go by name.
    """
    if outcomes.empty:
        return []
    data = _canonical(outcomes)
    models = sorted(set(data["a"].unique()) | set(data["b"].unique()))
    decided = data[data["outcome"] != "neither"]
    rows = pd.Index(models).get_indexer(decided["a"]).astype(np.int64)
    cols = pd.Index(models).get_indexer(decided["b"]).astype(np.int64)
    graph = coo_array((np.ones(len(rows)), (rows, cols)), shape=(len(models), len(models)))
    _, labels = connected_components(graph, directed=False)
    groups: dict[int, list[str]] = {}
    for model, label in zip(models, labels, strict=True):
        groups.setdefault(int(label), []).append(model)
    return sorted(groups.values(), key=lambda c: (-len(c), c[0]))


def bradley_terry(
    outcomes: pd.DataFrame, *, prior: float = 0.5, n_boot: int = 1000, seed: int = 0
) -> pd.DataFrame:
    """Rank models by Bradley–Terry log-strength (mean 0) with 95% bootstrap CIs over items.

    Returns the BT_COLUMNS, best first: ``win_rate`` counts "both" as half a win over all
    non-"neither" judgments, ``neither_rate`` is the share of "neither" among all of the
    model's judgments. Raises ``DisconnectedComparisons`` when the comparison graph has
    several components: their strengths have no common scale, so one ranking of all the
    models would order the groups arbitrarily (use ``bradley_terry_components``).
    """
    if prior < 0:
        raise ValueError("the prior must be >= 0")
    if outcomes.empty:
        return pd.DataFrame(columns=BT_COLUMNS)
    components = comparison_components(outcomes)
    if len(components) > 1:
        raise DisconnectedComparisons(components)
    data = _canonical(outcomes)
    models = components[0]
    return _bradley_terry_connected(data, models, prior=prior, n_boot=n_boot, seed=seed)


def bradley_terry_components(
    outcomes: pd.DataFrame, *, prior: float = 0.5, n_boot: int = 1000, seed: int = 0
) -> list[pd.DataFrame]:
    """Return one Bradley–Terry ranking per component of the comparison graph, largest first.

    Each table is ``bradley_terry`` on that component's judgments alone: log-strengths with
    mean 0 within the component, ranks from 1, CIs from a bootstrap over its items. A model
    judged only "neither" gets a one-row table with no strength and no rank.
    """
    if prior < 0:
        raise ValueError("the prior must be >= 0")
    if outcomes.empty:
        return []
    data = _canonical(outcomes)
    return [
        _bradley_terry_connected(data, component, prior=prior, n_boot=n_boot, seed=seed)
        for component in comparison_components(outcomes)
    ]


def _bradley_terry_connected(
    data: pd.DataFrame, models: list[str], *, prior: float, n_boot: int, seed: int
) -> pd.DataFrame:
    """Fit and rank one connected component, ``models``, from the canonical outcomes
    (see ``bradley_terry``). The fit uses the decided judgments among ``models``; ``n`` and
    the rates count every judgment of each model ("neither" ones may cross components)."""
    index = {m: i for i, m in enumerate(models)}
    inside = data["a"].isin(index) & data["b"].isin(index)
    decided = data[inside & (data["outcome"] != "neither")]
    ia = pd.Index(models).get_indexer(decided["a"]).astype(np.int64)
    ib = pd.Index(models).get_indexer(decided["b"]).astype(np.int64)
    score = _lookup(decided["outcome"], {"a": 1.0, "b": 0.0, "both": 0.5}).to_numpy(dtype=float)
    k = len(models)
    met = _wins(ia, ib, np.ones(len(score)), k) > 0
    virtual = prior * (met | met.T)

    if decided.empty:  # a model judged only "neither": nothing to fit
        point = low = high = np.full(k, np.nan)
        n_boot = 0
    else:
        point = _fit(_wins(ia, ib, score, k) + virtual)
    draws = _bootstrap(decided["item"], ia, ib, score, virtual, n_boot=n_boot, seed=seed)
    low, high = point, point
    if n_boot:
        with warnings.catch_warnings():  # a model absent from a whole draw gives an all-NaN column
            warnings.simplefilter("ignore", RuntimeWarning)
            low, high = np.nanpercentile(draws, [2.5, 97.5], axis=0)

    mine = data[data["a"].isin(index) | data["b"].isin(index)]
    n = pd.concat([mine["a"], mine["b"]]).value_counts()
    neither = pd.concat([mine.loc[mine["outcome"] == "neither", c] for c in ("a", "b")])
    won = pd.concat([decided["a"], decided["b"]], ignore_index=True).to_frame("model")
    won["score"] = np.concatenate([score, 1 - score])
    table = pd.DataFrame(
        {
            "model": models,
            "strength": point,
            "ci_low": low,
            "ci_high": high,
            "n": [int(n.get(m, 0)) for m in models],
            "win_rate": [won.loc[won["model"] == m, "score"].mean() for m in models],
            "neither_rate": [neither.eq(m).sum() / n.get(m, 1) for m in models],
        }
    )
    table = table.sort_values("strength", ascending=False, ignore_index=True)
    ranked = table["strength"].notna()
    table.insert(0, "rank", pd.array([pd.NA] * len(table), dtype="Int64"))
    table.loc[ranked, "rank"] = np.arange(1, int(ranked.sum()) + 1)
    return table[BT_COLUMNS]
