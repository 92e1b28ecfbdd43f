"""Tests of evalstats.uncertainty: design-aware intervals, checked by small simulations."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.multitest import multipletests

from evalstats import agreement, cluster_bootstrap, uncertainty


def _likert_study(
    rng: np.random.Generator, *, items: int, k: int, pool: int | None, sd_rater: float
) -> pd.DataFrame:
    """Ratings of two models' items by k raters each, from a pool or fresh raters."""
    frames = []
    lenient = rng.normal(0, sd_rater, pool or 1)
    for model, mu in (("model", 3.3), ("reference", 3.0)):
        if pool is None:
            raters = np.arange(items * k).reshape(items, k) + (0 if model == "model" else 10**6)
            b = rng.normal(0, sd_rater, raters.shape)
        else:
            raters = np.argsort(rng.random((items, pool)), axis=1)[:, :k]
            b = lenient[raters]
        x = mu + rng.normal(0, 0.6, (items, 1)) + b + rng.normal(0, 0.8, raters.shape)
        frames.append(
            pd.DataFrame(
                {
                    "item": np.repeat([f"{model}{i}" for i in range(items)], k),
                    "rater": raters.ravel(),
                    "value": x.ravel(),
                    "model": model,
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def _scores(data: pd.DataFrame, model: str) -> tuple[pd.Series, pd.Series]:
    part = data[data["model"] == model].groupby("item")["value"]
    return part.mean(), part.size()


def test_holm_equals_statsmodels() -> None:
    p = [0.01, 0.04, 0.03, 0.2, np.nan, 0.001]
    expected = multipletests([x for x in p if not np.isnan(x)], method="holm")[1]
    adjusted = uncertainty.holm(p)
    assert np.isnan(adjusted[4])
    assert np.delete(adjusted, 4) == pytest.approx(expected)


def test_with_fresh_raters_the_interval_is_the_t_interval_of_item_means() -> None:
    data = _likert_study(np.random.default_rng(1), items=40, k=3, pool=None, sd_rater=0.5)
    scores, _ = _scores(data, "model")
    effects = uncertainty.rater_effects(data, group="model")
    assert effects.tau[0, 0] == 0.0  # no rater judged two items
    est = uncertainty.crossed_mean(scores, uncertainty.mean_slopes(data), effects)
    assert est.value == pytest.approx(scores.mean())
    assert est.se == pytest.approx(scores.std() / np.sqrt(len(scores)))
    assert est.high - est.value == pytest.approx(2.0226909 * est.se, rel=1e-6)  # t, 39 df


def test_rater_effects_recover_the_leniency_variance() -> None:
    rng = np.random.default_rng(2)
    taus = [
        uncertainty.rater_effects(_likert_study(rng, items=150, k=3, pool=30, sd_rater=0.7)).tau[
            0, 0
        ]
        for _ in range(20)
    ]
    assert np.mean(taus) == pytest.approx(0.49, rel=0.15)


def test_crossed_variance_matches_the_simulated_spread_where_the_sem_does_not() -> None:
    """A pool of 10 raters with leniency sd 1: the SEM misses most of the error; we do not."""
    rng = np.random.default_rng(3)
    estimates, crossed_var, sem_var, covered = [], [], [], 0
    for _ in range(150):
        data = _likert_study(rng, items=60, k=3, pool=10, sd_rater=1.0)
        scores, n = _scores(data, "model")
        effects = uncertainty.rater_effects(data, group="model")
        est = uncertainty.crossed_mean(scores, uncertainty.mean_slopes(data), effects, weights=n)
        ratings = data.loc[data["model"] == "model", "value"]
        estimates.append(est.value)
        crossed_var.append(est.se**2)
        sem_var.append(ratings.var() / len(ratings))
        covered += est.low <= 3.3 <= est.high
    spread = np.var(estimates)
    assert np.mean(crossed_var) == pytest.approx(spread, rel=0.35)
    assert np.mean(sem_var) < 0.3 * spread
    assert covered >= 0.88 * 150


def test_a_contrast_cancels_the_raters_shared_by_both_models() -> None:
    rng = np.random.default_rng(4)
    diffs, ses, covered = [], [], 0
    for _ in range(100):
        data = _likert_study(rng, items=60, k=3, pool=10, sd_rater=1.0)
        a, na = _scores(data, "model")
        b, nb = _scores(data, "reference")
        effects = uncertainty.rater_effects(data, group="model")
        slopes = uncertainty.mean_slopes(data)
        diff = uncertainty.crossed_contrast(a, b, slopes, effects, weights_a=na, weights_b=nb)
        mean = uncertainty.crossed_mean(a, slopes, effects, weights=na)
        assert diff.se < mean.se  # the pool's leniency shifts both models alike
        diffs.append(diff.value)
        ses.append(diff.se)
        covered += diff.low <= 0.3 <= diff.high
    assert np.mean(np.square(ses)) == pytest.approx(np.var(diffs), rel=0.35)
    assert covered >= 88


def test_a_vote_is_pivotal_only_when_the_others_split_evenly() -> None:
    votes = pd.DataFrame(
        {
            "item": ["x"] * 5 + ["y"] * 5,
            "rater": list(range(5)) * 2,
            "value": [1, 1, 0, 0, 1, 1, 1, 1, 0, 0],
        }
    )
    # x: 3 yes; a yes vote's others are 2-2 (pivotal), a no vote's others are 3-1 (not).
    # y: 3 yes as well.
    assert uncertainty.majority_slopes(votes).tolist() == [1, 1, 0, 0, 1, 1, 1, 1, 0, 0]


def test_conversation_bootstrap_is_wider_than_the_turn_bootstrap_for_clustered_turns() -> None:
    rng = np.random.default_rng(5)
    turns = rng.integers(7, 15, 100)
    chat = np.repeat(np.arange(100), turns)
    p = 1 / (1 + np.exp(-(0.5 + rng.normal(0, 1.2, 100)[chat])))
    y = (rng.random(len(chat)) < p).astype(float)
    est = cluster_bootstrap.cluster_ratio_ci(np.bincount(chat, weights=y), turns, n_boot=2000)
    assert est.value == pytest.approx(y.mean())
    naive = np.quantile(y[rng.integers(0, len(y), (2000, len(y)))].mean(axis=1), [0.025, 0.975])
    assert est.high - est.low > 1.3 * (naive[1] - naive[0])
    one = cluster_bootstrap.cluster_ratio_ci(y, np.ones(len(y)), n_boot=2000)
    assert one.high - one.low == pytest.approx(naive[1] - naive[0], rel=0.15)


def test_dialogue_bootstrap_keeps_fleiss_kappa_and_widens_its_interval() -> None:
    rng = np.random.default_rng(6)
    lengths = rng.integers(5, 25, 80)
    dialogue = np.repeat(np.arange(80), lengths)
    accuracy = rng.beta(3, 3, 80)[dialogue]
    truth = rng.integers(0, 4, len(dialogue))
    table = np.zeros((len(dialogue), 4))
    for _ in range(5):
        vote = np.where(rng.random(len(dialogue)) < accuracy, truth, rng.integers(0, 4, len(truth)))
        np.add.at(table, (np.arange(len(dialogue)), vote), 1)
    est = cluster_bootstrap.fleiss_kappa_cluster_ci(table, dialogue, n_boot=1000)
    old = agreement.fleiss_kappa_ci(table, n_boot=1000)
    assert est.value == pytest.approx(agreement.fleiss_kappa(table))
    assert est.high - est.low > 1.2 * (old.high - old.low)


def test_mover_average_of_symmetric_intervals_is_the_averages_own_interval():
    """With symmetric components, MOVER gives value ± t se_average exactly, whatever their
    correlation (here recovered from se_average)."""
    t = 2.0
    first = uncertainty.Interval(0.6, 0.6 - t * 0.05, 0.6 + t * 0.05, 0.05, "x")
    second = uncertainty.Interval(0.3, 0.3 - t * 0.02, 0.3 + t * 0.02, 0.02, "x")
    for rho in (-0.5, 0.0, 0.8):
        se = np.sqrt(0.05**2 + 0.02**2 + 2 * rho * 0.05 * 0.02) / 2
        low, high = uncertainty.mover_average(first, second, se)
        assert (low, high) == pytest.approx((0.45 - t * se, 0.45 + t * se))


def test_mover_average_keeps_the_components_asymmetry_near_0_and_1():
    """Newcombe's (1998) hybrid score interval is MOVER on two Wilson intervals; here for an
    average: a share near 1 with a long lower side and one near 0 with a long upper side,
    uncorrelated, give the square roots of the sums of squares on each side."""
    high_share = uncertainty.Interval(0.98, 0.90, 0.995, 0.02, "Wilson")
    low_share = uncertainty.Interval(0.02, 0.005, 0.10, 0.02, "Wilson")
    se = np.sqrt(0.02**2 + 0.02**2) / 2  # uncorrelated
    low, high = uncertainty.mover_average(high_share, low_share, se)
    assert low == pytest.approx(0.5 - np.hypot(0.08, 0.015) / 2)
    assert high == pytest.approx(0.5 + np.hypot(0.015, 0.08) / 2)


def test_a_share_of_all_ones_is_not_widened_to_zero_by_rounding() -> None:
    # 400 items all labelled 1: the weighted mean is 1 - 1e-16 in floating point, whose
    # "effective size" p(1 - p) / se^2 was about 0 and the Wilson interval [0, 1].
    rng = np.random.default_rng(0)
    items = [f"r{i}" for i in range(400)]
    raters = np.argsort(rng.random((400, 20)), axis=1)[:, :5].ravel()
    slopes = pd.DataFrame({"item": np.repeat(items, 5), "rater": raters, "slope": 0.2})
    effects = uncertainty.RaterEffects(np.array([[0.01]]), 10.0)
    scores = pd.Series(1.0, index=items)
    est = uncertainty.crossed_mean(scores, slopes, effects, proportion=True)
    assert est.value < 1.0  # the rounding this is about
    assert est.high == 1.0
    assert 0.98 < est.low < 0.995  # Wilson's for 400 of 400 at t(10): about 0.988
