"""Davidson's ties model: checked against a direct maximisation of its likelihood written out
here, the numerical Hessian, Hunter's MM fit without ties, and simulations with known truth."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import optimize

from evalstats import ranking, ties


def _simulate(
    rng: np.random.Generator, theta: np.ndarray, nu: float, per_pair: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return (ia, ib, score) of ``per_pair`` Davidson judgments for every pair."""
    ia, ib, score = [], [], []
    k = len(theta)
    for i in range(k):
        for j in range(i + 1, k):
            pi, pj, tie = np.exp(theta[i]), np.exp(theta[j]), nu * np.exp((theta[i] + theta[j]) / 2)
            p = np.array([pi, pj, tie]) / (pi + pj + tie)
            drawn = rng.choice(3, size=per_pair, p=p)
            ia += [i] * per_pair
            ib += [j] * per_pair
            score += list(np.array([1.0, 0.0, 0.5])[drawn])
    return np.array(ia), np.array(ib), np.array(score)


def _negative_log_likelihood(params: np.ndarray, ia, ib, score) -> float:
    """Davidson's likelihood as in the 1970 paper; theta_k = -(sum of the others)."""
    theta = np.append(params[:-1], -params[:-1].sum())
    nu = np.exp(params[-1])
    pi_a, pi_b = np.exp(theta[ia]), np.exp(theta[ib])
    tie = nu * np.sqrt(pi_a * pi_b)
    denominator = pi_a + pi_b + tie
    numerator = np.where(score == 1.0, pi_a, np.where(score == 0.0, pi_b, tie))
    return -float(np.sum(np.log(numerator / denominator)))


def _direct(ia, ib, score, k: int) -> np.ndarray:
    result = optimize.minimize(
        _negative_log_likelihood,
        np.zeros(k),
        args=(ia, ib, score),
        method="BFGS",
        options={"gtol": 1e-9},
    )
    return result.x


def test_fit_equals_a_direct_maximisation_of_the_likelihood():
    rng = np.random.default_rng(11)
    ia, ib, score = _simulate(rng, np.array([0.9, 0.2, -0.3, -0.8]), 0.7, 40)
    fit = ties.davidson_fit(ia, ib, score, k=4)
    direct = _direct(ia, ib, score, 4)
    np.testing.assert_allclose(fit.strength[:3], direct[:3], atol=1e-4)
    assert fit.strength.sum() == pytest.approx(0.0, abs=1e-12)
    assert fit.log_nu == pytest.approx(direct[-1], abs=1e-4)


def test_model_variances_are_the_inverse_observed_information():
    rng = np.random.default_rng(12)
    ia, ib, score = _simulate(rng, np.array([0.5, 0.0, -0.5]), 1.0, 50)
    fit = ties.davidson_fit(ia, ib, score, k=3, contrasts=np.array([[1.0, -1.0, 0.0]]))
    direct = _direct(ia, ib, score, 3)
    # Numerical Hessian of the written-out likelihood in (theta_1, theta_2, log nu).
    h, d = 1e-4, len(direct)
    hessian = np.zeros((d, d))
    for a in range(d):
        for b in range(d):
            shift = np.zeros((4, d))
            shift[0, a] += h
            shift[0, b] += h
            shift[1, a] += h
            shift[1, b] -= h
            shift[2, a] -= h
            shift[2, b] += h
            shift[3, a] -= h
            shift[3, b] -= h
            f = [_negative_log_likelihood(direct + s, ia, ib, score) for s in shift]
            hessian[a, b] = (f[0] - f[1] - f[2] + f[3]) / (4 * h * h)
    covariance = np.linalg.inv(hessian)
    # theta_1 - theta_2 is the first free parameter minus the second.
    expected = covariance[0, 0] + covariance[1, 1] - 2 * covariance[0, 1]
    assert fit.variances[0] == pytest.approx(expected, rel=1e-3)
    assert fit.log_nu_variance == pytest.approx(covariance[2, 2], rel=1e-3)


def test_without_ties_the_fit_is_plain_bradley_terry_maximum_likelihood():
    rng = np.random.default_rng(13)
    ia, ib, score = _simulate(rng, np.array([0.6, 0.1, -0.7]), 1e-9, 40)
    assert not (score == 0.5).any()
    fit = ties.davidson_fit(ia, ib, score, k=3)
    wins = np.zeros((3, 3))
    np.add.at(wins, (ia, ib), score)
    np.add.at(wins, (ib, ia), 1 - score)
    np.testing.assert_allclose(fit.strength, ranking._fit(wins), atol=1e-7)
    assert fit.log_nu == -np.inf


