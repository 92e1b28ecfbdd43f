"""Paired-comparison statistics against hand-computed numbers and a logistic regression."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize
from scipy.special import expit

from evalstats.ranking import (
    DisconnectedComparisons,
    bradley_terry,
    bradley_terry_components,
    comparison_components,
    group_ratios,
    pair_table,
    ratio_matrix,
    win_rates,
)

# A–B and C–D never linked: the example, which a single fit ranked A > C = D > B.
DISCONNECTED = [("A", "B", "a", 8), ("A", "B", "b", 2), ("C", "D", "a", 5), ("C", "D", "b", 5)]


def outcomes(rows):
    """Build outcomes from (a, b, outcome, count) rows, one item per judgment."""
    records = []
    for a, b, outcome, count in rows:
        for _ in range(count):
            records.append({"item": f"i{len(records)}", "a": a, "b": b, "outcome": outcome})
    return pd.DataFrame(records)


def test_pair_table_counts_ratio_and_exact_sign_test():
    data = outcomes(
        [
            ("gold", "bot", "a", 9),
            ("gold", "bot", "b", 1),
            ("gold", "bot", "both", 3),
            ("bot", "gold", "neither", 2),
        ]
    )
    row = pair_table(data).iloc[0]
    # Oriented by name: bot < gold, so bot is "a".
    assert (row.model_a, row.model_b) == ("bot", "gold")
    assert (row.a_wins, row.b_wins, row.both, row.neither, row.n) == (1, 9, 3, 2, 15)
    assert row.ratio == pytest.approx(1 / 9)
    # Two-sided exact binomial: P(X <= 1) * 2 with X ~ Bin(10, 1/2) = 2 * 11 / 1024.
    assert row.sign_test_p == pytest.approx(22 / 1024)


def test_ratio_matrix_is_reciprocal_and_group_averages_follow_ed_table_5():
    data = outcomes(
        [
            ("A", "B", "a", 6),
            ("A", "B", "b", 3),
            ("A", "C", "a", 2),
            ("A", "C", "b", 4),
            ("B", "C", "a", 5),
        ]
    )
    matrix = ratio_matrix(pair_table(data))
    assert matrix.loc["A", "B"] == pytest.approx(2.0)
    assert matrix.loc["B", "A"] == pytest.approx(0.5)
    assert matrix.loc["A", "C"] == pytest.approx(0.5)
    assert math.isinf(matrix.loc["B", "C"]) and matrix.loc["C", "B"] == 0
    assert np.isnan(matrix.loc["A", "A"])
    groups = group_ratios(matrix, {"A vs rest": [["A", "B"], ["A", "C"]], "none": [["A", "Z"]]})
    assert groups.set_index("group").loc["A vs rest", "mean_ratio"] == pytest.approx(1.25)
    assert groups.set_index("group").loc["none", "pairs_with_data"] == 0


def test_bradley_terry_two_models_gives_firths_log_odds_half_a_win_added_each_way():
    # One parameter: the leverage is 1, so Firth's estimate is the log of (3 + 1/2) : (1 + 1/2).
    data = outcomes([("A", "B", "a", 3), ("A", "B", "b", 1)])
    table = bradley_terry(data).set_index("model")
    difference = table.loc["A", "strength"] - table.loc["B", "strength"]
    assert difference == pytest.approx(math.log(3.5 / 1.5))
    assert table.loc["A", "strength"] + table.loc["B", "strength"] == pytest.approx(0, abs=1e-9)


def test_bradley_terry_ties_count_half_and_neither_is_reported_apart():
    data = outcomes(
        [("A", "B", "a", 1), ("A", "B", "b", 1), ("A", "B", "both", 4), ("A", "B", "neither", 2)]
    )
    table = bradley_terry(data).set_index("model")
    assert table.loc["A", "strength"] == pytest.approx(0, abs=1e-9)
    assert table.loc["A", "win_rate"] == pytest.approx(0.5)
    assert table.loc["A", "neither_rate"] == pytest.approx(2 / 8)
    assert table.loc["A", "n"] == 8


def test_bradley_terry_is_firths_penalised_logistic_regression_with_its_wald_interval():
    rng = np.random.default_rng(3)
    truth = {"A": 1.0, "B": 0.3, "C": -0.2, "D": -1.1}
    names = list(truth)
    rows = []
    for _ in range(600):
        a, b = rng.choice(names, 2, replace=False)
        p = 1 / (1 + math.exp(truth[b] - truth[a]))
        rows.append((a, b, "a" if rng.random() < p else "b", 1))
    data = outcomes(rows)
    ours = bradley_terry(data).set_index("model").loc[names]
    # Independent fit: P(a beats b) = logistic(s_a - s_b), D's strength fixed at 0, by
    # maximising the log-likelihood plus half the log-determinant of the information.
    design = np.zeros((len(data), 3))
    for r, (a, b) in enumerate(zip(data["a"], data["b"], strict=True)):
        for name, sign in ((a, 1), (b, -1)):
            if name != "D":
                design[r, names.index(name)] += sign
    won = (data["outcome"] == "a").astype(float).to_numpy()

    def information(beta):
        p = expit(design @ beta)
        return design.T @ (design * (p * (1 - p))[:, None]), p

    def penalised(beta):
        info, p = information(beta)
        loglik = np.sum(won * np.log(p) + (1 - won) * np.log1p(-p))
        return -(loglik + 0.5 * np.linalg.slogdet(info)[1])

    beta = minimize(penalised, np.zeros(3), method="BFGS", options={"gtol": 1e-9}).x
    centre = np.vstack([np.eye(3), np.zeros(3)]) - 0.25  # reference → mean-0 strengths
    theirs = centre @ beta
    np.testing.assert_allclose(ours["strength"], theirs, atol=1e-5)
    # One judgment per item: no design effect, so the model's own Wald interval.
    se = np.sqrt(np.diag(centre @ np.linalg.inv(information(beta)[0]) @ centre.T))
    np.testing.assert_allclose(ours["ci_low"], theirs - 1.959964 * se, atol=1e-4)
    np.testing.assert_allclose(ours["ci_high"], theirs + 1.959964 * se, atol=1e-4)
    assert list(bradley_terry(data)["model"]) == ["A", "B", "C", "D"]


def test_an_undefeated_model_has_a_finite_strength_and_cis_around_the_estimate():
    data = outcomes([("A", "B", "a", 10), ("B", "C", "a", 7), ("B", "C", "b", 3)])
    table = bradley_terry(data).set_index("model")
    assert np.isfinite(table["strength"]).all()
    assert list(table.index) == ["A", "B", "C"]
    assert (table["ci_low"] <= table["strength"]).all()
    assert (table["strength"] <= table["ci_high"]).all()
    assert list(table["rank"]) == [1, 2, 3]


def test_unknown_outcomes_and_self_comparisons_are_refused():
    with pytest.raises(ValueError, match="unknown outcome"):
        pair_table(pd.DataFrame({"item": ["1"], "a": ["A"], "b": ["B"], "outcome": ["first"]}))
    with pytest.raises(ValueError, match="itself"):
        bradley_terry(pd.DataFrame({"item": ["1"], "a": ["A"], "b": ["A"], "outcome": ["a"]}))


def test_components_of_a_disconnected_design_are_found_largest_first():
    data = outcomes([*DISCONNECTED, ("E", "F", "a", 1), ("F", "G", "both", 1)])
    assert comparison_components(data) == [["E", "F", "G"], ["A", "B"], ["C", "D"]]


def test_a_chain_of_comparisons_is_one_component():
    data = outcomes([("A", "B", "a", 3), ("B", "C", "b", 2), ("D", "C", "both", 1)])
    assert comparison_components(data) == [["A", "B", "C", "D"]]


def test_a_link_made_only_of_neither_judgments_connects_nothing():
    data = outcomes([("A", "B", "a", 3), ("B", "C", "neither", 4)])
    assert comparison_components(data) == [["A", "B"], ["C"]]


def test_a_single_ranking_across_components_is_refused_naming_them():
    with pytest.raises(DisconnectedComparisons) as exc:
        bradley_terry(outcomes(DISCONNECTED))
    assert exc.value.components == [["A", "B"], ["C", "D"]]
    assert "{A, B}; {C, D}" in str(exc.value) and "not comparable" in str(exc.value)


def test_each_component_is_ranked_alone_with_strengths_of_mean_zero_and_its_own_cis():
    tables = bradley_terry_components(outcomes(DISCONNECTED))
    assert [list(t["model"]) for t in tables] == [["A", "B"], ["C", "D"]]
    first, second = (t.set_index("model") for t in tables)
    assert list(first["rank"]) == [1, 2] and list(second["rank"]) == [1, 2]
    assert first.loc["A", "strength"] == pytest.approx(math.log(8.5 / 2.5) / 2)  # Firth, centred
    assert second.loc["C", "strength"] == pytest.approx(0.0, abs=1e-9)
    for table in tables:
        assert table["strength"].sum() == pytest.approx(0.0, abs=1e-9)
        assert (table["ci_low"] <= table["strength"]).all()
        assert (table["strength"] <= table["ci_high"]).all()
    alone = bradley_terry(outcomes(DISCONNECTED[:2]))
    pd.testing.assert_frame_equal(tables[0], alone)


def test_a_connected_design_gives_the_same_single_ranking_both_ways():
    data = outcomes([*DISCONNECTED[:3], ("C", "D", "b", 3), ("B", "C", "a", 3), ("B", "C", "b", 1)])
    assert comparison_components(data) == [["A", "B", "C", "D"]]
    (only,) = bradley_terry_components(data)
    pd.testing.assert_frame_equal(only, bradley_terry(data))
    assert list(only["model"]) == ["A", "B", "C", "D"] and list(only["rank"]) == [1, 2, 3, 4]


def test_a_model_judged_only_neither_has_no_strength_and_no_rank():
    data = outcomes([("A", "B", "a", 3), ("A", "B", "b", 1), ("B", "C", "neither", 2)])
    ranked, alone = bradley_terry_components(data)
    assert list(ranked["rank"]) == [1, 2]
    row = alone.iloc[0]
    assert row["model"] == "C" and pd.isna(row["rank"]) and np.isnan(row["strength"])
    assert row["n"] == 2 and row["neither_rate"] == 1.0


def test_win_rates_are_the_decisive_shares_with_an_interval_around_them() -> None:
    rng = np.random.default_rng(0)
    rows = []
    for i in range(80):
        for rater in rng.choice(20, 3, replace=False):
            outcome = rng.choice(["a", "b", "both", "neither"], p=[0.5, 0.3, 0.1, 0.1])
            rows.append({"item": i, "rater": f"w{rater}", "a": "y", "b": "x", "outcome": outcome})
    outcomes = pd.DataFrame(rows)
    table = win_rates(outcomes).iloc[0]
    # Oriented by name: x is model_a, and x wins when the outcome says "b".
    assert (table["model_a"], table["model_b"]) == ("x", "y")
    wins_x, wins_y = (outcomes["outcome"] == "b").sum(), (outcomes["outcome"] == "a").sum()
    assert table["decisive"] == wins_x + wins_y
    assert table["win_rate"] == pytest.approx(wins_x / (wins_x + wins_y))
    assert 0 <= table["ci_low"] < table["win_rate"] < table["ci_high"] <= 1
    assert table["ci_method"].startswith("crossed items×raters")
