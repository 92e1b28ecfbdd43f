"""Paired-comparison statistics: win tables, A:B ratios, sign tests and Bradley–Terry ranking.

Input is a long DataFrame of outcomes, one row per judgment, with columns ``item``, ``a`` and
``b`` (the two models compared) and ``outcome``: ``"a"`` (a chosen), ``"b"``, ``"both"``
(both equally good) or ``"neither"``. Pure pandas/numpy/scipy; no ORM. ``docs/statistics.md``
states the conventions:

- the A:B ratio is wins of A over B divided by wins of B over A (ED, Rashkin et al. 2019,
  Figure 5); "both" and "neither" count in neither side;
- the sign test is the two-sided exact binomial test of A's wins among decisive judgments;
- Bradley–Terry counts "both" as half a win each way and leaves "neither" out (it says
  nothing about which is better; its rate is reported separately); strengths are Firth's
  penalised estimates, finite and nearly unbiased even when a model never loses (each pair
  that met may also get ``prior`` virtual wins each way; 0 by default); CIs are Wald
  intervals from the model's information widened by the design effect of items and raters;
- strengths are only comparable within a connected component of the comparison graph (models
  as nodes, an edge for every pair with an "a", "b" or "both" judgment): ``bradley_terry``
  refuses data with several components (``DisconnectedComparisons``), and
  ``bradley_terry_components`` ranks within each one.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy import stats
from scipy.sparse import coo_array
from scipy.sparse.csgraph import connected_components
from scipy.stats import binomtest

from evalstats import uncertainty
from evalstats.options import report_options
from evalstats.sandwich import design_effect

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
WIN_COLUMNS = ["model_a", "model_b", "decisive", "win_rate", "ci_low", "ci_high", "ci_method"]
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
    canonical = pd.DataFrame(
        {
            "item": outcomes["item"],
            "a": outcomes["a"].where(~flip, outcomes["b"]),
            "b": outcomes["b"].where(~flip, outcomes["a"]),
            "outcome": outcomes["outcome"].where(~flip, swapped),
        }
    )
    if "rater" in outcomes:
        canonical["rater"] = outcomes["rater"]
    return canonical


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


def win_rates(outcomes: pd.DataFrame, *, level: float | None = None) -> pd.DataFrame:
    """Return per model pair the share of decisive judgments won by ``model_a``, with a CI.

    Decisive judgments are "a" or "b" (as in the A:B ratio: win_rate = r / (1 + r)). Items
    (a context with its two responses, judged by one or more workers) are crossed with the
    workers, who may judge many items of the pair and prefer one side: the interval is
    ``uncertainty.crossed_mean``'s for a proportion (docs/statistics.md). Without a ``rater``
    column every judgment counts as a worker of its own. ``level`` defaults to the report
    options'; their method "independent" takes every judgment as its own item and worker.
    """
    options = report_options()
    level = options.level if level is None else level
    if outcomes.empty:
        return pd.DataFrame(columns=WIN_COLUMNS)
    data = _canonical(outcomes)
    data["rater"] = outcomes["rater"] if "rater" in outcomes else np.arange(len(data))
    if options.method == "independent":
        data = data.assign(item=np.arange(len(data)), rater=np.arange(len(data)))
    decisive = data[data["outcome"].isin(["a", "b"])]
    decisive = decisive.assign(value=(decisive["outcome"] == "a").astype(float), pair=0)
    rows = []
    for (a, b), part in decisive.groupby(["a", "b"], sort=True):
        by_item = part.groupby("item")["value"].agg(["mean", "size"])
        effects = uncertainty.rater_effects(part, group="pair")
        est = uncertainty.crossed_mean(
            by_item["mean"],
            uncertainty.mean_slopes(part),
            effects,
            weights=by_item["size"],
            level=level,
            proportion=True,
        )
        rows.append(
            {
                "model_a": a,
                "model_b": b,
                "decisive": len(part),
                "win_rate": est.value,
                "ci_low": est.low,
                "ci_high": est.high,
                "ci_method": est.method,
            }
        )
    return pd.DataFrame(rows, columns=WIN_COLUMNS)


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


def _information(
    strength: np.ndarray, games: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return each pair's binomial weight (games x p x q), the Fisher information of the
    log-strengths and its pseudo-inverse on the mean-0 strengths (the information never
    sees a shift of all strengths; adding that direction makes it invertible)."""
    k = len(strength)
    p = 1.0 / (1.0 + np.exp(strength[None, :] - strength[:, None]))
    weight = games * p * p.T
    info = np.diag(weight.sum(axis=1)) - weight
    centre = np.full((k, k), 1.0 / k)
    return weight, info, np.linalg.inv(info + centre) - centre


