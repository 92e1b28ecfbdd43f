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

from evalstats import adaptive, ranking

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
