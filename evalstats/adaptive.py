"""Adaptive pair allocation: which model pairs new judgments go to (pure numpy, no ORM).

A campaign whose items compare two models (``protocols.base.ModelPairs``) may ask for
``allocation: "adaptive"``. From the pair win counts so far, ``pair_weights`` gives every model
pair the probability that the ranking orders it wrongly: a Bradley–Terry fit (ties half a
win each way, "neither" left out, ``PRIOR`` virtual wins each way per pair that met, which
keeps strengths finite while a pair has only won one way) and a normal approximation of the
difference of two strengths, whose variance comes from the Fisher information of every
comparison made, so a pair decided through other pairs (A ≫ B ≫ C decides A vs C) needs no
judgment of its own. Each new judgment's pair is drawn with probability proportional to the
square of these probabilities (``draw``), so uncertain pairs get more judgments and decided
ones few; a pair below ``adaptive_min_per_pair`` judgments comes first, so none is left
uncompared. The weights are recomputed every ``refresh_interval`` judgments (a share of
those made, so the cost of refreshing stays a constant per judgment).

The same functions drive the allocation (``annotation.steering``) and the simulation below,
which ``bench/adaptive.py`` and the tests use: what the benchmark measures is what ships.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.sparse.csgraph import connected_components
from scipy.special import expit, ndtr

from evalstats import ranking

# Virtual wins each way per pair that met, in the allocation's own fit (not the report's
# ``bt_prior``: the weights must stay finite whatever the report is set to show).
PRIOR = 0.5
# Weights are refreshed after this many judgments, or this share of those made if more.
REFRESH_MIN = 20
REFRESH_SHARE = 0.05
# The stopping rule's default: every adjacent pair below this probability of a wrong order.
SETTLED = 0.05


def allocation_note(parameters: Mapping[str, Any]) -> str:
    """Return the report's note on how judgments were allocated to the model pairs (for the
    report of any ``ModelPairs`` protocol)."""
    if parameters.get("allocation") != "adaptive":
        return (
            "Allocation: uniform (every item judged in turn, fewest judgments first), so the "
            "pairs' numbers of judgments differ only by their numbers of items."
        )
    return (
        "Allocation: adaptive. New judgments were steered to the model pairs whose order was "
        f"least certain, after {parameters['adaptive_min_per_pair']} judgments per pair "
        "(docs/protocols.md, 'Adaptive allocation'), so the pairs' numbers of judgments (n) "
        "differ by design: decided pairs have few. The Bradley–Terry strengths use every "
        "judgment as stored; which pair came next depended only on earlier judgments, so the "
        "likelihood is a fixed design's, and in simulations with known strengths their "
        "intervals covered about as often as under uniform allocation. The raw win rates and "
        "A:B ratios are not corrected for the steering: a pair whose judgments looked decided "
        "was starved, so they lean toward the winner (by about 0.03 for adjacent models in "
        "simulations), and a model's pooled win rate weights its opponents by how often they "
        "were drawn; the corrected rates use each pair's first "
        f"{parameters['adaptive_min_per_pair']} judgments, made before steering began "
        "(docs/protocols.md, 'Adaptive allocation')."
    )


def refresh_interval(judged: int) -> int:
    """Return after how many more judgments the weights are recomputed, ``judged`` made."""
    return max(REFRESH_MIN, math.ceil(REFRESH_SHARE * judged))


def wrong_order(wins: np.ndarray, *, prior: float = PRIOR) -> np.ndarray:
    """Return k x k: the probability that the Bradley–Terry ranking orders i and j wrongly.

    ``wins[i, j]`` is how often i beat j (ties half each way). Normal approximation: the
    fitted difference over its standard error from the pseudo-inverse of the Fisher
    information of all comparisons (virtual ones too), Φ(-|Δ| / se). Pairs of models in
    different components of the comparison graph, or never compared at all, get 0.5.
    """
    return _wrong_order(wins, prior)[0]


def _wrong_order(wins: np.ndarray, prior: float) -> tuple[np.ndarray, np.ndarray]:
    """Return ``wrong_order``'s matrix and the fitted log-strengths it compares."""
    k = len(wins)
    games = wins + wins.T
    met = games > 0
    virtual = prior * met
    played = games + 2 * virtual
    out = np.full((k, k), 0.5)
    np.fill_diagonal(out, 0.0)
    if not met.any():
        return out, np.zeros(k)
    strength = np.nan_to_num(ranking._fit(wins + virtual))
    q = expit(strength[:, None] - strength[None, :])
    w = played * q * (1 - q)
    info = np.diag(w.sum(axis=1)) - w
    cov = np.linalg.pinv(info)
    var = np.diag(cov)[:, None] + np.diag(cov)[None, :] - 2 * cov
    labels = _components(met)
    same = labels[:, None] == labels[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.abs(strength[:, None] - strength[None, :]) / np.sqrt(np.maximum(var, 1e-12))
    out = np.where(same, ndtr(-z), 0.5)
    np.fill_diagonal(out, 0.0)
    return out, strength


def _components(met: np.ndarray) -> np.ndarray:
    """Return each model's component label in the graph of pairs that met."""
    return connected_components(met.astype(np.int8), directed=False)[1]


def pair_weights(
    wins: np.ndarray,
    judged: np.ndarray,
    available: np.ndarray,
    *,
    floor: int,
    prior: float = PRIOR,
) -> np.ndarray:
    """Return k x k (upper triangle) weights of the pairs new judgments should go to.

    ``judged[i, j]`` counts the pair's judgments of any outcome ("neither" too), symmetric;
    ``available[i, j]`` says whether the pair has items open. While an available pair has
    fewer than ``floor`` judgments, only such pairs get weight (1 each); then each pair's
    weight is its ``wrong_order`` probability. All zero: nothing is open.
    """
    upper = np.triu(available.astype(bool), 1)
    below = upper & (np.triu(judged, 1) < floor)
    if below.any():
        return below.astype(float)
    # Squared: steering harder to the least certain pairs took fewer judgments for the same
    # ranking accuracy in bench/adaptive.py than the probability itself (docs/protocols.md).
    return np.where(upper, wrong_order(wins, prior=prior) ** 2, 0.0)


@dataclass(frozen=True)
class Settled:
    """The stopping rule's verdict (``ranking_settled``): ``settled`` when every adjacent pair
    of the current ranking has P(wrong order) below the threshold, ``worst`` the largest of
    those probabilities, ``pair`` its two models (better first), ``total`` their sum (a
    bound, by the union bound, on the chance that the ranking has an error somewhere)."""

    settled: bool
    worst: float
    pair: tuple[int, int]
    total: float


def ranking_settled(
    wins: np.ndarray, *, threshold: float = SETTLED, prior: float = PRIOR
) -> Settled:
    """Return whether the ranking is settled: every adjacent pair of the models ordered by
    the allocation's Bradley–Terry fit has ``wrong_order`` probability below ``threshold``.

    A ranking is right exactly when each adjacent pair is, so adjacent pairs suffice. The
    probabilities are the normal approximation's; stopping when they first look small is
    optional stopping, so the rule's accuracy is measured, not promised (bench/adaptive.py).
    Stop when this says settled or the budget is spent, whichever comes first.
    """
    k = len(wins)
    if k < 2:
        return Settled(True, 0.0, (0, 0), 0.0)
    wrong, strength = _wrong_order(wins, prior)
    order = np.argsort(-strength, kind="stable")
    adjacent = np.array([wrong[order[n], order[n + 1]] for n in range(k - 1)])
    at = int(np.argmax(adjacent))
    return Settled(
        bool(adjacent.max() < threshold),
        float(adjacent[at]),
        (int(order[at]), int(order[at + 1])),
        float(adjacent.sum()),
    )


def draw(weights: np.ndarray, u: float) -> int | None:
    """Return the flat index of the pair drawn with probability proportional to its weight,
    given a uniform number ``u`` in [0, 1); None when every weight is zero."""
    cumulative = np.cumsum(np.ravel(weights))
    if not len(cumulative) or cumulative[-1] <= 0:
        return None
    at = int(np.searchsorted(cumulative, u * cumulative[-1], side="right"))
    return min(at, len(cumulative) - 1)


# --- Simulated crowds with known strengths (bench/adaptive.py, tests) -----------------------


@dataclass(frozen=True)
class Crowd:
    """A simulated A/B campaign: every pair of models with ``items_per_pair`` items (contexts)
    judged at most ``redundancy`` times, as ``planner.pairs.BTDesign`` simulates it: a
    judgment is "both" or "neither" with the given shares, else chooses model i over j with
    probability expit(s_i - s_j + the item's N(0, sd_item) shift)."""

    strengths: tuple[float, ...]
    items_per_pair: int = 100
    redundancy: int = 3
    both: float = 0.1
    neither: float = 0.1
    sd_item: float = 0.3

    @property
    def models(self) -> int:
        return len(self.strengths)


@dataclass
class Stream:
    """One pair's judgments in the order the allocation hands its items out (every item once,
    fewest claims first, then again): item ids and scores (1 i won, 0 j won, 0.5 both, NaN
    neither)."""

    item: np.ndarray
    score: np.ndarray
    used: int = 0


def crowd_streams(crowd: Crowd, rng: np.random.Generator) -> dict[tuple[int, int], Stream]:
    """Simulate every judgment each pair could get, in the order allocation gives them."""
    s = np.asarray(crowd.strengths, dtype=float)
    n, r = crowd.items_per_pair, crowd.redundancy
    streams: dict[tuple[int, int], Stream] = {}
    for number, (i, j) in enumerate(_pairs(crowd.models)):
        shift = rng.normal(0.0, crowd.sd_item, n)
        order = np.concatenate([rng.permutation(n) for _ in range(r)])  # level by level
        won = rng.random(n * r) < expit(s[i] - s[j] + shift[order])
        tie = rng.random(n * r)
        score = np.where(tie < crowd.both, 0.5, won.astype(float))
        score = np.where((tie >= crowd.both) & (tie < crowd.both + crowd.neither), np.nan, score)
        streams[(i, j)] = Stream(item=number * n + order, score=score)
    return streams


def _pairs(k: int) -> list[tuple[int, int]]:
    return [(i, j) for i in range(k) for j in range(i + 1, k)]


@dataclass
class Run:
    """What a simulated campaign collected: judgments in order (pair, item, score)."""

    a: list[int] = field(default_factory=list)
    b: list[int] = field(default_factory=list)
    item: list[int] = field(default_factory=list)
    score: list[float] = field(default_factory=list)

    def arrays(self, upto: int | None = None) -> tuple[np.ndarray, ...]:
        end = len(self.a) if upto is None else upto
        return (
            np.asarray(self.a[:end], dtype=np.int64),
            np.asarray(self.b[:end], dtype=np.int64),
            np.asarray(self.item[:end], dtype=np.int64),
            np.asarray(self.score[:end], dtype=float),
        )


def counts(a: np.ndarray, b: np.ndarray, score: np.ndarray, k: int) -> tuple[np.ndarray, ...]:
    """Return (wins, judged) k x k from judgments: ties half, "neither" (NaN) only judged."""
    decided = ~np.isnan(score)
    wins = ranking._wins(a[decided], b[decided], score[decided], k)
    judged = np.zeros((k, k))
    np.add.at(judged, (a, b), 1.0)
    return wins, judged + judged.T


def simulate(
    crowd: Crowd,
    streams: Mapping[tuple[int, int], Stream],
    *,
    allocation: str,
    budget: int,
    floor: int,
    rng: np.random.Generator,
    prior: float = PRIOR,
) -> Run:
    """Collect ``budget`` judgments from ``streams`` as the campaign's allocation would.

    Uniform: the items of all pairs in turn, fewest claims first (pairs equally often, in
    random order). Adaptive: weights from ``pair_weights`` on the judgments so far, refreshed
    every ``refresh_interval`` judgments; each judgment's pair drawn from them.
    """
    k = crowd.models
    for stream in streams.values():
        stream.used = 0
    run = Run()
    pairs = list(streams)
    if allocation == "uniform":
        order: list[tuple[int, int]] = []
        while len(order) < budget:
            order += [pairs[x] for x in rng.permutation(len(pairs))]
        for pair in order[:budget]:
            _take(run, pair, streams[pair])
        return run
    weights = np.zeros((k, k))
    due = 0
    while len(run.a) < budget:
        if len(run.a) >= due:
            a, b, _, score = run.arrays()
            wins, judged = counts(a, b, score, k)
            open_ = np.zeros((k, k), dtype=bool)
            for (i, j), stream in streams.items():
                open_[i, j] = stream.used < len(stream.score)
            weights = pair_weights(wins, judged, open_, floor=floor, prior=prior)
            due = len(run.a) + refresh_interval(len(run.a))
        at = draw(weights, float(rng.random()))
        pair = divmod(at, k) if at is not None else (0, 0)
        if pair not in streams or streams[pair].used >= len(streams[pair].score):
            open_pairs = [p for p in pairs if streams[p].used < len(streams[p].score)]
            if not open_pairs:
                break
            pair = open_pairs[int(rng.integers(len(open_pairs)))]  # the uniform fallback
        _take(run, pair, streams[pair])
    return run


def _take(run: Run, pair: tuple[int, int], stream: Stream) -> None:
    run.a.append(pair[0])
    run.b.append(pair[1])
    run.item.append(int(stream.item[stream.used]))
    run.score.append(float(stream.score[stream.used]))
    stream.used += 1


def order_accuracy(strengths: Sequence[float], fitted: np.ndarray) -> float:
    """Return the share of model pairs the fitted strengths order as the true ones do (the
    share of correctly ordered pairs, not a rank correlation: with no ties Kendall's tau is
    2 x this - 1)."""
    true = np.asarray(strengths, dtype=float)
    pairs = _pairs(len(true))
    right = [np.sign(fitted[i] - fitted[j]) == np.sign(true[i] - true[j]) for i, j in pairs]
    return float(np.mean(right))


def fit(
    a: np.ndarray, b: np.ndarray, score: np.ndarray, k: int, prior: float = PRIOR
) -> np.ndarray:
    """Return Bradley–Terry log-strengths (Hunter's MM, ``prior`` virtual wins each way per
    pair that met) from simulated judgments: the point estimates the benchmark ranks by."""
    wins, _ = counts(a, b, score, k)
    met = (wins + wins.T) > 0
    return np.nan_to_num(ranking._fit(wins + prior * met))


def stop_at(run: Run, k: int, *, budget: int | None = None, threshold: float = SETTLED) -> int:
    """Return after how many judgments a campaign collecting ``run`` stops: the first plan
    refresh (every ``refresh_interval`` judgments, where the campaign recomputes the weights
    and so can check the rule) at which ``ranking_settled`` says settled, else the budget
    (the run's length when None). Stopping only truncates the run: the judgments before it
    are the same whether or not the rule is applied."""
    end = len(run.a) if budget is None else min(budget, len(run.a))
    a, b, _, score = run.arrays(end)
    n = refresh_interval(0)
    while n < end:
        wins, _ = counts(a[:n], b[:n], score[:n], k)
        if ranking_settled(wins, threshold=threshold).settled:
            return n
        n += refresh_interval(n)
    return end