def _fit_firth(wins: np.ndarray, *, tol: float = 1e-10, max_iter: int = 200) -> np.ndarray:
    """Fit Bradley–Terry by Firth's penalised likelihood; return log-strengths of mean 0.

    The penalty, half the log-determinant of the information (Jeffreys' prior), removes the
    maximum likelihood's first-order bias and keeps every strength finite, also a model's
    that never lost. As in logistic regression (Firth 1993; Heinze & Schemper 2002), the
    penalised score is the plain one on data where each pair gains half its leverage as a
    win each way; Newton steps on that augmented likelihood reach the penalised maximum.
    The models of ``wins`` must form one connected comparison graph.
    """
    k = len(wins)
    games = wins + wins.T
    strength = np.zeros(k)
    centre = np.full((k, k), 1.0 / k)
    for _ in range(max_iter):
        weight, _, inverse = _information(strength, games)
        diagonal = np.diag(inverse)
        leverage = weight * (diagonal[:, None] + diagonal[None, :] - 2 * inverse)
        np.fill_diagonal(leverage, 0.0)
        p = 1.0 / (1.0 + np.exp(strength[None, :] - strength[:, None]))
        gradient = (wins + leverage / 2).sum(axis=1) - ((games + leverage) * p).sum(axis=1)
        augmented = (games + leverage) * p * p.T
        hessian = np.diag(augmented.sum(axis=1)) - augmented
        step = np.clip(np.linalg.solve(hessian + centre, gradient), -2.0, 2.0)
        strength = strength + step
        strength -= strength.mean()
        if np.max(np.abs(step)) < tol:
            break
    return strength


def _variances(
    strength: np.ndarray,
    games: np.ndarray,
    judged: tuple[np.ndarray, np.ndarray, np.ndarray],
    clusters: list[np.ndarray],
    contrasts: np.ndarray,
) -> np.ndarray:
    """Return the variance of each contrast (rows of ``contrasts``) of the log-strengths.

    The model's variance (the inverse information) is widened by the design effect of
    ``clusters`` (codes per judgment: items, raters): the ratio of the cluster-robust sandwich
    variance to the one that takes every judgment as independent, floored at 1. With two
    clusterings the robust one is Cameron, Gelbach & Miller's two-way sandwich (items +
    raters - items within raters). Judgments of one item, or by one rater, that agree more
    than chance widen the interval; the model's own variance stays the base, because a
    sandwich alone is too small when a model wins almost always (docs/statistics.md).
    """
    _, _, inverse = _information(strength, games)
    model = np.einsum("ci,ij,cj->c", contrasts, inverse, contrasts)
    if not clusters:
        return model
    ia, ib, score = judged
    residual = score - 1.0 / (1.0 + np.exp(strength[ib] - strength[ia]))
    # Each judgment's score on the contrasts: (score - p) (e_a - e_b), through I+.
    lever = (contrasts @ inverse).T  # k x c
    # judgments x contrasts, built in place: at 10^6 judgments each temporary is 80 MB.
    own = lever[ia]
    own -= lever[ib]
    own *= residual[:, None]
    return model * design_effect(own, clusters)


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


