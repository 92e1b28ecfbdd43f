"""Pairwise contrasts: checked against explicit contrast vectors, a hand-written Holm, a
simulation with known differences, and the Bradley–Terry information written out here."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from evalstats import contrasts, ranking
from evalstats.contrasts import CONTRAST_COLUMNS, pairwise_contrasts
from evalstats.options import report_options_set


def _holm_by_hand(p: list[float]) -> list[float]:
    """Holm's step-down, written as in the 1979 paper: sorted, m - i multipliers, monotone."""
    order = sorted(range(len(p)), key=lambda i: p[i])
    adjusted, running = [0.0] * len(p), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p) - rank) * p[i]))
        adjusted[i] = running
    return adjusted


def _random_covariance(rng: np.random.Generator, k: int) -> np.ndarray:
    root = rng.normal(size=(k, k))
    return root @ root.T / k + 0.05 * np.eye(k)


def test_each_row_is_the_explicit_contrast_with_its_z_test_and_holm():
    rng = np.random.default_rng(1)
    names = ["m0", "m1", "m2", "m3"]
    estimates, covariance = rng.normal(size=4), _random_covariance(rng, 4)
    table = pairwise_contrasts(names, estimates, covariance, level=0.9)
    assert list(table.columns) == CONTRAST_COLUMNS
    expected_p = []
    for row in table.itertuples():
        c = np.zeros(4)
        c[names.index(row.model_a)], c[names.index(row.model_b)] = 1.0, -1.0
        se = float(np.sqrt(c @ covariance @ c))
        assert row.difference == pytest.approx(c @ estimates)
        assert row.se == pytest.approx(se)
        assert row.low == pytest.approx(c @ estimates - stats.norm.ppf(0.95) * se)
        assert row.high == pytest.approx(c @ estimates + stats.norm.ppf(0.95) * se)
        expected_p.append(2 * (1 - stats.norm.cdf(abs(c @ estimates) / se)))
    assert [(r.model_a, r.model_b) for r in table.itertuples()] == [
        (a, b) for i, a in enumerate(names) for b in names[i + 1 :]
    ]
    np.testing.assert_allclose(table["p"], expected_p, rtol=1e-9)
    np.testing.assert_allclose(table["p_holm"], _holm_by_hand(expected_p), rtol=1e-9)


def test_verdict_follows_the_holm_adjusted_p_not_the_raw_one():
    # Differences of sd 1: A - B has z = 2.2 (raw p 0.028), the smallest of three p-values,
    # so Holm multiplies it by 3 (0.083): no difference at 5%.
    table = pairwise_contrasts(list("ABC"), np.array([2.2, 0.0, 1.1]), np.eye(3) / 2)
    first = table.iloc[0]
    assert (first.model_a, first.model_b) == ("A", "B")
    assert first.p < 0.05 < first.p_holm
    assert first.verdict == "no difference at 5% (Holm)"
    assert set(table["verdict"]) == {"no difference at 5% (Holm)"}
    clear = pairwise_contrasts(list("ABC"), np.array([4.0, 0.0, -4.0]), np.eye(3) / 2)
    assert list(clear["verdict"]) == ["A higher", "A higher", "A higher"]
    flipped = pairwise_contrasts(["C", "A"], np.array([-4.0, 4.0]), np.eye(2) / 2)
    assert flipped.loc[0, "verdict"] == "B higher"


def test_missing_estimates_give_nan_rows_and_bad_shapes_are_refused():
    table = pairwise_contrasts(["A", "B", "C"], np.array([1.0, np.nan, 0.0]), np.eye(3))
    assert table.loc[0, ["difference", "p", "p_holm"]].isna().all()
    assert table.loc[0, "verdict"] == "no difference at 5% (Holm)"
    with pytest.raises(ValueError, match="3 estimates"):
        pairwise_contrasts(["A", "B", "C"], np.zeros(2), np.eye(3))


def test_intervals_cover_the_true_differences_at_their_level():
    rng = np.random.default_rng(7)
    truth, covariance = rng.normal(size=4), _random_covariance(rng, 4)
    draws = rng.multivariate_normal(truth, covariance, size=400)
    first, second = np.triu_indices(4, 1)
    true_difference = truth[first] - truth[second]
    covered = np.array(
        [
            (pairwise_contrasts(list("ABCD"), d, covariance)[["low", "high"]].to_numpy().T)
            for d in draws
        ]
    )
    inside = (covered[:, 0] <= true_difference) & (true_difference <= covered[:, 1])
    # 400 studies per pair: the Monte-Carlo sd of a 95% coverage is 1.1 points.
    assert np.all(np.abs(inside.mean(axis=0) - 0.95) < 0.04)


def _outcomes(rng: np.random.Generator, strengths: dict[str, float], n: int) -> pd.DataFrame:
    names = list(strengths)
    rows = []
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            p = 1 / (1 + np.exp(strengths[b] - strengths[a]))
            won = rng.random(n) < p
            rows += [(f"{a}{b}{j}", a, b, "a" if w else "b") for j, w in enumerate(won)]
    return pd.DataFrame(rows, columns=["item", "a", "b", "outcome"])


def test_bradley_terry_contrasts_use_the_inverse_information_of_the_strengths():
    rng = np.random.default_rng(3)
    data = _outcomes(rng, {"A": 0.8, "B": 0.0, "C": -0.5}, 60)
    with report_options_set(method="independent"):
        (table,) = contrasts.bradley_terry_contrasts(data)
        ranked = ranking.bradley_terry(data).set_index("model")["strength"]
    # The information of mean-0 log-strengths, written out: n_ij p_ij (1 - p_ij) per pair.
    theta = ranked.loc[["A", "B", "C"]].to_numpy()
    info = np.zeros((3, 3))
    for i, j in [(0, 1), (0, 2), (1, 2)]:
        p = 1 / (1 + np.exp(theta[j] - theta[i]))
        w = 60 * p * (1 - p)
        info[i, i] += w
        info[j, j] += w
        info[i, j] -= w
        info[j, i] -= w
    covariance = np.linalg.pinv(info)
    for row in table.itertuples():
        i, j = "ABC".index(row.model_a), "ABC".index(row.model_b)
        assert row.difference == pytest.approx(theta[i] - theta[j])
        var = covariance[i, i] + covariance[j, j] - 2 * covariance[i, j]
        assert row.se == pytest.approx(np.sqrt(var), rel=1e-6)


def test_bradley_terry_contrasts_are_per_component_when_disconnected():
    rng = np.random.default_rng(4)
    data = pd.concat(
        [_outcomes(rng, {"A": 1.0, "B": 0.0, "C": 0.2}, 20), _outcomes(rng, {"X": 0, "Y": 0}, 9)]
    )
    first, second = contrasts.bradley_terry_contrasts(data, ties_model="davidson")
    assert set(first["model_a"]) | set(first["model_b"]) == {"A", "B", "C"}
    assert len(first) == 3
    assert list(second[["model_a", "model_b"]].iloc[0]) == ["X", "Y"]
