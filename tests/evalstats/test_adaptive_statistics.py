"""Adaptive allocation and the report's statistics, on simulated crowds with known strengths.

Steering makes each pair's number of judgments depend on the judgments so far. The
likelihood does not change (the estimates stay valid), but the report's intervals are
computed as if those numbers had been fixed in advance: these tests check by simulation that
they still cover the true values, and that steering reaches the ranking sooner.
"""

import functools

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit
from scipy.stats import norm

from evalstats import adaptive, adaptive_rates, ranking

# Five models 0.25 apart in log-strength; no item effect, so a pair's true win rate among
# decisive judgments is exactly expit(s_i - s_j).
STRENGTHS = (0.0, 0.25, 0.5, 0.75, 1.0)
CROWD = adaptive.Crowd(strengths=STRENGTHS, items_per_pair=100, redundancy=3, sd_item=0.0)

pytestmark = pytest.mark.slow


def _frame(run: adaptive.Run) -> pd.DataFrame:
    a, b, item, score = run.arrays()
    outcome = np.where(
        np.isnan(score), "neither", np.where(score == 0.5, "both", np.where(score == 1, "a", "b"))
    )
    names = np.array([f"m{i}" for i in range(CROWD.models)])
    return pd.DataFrame(
        {"item": item, "rater": np.arange(len(a)), "a": names[a], "b": names[b], "outcome": outcome}
    )


@functools.cache  # the tests share the simulated campaigns (each takes a while)
def _runs(allocation: str, crowds: int, budget: int) -> list[adaptive.Run]:
    runs = []
    for c in range(crowds):
        streams = adaptive.crowd_streams(CROWD, np.random.default_rng([7, c]))
        rng = np.random.default_rng([7, c, 1])
        runs.append(
            adaptive.simulate(
                CROWD, streams, allocation=allocation, budget=budget, floor=10, rng=rng
            )
        )
    return runs


def _win_rate_coverage(runs: list[adaptive.Run]) -> tuple[float, float]:
    """Return the share of 95% win-rate intervals covering the truth: all, and those of
    pairs with fewer than 20 decisive judgments (the ones steering left at the floor)."""
    hits, few = [], []
    for run in runs:
        for row in ranking.win_rates(_frame(run)).itertuples():
            i, j = int(row.model_a[1:]), int(row.model_b[1:])
            hit = row.ci_low <= expit(STRENGTHS[i] - STRENGTHS[j]) <= row.ci_high
            hits.append(hit)
            if row.decisive < 20:
                few.append(hit)
    return float(np.mean(hits)), float(np.mean(few)) if few else float("nan")


def test_win_rate_intervals_still_cover_the_true_rates_under_adaptive_allocation():
    uniform, _ = _win_rate_coverage(_runs("uniform", 20, 500))
    steered, few = _win_rate_coverage(_runs("adaptive", 20, 500))
    assert uniform >= 0.92  # the reference: the intervals' own coverage here
    assert steered >= 0.92
    assert steered >= uniform - 0.03
    assert few >= 0.9  # pairs left at the floor are not the ones that miss


def test_bradley_terry_intervals_cover_about_as_often_under_adaptive_allocation():
    truth = np.array(STRENGTHS) - np.mean(STRENGTHS)
    coverage = {}
    for allocation in ("uniform", "adaptive"):
        hits = []
        for run in _runs(allocation, 20, 500):
            table = ranking.bradley_terry(_frame(run))  # the report's intervals
            for row in table.itertuples():
                hits.append(row.ci_low <= truth[int(row.model[1:])] <= row.ci_high)
        coverage[allocation] = float(np.mean(hits))
    assert coverage["adaptive"] >= 0.85
    assert coverage["adaptive"] >= coverage["uniform"] - 0.05


def test_adaptive_allocation_orders_the_models_right_with_fewer_judgments():
    def accuracy(allocation: str, budget: int) -> float:
        return float(
            np.mean(
                [
                    adaptive.order_accuracy(STRENGTHS, adaptive.fit(*_abs(run), CROWD.models))
                    for run in _runs(allocation, 30, budget)
                ]
            )
        )

    # bench/adaptive.py measures the saving at equal accuracy (8 models and 4).
    assert accuracy("adaptive", 350) > accuracy("uniform", 350)
    assert accuracy("adaptive", 500) > accuracy("uniform", 500)