def test_strengths_and_nu_are_recovered_in_a_simulation_with_known_truth():
    truth, nu = np.array([1.0, 0.3, -0.2, -1.1]), 1.0
    hits, estimates, nus = 0, [], []
    for seed in range(40):
        rng = np.random.default_rng(100 + seed)
        ia, ib, score = _simulate(rng, truth, nu, 150)
        fit = ties.davidson_fit(ia, ib, score, k=4)
        se = np.sqrt(fit.variances)
        hits += int(np.sum(np.abs(fit.strength - truth) < 1.96 * se))
        estimates.append(fit.strength)
        nus.append(np.exp(fit.log_nu))
    # 40 studies x 900 judgments: the mean estimate's sd is about 0.01.
    np.testing.assert_allclose(np.mean(estimates, axis=0), truth, atol=0.04)
    assert np.mean(nus) == pytest.approx(nu, abs=0.05)
    assert 0.88 <= hits / 160 <= 0.99


def test_half_win_strengths_are_compressed_when_ties_are_frequent():
    rng = np.random.default_rng(14)
    truth = np.array([1.0, 0.0, -1.0])
    ia, ib, score = _simulate(rng, truth, 1.5, 400)
    half, _ = ranking.bt_estimate(ia, ib, score, k=3, prior=0.0, clusters=[], contrasts=np.eye(3))
    davidson = ties.davidson_fit(ia, ib, score, k=3).strength
    spread = np.ptp(half) / np.ptp(davidson)
    assert spread < 0.85
    assert np.ptp(davidson) == pytest.approx(np.ptp(truth), abs=0.2)


def test_a_model_that_never_loses_nor_ties_has_no_finite_estimate():
    ia, ib = np.array([0, 0, 1, 1, 2]), np.array([1, 2, 2, 2, 1])
    score = np.array([1.0, 1.0, 0.5, 1.0, 0.0])
    with pytest.raises(ties.NoFiniteEstimate, match="bt_prior"):
        ties.davidson_fit(ia, ib, score, k=3)
    assert np.isfinite(ties.davidson_fit(ia, ib, score, k=3, prior=1.0).strength).all()


def test_judgments_clustered_by_item_widen_the_interval_and_independent_ones_do_not():
    rng = np.random.default_rng(15)
    ia, ib, score = _simulate(rng, np.array([0.4, 0.0, -0.4]), 0.8, 60)
    alone = ties.davidson_fit(ia, ib, score, k=3)
    own = ties.davidson_fit(ia, ib, score, k=3, clusters=[np.arange(len(score))])
    np.testing.assert_allclose(own.variances, alone.variances)
    # Repeat every judgment 4 times on one item: 4 identical votes per item.
    repeated = ties.davidson_fit(
        np.repeat(ia, 4),
        np.repeat(ib, 4),
        np.repeat(score, 4),
        k=3,
        clusters=[np.repeat(np.arange(len(score)), 4)],
    )
    np.testing.assert_allclose(repeated.variances, alone.variances, rtol=0.02)


def test_davidson_components_rank_by_davidson_strength_with_the_bt_columns():
    rng = np.random.default_rng(16)
    ia, ib, score = _simulate(rng, np.array([0.8, -0.1, -0.7]), 0.9, 50)
    names = np.array(["C", "A", "B"])
    data = pd.DataFrame(
        {
            "item": np.arange(len(score)),
            "a": names[ia],
            "b": names[ib],
            "outcome": pd.Series(score).map({1.0: "a", 0.0: "b", 0.5: "both"}),
        }
    )
    ((table, nu),) = ties.davidson_components(data)
    assert list(table.columns) == ranking.BT_COLUMNS
    assert list(table["rank"]) == [1, 2, 3]
    assert list(table["model"]) == ["C", "A", "B"]
    fit = ties.davidson_fit(ia, ib, score, k=3)
    assert table["strength"].to_numpy() == pytest.approx(np.sort(fit.strength)[::-1])
    assert nu == pytest.approx(np.exp(fit.log_nu))