def bradley_terry(outcomes: pd.DataFrame, *, prior: float = 0.0) -> pd.DataFrame:
    """Rank models by Bradley–Terry log-strength (mean 0) with design-aware 95% CIs.

    Strengths are Firth's penalised estimates (``_fit_firth``) on the decided judgments plus
    ``prior`` virtual wins each way per pair that met (0: none). The CIs are Wald intervals
    at the report's level from the model's information, widened by the design effect of items
    and of raters when ``outcomes`` has a ``rater`` column (``_variances``; none under the
    report option ``method="independent"``). Returns the BT_COLUMNS, best first: ``win_rate``
    counts "both" as half a win over all non-"neither" judgments, ``neither_rate`` is the
    share of "neither" among all of the model's judgments. Raises ``DisconnectedComparisons``
    when the comparison graph has several components: their strengths have no common scale,
    so one ranking of all the models would order the groups arbitrarily (use
    ``bradley_terry_components``).
    """
    if prior < 0:
        raise ValueError("the prior must be >= 0")
    if outcomes.empty:
        return pd.DataFrame(columns=BT_COLUMNS)
    components = comparison_components(outcomes)
    if len(components) > 1:
        raise DisconnectedComparisons(components)
    return _bradley_terry_connected(_canonical(outcomes), components[0], prior=prior)


def bradley_terry_components(outcomes: pd.DataFrame, *, prior: float = 0.0) -> list[pd.DataFrame]:
    """Return one Bradley–Terry ranking per component of the comparison graph, largest first.

    Each table is ``bradley_terry`` on that component's judgments alone: log-strengths with
    mean 0 within the component, ranks from 1, its own CIs. A model judged only "neither"
    gets a one-row table with no strength and no rank.
    """
    if prior < 0:
        raise ValueError("the prior must be >= 0")
    if outcomes.empty:
        return []
    data = _canonical(outcomes)
    return [
        _bradley_terry_connected(data, component, prior=prior)
        for component in comparison_components(outcomes)
    ]


def bt_estimate(
    ia: np.ndarray,
    ib: np.ndarray,
    score: np.ndarray,
    *,
    k: int,
    prior: float,
    clusters: list[np.ndarray],
    contrasts: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Return the log-strengths of ``k`` connected models and each contrast's variance.

    ``ia``, ``ib`` index the models of each decided judgment, ``score`` is 1 (a won), 0 or
    0.5 (both); ``clusters`` holds codes per judgment (items, raters) for the design effect
    (none: the model's variance alone). See ``bradley_terry``; the planner calls it too.
    """
    met = _wins(ia, ib, np.ones(len(score)), k) > 0
    wins = _wins(ia, ib, score, k) + prior * (met | met.T)
    strength = _fit_firth(wins)
    return strength, _variances(strength, wins + wins.T, (ia, ib, score), clusters, contrasts)


def _bradley_terry_connected(
    data: pd.DataFrame, models: list[str], *, prior: float
) -> pd.DataFrame:
    """Fit and rank one connected component, ``models``, from the canonical outcomes
    (see ``bradley_terry``). The fit uses the decided judgments among ``models``; ``n`` and
    the rates count every judgment of each model ("neither" ones may cross components)."""
    index = {m: i for i, m in enumerate(models)}
    inside = data["a"].isin(index) & data["b"].isin(index)
    decided = data[inside & (data["outcome"] != "neither")]
    k = len(models)
    if decided.empty:  # a model judged only "neither": nothing to fit
        point = low = high = np.full(k, np.nan)
        score = np.empty(0)
    else:
        ia = pd.Index(models).get_indexer(decided["a"]).astype(np.int64)
        ib = pd.Index(models).get_indexer(decided["b"]).astype(np.int64)
        score = _lookup(decided["outcome"], {"a": 1.0, "b": 0.0, "both": 0.5}).to_numpy(float)
        options = report_options()
        clusters = []
        if options.method == "design":
            clusters = [
                pd.factorize(decided[c].astype(str))[0] for c in ("item", "rater") if c in decided
            ]
        point, variances = bt_estimate(
            ia, ib, score, k=k, prior=prior, clusters=clusters, contrasts=np.eye(k)
        )
        z = float(stats.norm.ppf(0.5 + options.level / 2))
        low, high = point - z * np.sqrt(variances), point + z * np.sqrt(variances)

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