def _abs(run: adaptive.Run) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    a, b, _, score = run.arrays()
    return a, b, score


# --- Corrected win rates (evalstats.adaptive_rates) ----------------------------------------

PAIRS = [(i, j) for i in range(CROWD.models) for j in range(i + 1, CROWD.models)]
ADJACENT = np.array([j == i + 1 for i, j in PAIRS])


def _pair_bias(runs: list[adaptive.Run], first: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Return per crowd and pair the bias toward the better model of the raw decisive share
    and of the corrected one, against the exact truth expit(s_j - s_i) (no item effect)."""
    names = [(f"m{i}", f"m{j}") for i, j in PAIRS]
    truth = np.array([expit(STRENGTHS[i] - STRENGTHS[j]) for i, j in PAIRS])  # i the weaker
    raw, corrected = [], []
    for run in runs:
        rates = adaptive_rates.pair_rates(_frame(run), first=first).set_index(
            ["model_a", "model_b"]
        )
        raw.append(truth - rates.loc[names, "win_rate"].to_numpy(float))
        corrected.append(truth - rates.loc[names, "corrected"].to_numpy(float))
    return np.array(raw), np.array(corrected)


# Per-pair shares are noisy (sd about 0.05 per crowd): 40 crowds put the Monte-Carlo standard
# error of a mean bias near 0.006, against the 0.025 the steering adds to the raw share.
RATE_CROWDS = 40


def test_raw_pair_shares_lean_to_the_winner_under_adaptive_allocation_and_corrected_do_not():
    raw, corrected = _pair_bias(_runs("adaptive", RATE_CROWDS, 500), first=10)
    uniform, _ = _pair_bias(_runs("uniform", RATE_CROWDS, 500), first=None)
    raw_adjacent = raw[:, ADJACENT].mean(axis=1)
    assert raw_adjacent.mean() > 0.015  # the steering's optional-stopping bias
    # Paired on the same simulated judgments: what the steering alone adds.
    assert (raw_adjacent - uniform[:, ADJACENT].mean(axis=1)).mean() > 0.015
    assert abs(corrected[:, ADJACENT].mean()) < 0.015
    assert abs(corrected.mean()) < 0.02


def test_under_uniform_allocation_raw_and_corrected_shares_are_both_unbiased():
    raw, corrected = _pair_bias(_runs("uniform", RATE_CROWDS, 500), first=None)
    assert abs(raw[:, ADJACENT].mean()) < 0.015
    assert abs(corrected[:, ADJACENT].mean()) < 0.015


def test_corrected_model_rates_lean_less_than_pooled_ones_under_adaptive_allocation():
    # "both" 10% as half a win, "neither" 10% left out: a pair's score share among decided.
    s = np.array(STRENGTHS)
    share = (CROWD.both / 2 + (1 - CROWD.both - CROWD.neither) * expit(s[:, None] - s)) / (
        1 - CROWD.neither
    )
    np.fill_diagonal(share, np.nan)
    truth = np.nanmean(share, axis=1)  # uniform allocation's estimand: opponents equally
    names = [f"m{i}" for i in range(CROWD.models)]
    raw, corrected = [], []
    for run in _runs("adaptive", RATE_CROWDS, 500):
        table = adaptive_rates.model_rates(_frame(run), first=10).set_index("model").loc[names]
        raw.append(table["win_rate"].to_numpy(float) - truth)
        corrected.append(table["corrected"].to_numpy(float) - truth)
    raw_bias, corrected_bias = np.mean(raw, axis=0), np.mean(corrected, axis=0)
    # The extreme models' close opponents were drawn most: their pooled rates lean to 0.5.
    assert raw_bias[0] > 0.02 and raw_bias[-1] < -0.02
    # Corrected: Firth's shrinkage on each pair's 10 first judgments leaves the extreme models
    # about 0.01-0.02 toward 0.5 (Monte-Carlo se about 0.01 here).
    assert np.abs(corrected_bias).max() < 0.03
    assert np.abs(corrected_bias).max() < np.abs(raw_bias).max()


def test_corrected_rate_of_two_models_is_firths_proportion_of_the_first_judgments():
    # Two models: Firth's Bradley–Terry estimate is the logit of (wins + 1/2) / (n + 1).
    outcome = ["a", "a", "b", "both", "a", "neither", "b", "b", "b", "b"]
    data = pd.DataFrame(
        {"item": range(10), "a": "x", "b": "y", "outcome": outcome, "rater": range(10)}
    )
    everything = adaptive_rates.pair_rates(data, first=None).iloc[0]
    assert everything["win_rate"] == pytest.approx(3 / 8)
    assert everything["corrected"] == pytest.approx((3 + 0.5) / (8 + 1))
    first = adaptive_rates.pair_rates(data, first=5).iloc[0]  # a a b both a: 3 of 4 decisive
    assert first["win_rate"] == pytest.approx(3 / 8)  # the raw share keeps every judgment
    assert first["corrected"] == pytest.approx((3 + 0.5) / (4 + 1))
    assert first["ratio_corrected"] == pytest.approx(3.5 / 1.5)


def test_first_judgments_count_per_unordered_pair_in_order_of_submission():
    a = np.array([0, 1, 0, 2, 1, 0])
    b = np.array([1, 0, 2, 0, 0, 2])
    assert adaptive_rates.first_mask(a, b, 2).tolist() == [True, True, True, True, False, False]
    assert adaptive_rates.first_judgments({"allocation": "uniform"}) is None
    assert (
        adaptive_rates.first_judgments({"allocation": "adaptive", "adaptive_min_per_pair": 7}) == 7
    )


# --- The stopping rule ---------------------------------------------------------------------


def test_the_stopping_probability_of_two_models_is_the_normal_approximation():
    wins = np.array([[0.0, 55.0], [45.0, 0.0]])
    verdict = adaptive.ranking_settled(wins, threshold=0.05)
    a, b = 55 + adaptive.PRIOR, 45 + adaptive.PRIOR  # the allocation's virtual wins
    expected = float(norm.cdf(-np.log(a / b) / np.sqrt(1 / a + 1 / b)))
    assert verdict.worst == pytest.approx(expected, rel=1e-6)
    assert verdict.pair == (0, 1) and not verdict.settled
    assert adaptive.ranking_settled(wins * 10, threshold=0.05).settled


def test_the_ranking_is_settled_only_when_every_adjacent_pair_is():
    # 2 beats 1 and 0 by far; 1 and 0 are close: the ranking 2 > 1 > 0 hinges on (1, 0).
    wins = np.array([[0.0, 48.0, 5.0], [52.0, 0.0, 6.0], [95.0, 94.0, 0.0]])
    verdict = adaptive.ranking_settled(wins)
    assert not verdict.settled and verdict.pair == (1, 0)
    assert verdict.total >= verdict.worst
    wins[1, 0], wins[0, 1] = 90.0, 10.0
    assert adaptive.ranking_settled(wins).settled


def test_the_stopping_rule_stops_campaigns_before_the_budget_with_the_ranking_right():
    # Whether adaptive stops sooner depends on the strengths: bench/adaptive.py measures it.
    crowd = adaptive.Crowd(strengths=(0.0, 0.4, 0.8, 1.2), items_per_pair=60, sd_item=0.0)
    stops: dict[str, list[int]] = {"uniform": [], "adaptive": []}
    right = []
    for c in range(4):
        for allocation in stops:
            streams = adaptive.crowd_streams(crowd, np.random.default_rng([11, c]))
            run = adaptive.simulate(
                crowd,
                streams,
                allocation=allocation,
                budget=1080,
                floor=10,
                rng=np.random.default_rng([11, c, 1]),
            )
            at = adaptive.stop_at(run, crowd.models)
            stops[allocation].append(at)
            a, b, _, score = run.arrays(at)
            right.append(adaptive.order_accuracy(crowd.strengths, adaptive.fit(a, b, score, 4)))
    for allocation, at in stops.items():
        assert np.median(at) < 1080, allocation  # the rule, not the budget, stopped most
    assert np.mean(right) >= 0.95
