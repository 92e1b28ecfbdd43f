"""Tests of evalstats.agreement: published worked examples, reference packages, edge cases.

Plain pytest, no database. The published examples are embedded below with their sources so
the suite passes without ../shared; optional tests also read ../shared/data when present.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import krippendorff
import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from evalstats import agreement
from evalstats.agreement import (
    LEVELS,
    AgreementUndefinedWarning,
    bootstrap_ci,
    cohen_kappa,
    coincidence_matrix,
    fleiss_kappa,
    fleiss_kappa_ci,
    krippendorff_alpha,
    krippendorff_alpha_ci,
    percent_agreement,
    percent_agreement_ci,
)

SHARED_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
N = None  # a missing value, as in the publications' blank cells

# Krippendorff, K. (2011). Computing Krippendorff's Alpha-Reliability. Annenberg School for
# Communication, University of Pennsylvania, https://repository.upenn.edu/asc_papers/43 -
# example C: 4 observers (rows A-D) x 12 units, values 1-5, missing data. Published alphas,
# 3 decimals: nominal .743, ordinal .815, interval .849, ratio .797 (also the printed output of
# R irr::kripp.alpha on the same data, and Gwet (2014) Handbook p.120 for nominal).
KRIPPENDORFF_2011_C = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, N, N, N],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, N, 3],
    [N, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, N],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, N],
]
KRIPPENDORFF_2011_C_ALPHA = {"nominal": 0.743, "ordinal": 0.815, "interval": 0.849, "ratio": 0.797}

# Wikipedia, "Krippendorff's alpha", computational example: 3 coders x 15 units, values 1-4.
# Published: nominal alpha = 0.691 (the article), 6-decimal values 0.691358 (nominal) and
# 0.810845 (interval) as asserted by fast-krippendorff's tests/test_krippendorff.py.
WIKIPEDIA_ALPHA = [
    [N, N, N, N, N, 3, 4, 1, 2, 1, 1, 3, 3, N, 3],
    [1, N, 2, 1, 3, 3, 4, 3, N, N, N, N, N, N, N],
    [N, N, 2, 1, 3, 4, 4, N, 2, 1, 1, 3, 3, N, 4],
]
# The same article's value counts per unit (rows: units 1..15; columns: values 1..4).
WIKIPEDIA_VALUE_COUNTS = [
    [1, 0, 0, 0], [0, 0, 0, 0], [0, 2, 0, 0], [2, 0, 0, 0], [0, 0, 2, 0],
    [0, 0, 2, 1], [0, 0, 0, 3], [1, 0, 1, 0], [0, 2, 0, 0], [2, 0, 0, 0],
    [2, 0, 0, 0], [0, 0, 2, 0], [0, 0, 2, 0], [0, 0, 0, 0], [0, 0, 1, 1],
]  # fmt: skip

# Wikipedia, "Fleiss' kappa", worked example (also statsmodels' test_inter_rater.py, which
# asserts 0.210 to 3 decimals): 10 subjects, 14 raters each, 5 categories; kappa = 0.210.
FLEISS_WIKIPEDIA = [
    [0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7],
]  # fmt: skip


def as_array(rows: list[list[int | None]]) -> np.ndarray:
    return np.array([[np.nan if v is None else v for v in row] for row in rows], dtype=float)


def as_long(matrix: np.ndarray) -> pd.DataFrame:
    items, raters = np.nonzero(~np.isnan(matrix.T))
    return pd.DataFrame({"item": items, "rater": raters, "value": matrix[raters, items]})


# --- published worked examples ---------------------------------------------------------------


@pytest.mark.parametrize("level", LEVELS)
def test_alpha_reproduces_krippendorff_2011_example_c_at_every_level(level: str) -> None:
    alpha = krippendorff_alpha(as_array(KRIPPENDORFF_2011_C), level)
    assert round(alpha, 3) == KRIPPENDORFF_2011_C_ALPHA[level]


def test_alpha_reproduces_the_wikipedia_example_nominal_and_interval() -> None:
    data = as_array(WIKIPEDIA_ALPHA)
    assert krippendorff_alpha(data, "nominal") == pytest.approx(0.691358, abs=5e-7)
    assert krippendorff_alpha(data, "interval") == pytest.approx(0.810845, abs=5e-7)


def test_alpha_treats_strings_as_nominal_labels() -> None:
    # fast-krippendorff test_string_labels_nominal: 0.722222 (same as coding them 0/1/2).
    labels = np.array(
        [["pos", "neg", "neu", None], ["pos", "neg", "neu", "pos"], ["pos", "neg", "pos", "pos"]],
        dtype=object,
    )
    codes = np.array([[0, 1, 2, np.nan], [0, 1, 2, 0], [0, 1, 0, 0]])
    assert krippendorff_alpha(labels) == pytest.approx(0.722222, abs=5e-7)
    assert krippendorff_alpha(labels) == pytest.approx(krippendorff_alpha(codes), abs=1e-12)


def test_coincidence_matrix_follows_the_definition_on_the_wikipedia_value_counts() -> None:
    counts = np.array(WIKIPEDIA_VALUE_COUNTS, dtype=float)
    expected = np.zeros((4, 4))
    for unit in counts:  # Krippendorff (2011) section C, unit by unit
        m = unit.sum()
        if m >= 2:
            expected += (np.outer(unit, unit) - np.diag(unit)) / (m - 1)
    result = coincidence_matrix(as_array(WIKIPEDIA_ALPHA))
    assert list(result.index) == [1, 2, 3, 4]
    np.testing.assert_allclose(result.to_numpy(), expected, atol=1e-12)


def test_fleiss_kappa_reproduces_the_wikipedia_example() -> None:
    assert round(fleiss_kappa(FLEISS_WIKIPEDIA), 3) == 0.210


def test_percent_agreement_is_the_mean_per_item_pair_agreement_of_the_fleiss_example() -> None:
    # Wikipedia lists P_bar = 0.378 for the same table: the mean share of agreeing rater pairs.
    counts = np.array(FLEISS_WIKIPEDIA)
    ratings = np.array([np.repeat(np.arange(5), row) for row in counts]).T  # raters x items
    assert round(percent_agreement(ratings), 3) == 0.378


def _shared_case(name: str) -> dict:
    path = SHARED_DATA / "agreement" / name / "case.json"
    if not path.exists():
        pytest.skip(f"{path} is absent")
    return json.loads(path.read_text())


@pytest.mark.parametrize("level", LEVELS)
def test_alpha_matches_the_shared_krippendorff_2011_case_file(level: str) -> None:
    case = _shared_case("krippendorff2011_C_4coders_12units")
    alpha = krippendorff_alpha(as_array(case["reliability_data"]), level)
    assert round(alpha, 3) == case["expected"][level]["value"]


def test_alpha_matches_the_shared_wikipedia_case_file() -> None:
    case = _shared_case("krippendorff_wikipedia_3coders_15units")
    data = as_array(case["reliability_data"])
    for level, value in case["expected"].items():
        assert krippendorff_alpha(data, level) == pytest.approx(value, abs=5e-7)


def test_fleiss_kappa_matches_the_shared_wikipedia_case_file() -> None:
    case = _shared_case("fleiss_wikipedia_10subjects_14raters_5cat")
    assert round(fleiss_kappa(case["counts"]), 3) == case["expected"]["kappa"]


# --- agreement with independent implementations -------------------------------------------


@st.composite
def reliability_data(draw: st.DrawFn, *, float_values: bool = False) -> np.ndarray:
    n_raters = draw(st.integers(2, 6))
    n_items = draw(st.integers(1, 25))
    pool = (
        # Ratings have at most 6 decimals; values like 1e-255 would underflow when squared.
        draw(st.lists(st.floats(0, 100).map(lambda v: round(v, 6)), min_size=2, max_size=8))
        if float_values
        else list(range(1, draw(st.integers(2, 7)) + 1))
    )
    cells = st.one_of(st.sampled_from(pool), st.just(np.nan))
    flat = draw(st.lists(cells, min_size=n_raters * n_items, max_size=n_raters * n_items))
    return np.array(flat, dtype=float).reshape(n_raters, n_items)


def _defined(data: np.ndarray) -> bool:
    pairable = data[:, (~np.isnan(data)).sum(axis=0) >= 2]
    return len(np.unique(pairable[~np.isnan(pairable)])) >= 2


@pytest.mark.parametrize("level", LEVELS)
@settings(max_examples=150, deadline=None)
@given(data=reliability_data())
def test_alpha_equals_the_krippendorff_package_on_random_data(level: str, data: np.ndarray) -> None:
    assume(_defined(data))
    reference = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
    assert krippendorff_alpha(data, level) == pytest.approx(reference, abs=1e-9, nan_ok=True)


@pytest.mark.parametrize("level", ["interval", "ratio", "ordinal"])
@settings(max_examples=100, deadline=None)
@given(data=reliability_data(float_values=True))
def test_alpha_equals_the_krippendorff_package_on_non_integer_values(
    level: str, data: np.ndarray
) -> None:
    assume(_defined(data))
    reference = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
    assert krippendorff_alpha(data, level) == pytest.approx(reference, abs=1e-9, nan_ok=True)


@pytest.mark.parametrize("level", LEVELS)
def test_alpha_sparse_path_equals_dense_path(level: str, monkeypatch: pytest.MonkeyPatch) -> None:
    data = as_array(KRIPPENDORFF_2011_C)
    dense = krippendorff_alpha(data, level)
    monkeypatch.setattr(agreement.limits, "DENSE_CELLS", 1)  # force the sparse coincidence matrix
    assert krippendorff_alpha(data, level) == pytest.approx(dense, abs=1e-12)


@settings(max_examples=100, deadline=None)
@given(data=reliability_data(), level=st.sampled_from(LEVELS))
def test_alpha_is_the_same_for_the_long_and_the_array_layout(data: np.ndarray, level: str) -> None:
    assume(_defined(data))
    long = as_long(data).sample(frac=1.0, random_state=0)  # row order must not matter
    assert krippendorff_alpha(long, level) == pytest.approx(
        krippendorff_alpha(data, level), abs=1e-12
    )


@settings(max_examples=100, deadline=None)
@given(data=reliability_data())
def test_ordinal_alpha_depends_only_on_the_order_of_values(data: np.ndarray) -> None:
    assume(_defined(data))
    # A strictly increasing transform keeps every rank, hence the rank-based ordinal metric.
    assert krippendorff_alpha(np.exp(data), "ordinal") == pytest.approx(
        krippendorff_alpha(data, "ordinal"), abs=1e-9
    )


def test_ordinal_alpha_is_not_the_interval_alpha() -> None:
    data = as_array(KRIPPENDORFF_2011_C)
    assert abs(krippendorff_alpha(data, "ordinal") - krippendorff_alpha(data, "interval")) > 0.03


@st.composite
def count_tables(draw: st.DrawFn) -> np.ndarray:
    n_items, n_cats, n_raters = (
        draw(st.integers(1, 20)),
        draw(st.integers(2, 6)),
        draw(st.integers(2, 10)),
    )
    rows = []
    for _ in range(n_items):
        choices = draw(st.lists(st.integers(0, n_cats - 1), min_size=n_raters, max_size=n_raters))
        rows.append(np.bincount(choices, minlength=n_cats))
    return np.array(rows)


@settings(max_examples=200, deadline=None)
@given(table=count_tables())
def test_fleiss_kappa_equals_statsmodels_on_random_tables(table: np.ndarray) -> None:
    assume(np.count_nonzero(table.sum(axis=0)) >= 2)
    assert fleiss_kappa(table) == pytest.approx(sm_fleiss_kappa(table), abs=1e-9)


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
@settings(max_examples=150, deadline=None)
@given(pairs=st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4)), min_size=1, max_size=40))
def test_cohen_kappa_equals_scikit_learn(weights: str | None, pairs: list[tuple[int, int]]) -> None:
    a, b = (list(x) for x in zip(*pairs, strict=True))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reference = cohen_kappa_score(a, b, weights=weights)
    assume(np.isfinite(reference))
    assert cohen_kappa(a, b, weights=weights) == pytest.approx(reference, abs=1e-9)


@settings(max_examples=100, deadline=None)
@given(data=reliability_data())
def test_percent_agreement_counts_agreeing_pairs_item_by_item(data: np.ndarray) -> None:
    shares = []
    for column in data.T:
        values = column[~np.isnan(column)]
        pairs = [(i, j) for i in range(len(values)) for j in range(i + 1, len(values))]
        if pairs:
            shares.append(np.mean([values[i] == values[j] for i, j in pairs]))
    assume(shares)
    assert percent_agreement(data) == pytest.approx(np.mean(shares), abs=1e-12)


# --- conventions and edge cases --------------------------------------------------------------


def test_alpha_ignores_units_with_a_single_value() -> None:
    data = as_array(KRIPPENDORFF_2011_C)
    lonely = np.full((4, 3), np.nan)
    lonely[0] = [1, 5, 2]  # three units coded by one observer only
    for level in LEVELS:
        widened = np.hstack([data, lonely])
        assert krippendorff_alpha(widened, level) == krippendorff_alpha(data, level)


def test_alpha_of_a_single_category_everywhere_is_nan_with_a_warning() -> None:
    with pytest.warns(AgreementUndefinedWarning, match="no variation"):
        assert np.isnan(krippendorff_alpha(np.ones((3, 5))))


@pytest.mark.parametrize("level", LEVELS)
def test_alpha_of_constant_data_is_nan_with_a_warning_at_every_level(level: str) -> None:
    with pytest.warns(AgreementUndefinedWarning, match="no variation"):
        assert np.isnan(krippendorff_alpha(np.full((2, 4), 3.0), level))


def test_alpha_with_one_rater_is_nan_with_a_warning() -> None:
    with pytest.warns(AgreementUndefinedWarning, match="no unit has two"):
        assert np.isnan(krippendorff_alpha(np.array([[1.0, 2.0, 3.0]])))


def test_alpha_of_all_missing_data_is_nan_with_a_warning() -> None:
    with pytest.warns(AgreementUndefinedWarning, match="no unit has two"):
        assert np.isnan(krippendorff_alpha(np.full((3, 4), np.nan)))


def test_alpha_of_an_empty_long_frame_is_nan_with_a_warning() -> None:
    empty = pd.DataFrame({"item": [], "rater": [], "value": []})
    with pytest.warns(AgreementUndefinedWarning):
        assert np.isnan(krippendorff_alpha(empty))


def test_alpha_rejects_an_unknown_level() -> None:
    with pytest.raises(ValueError, match="level must be one of"):
        krippendorff_alpha(as_array(KRIPPENDORFF_2011_C), "cardinal")  # type: ignore[arg-type]


def test_alpha_rejects_negative_values_at_the_ratio_level() -> None:
    with pytest.raises(ValueError, match="non-negative"):
        krippendorff_alpha(np.array([[-1.0, 2.0], [1.0, 2.0]]), "ratio")


def test_alpha_rejects_text_values_at_the_interval_level() -> None:
    with pytest.raises(ValueError, match="numeric"):
        krippendorff_alpha(np.array([["a", "b"], ["a", "a"]], dtype=object), "interval")


def test_alpha_rejects_a_rater_judging_an_item_twice() -> None:
    twice = pd.DataFrame({"item": [1, 1, 1], "rater": ["a", "a", "b"], "value": [1, 2, 1]})
    with pytest.raises(ValueError, match="more than once"):
        krippendorff_alpha(twice)


def test_alpha_rejects_a_long_frame_without_the_value_column() -> None:
    with pytest.raises(ValueError, match="missing \\['value'\\]"):
        krippendorff_alpha(pd.DataFrame({"item": [1], "rater": ["a"]}))


def test_ordinal_alpha_reads_the_order_of_an_ordered_categorical() -> None:
    scale = ["low", "mid", "high"]  # alphabetical order would be high < low < mid
    numbers = as_array(KRIPPENDORFF_2011_C)[:, :9]
    numbers = np.where(numbers > 3, 3, numbers)
    long = as_long(numbers)
    long["value"] = pd.Categorical.from_codes(long["value"].astype(int) - 1, scale, ordered=True)
    assert krippendorff_alpha(long, "ordinal") == pytest.approx(
        krippendorff_alpha(numbers, "ordinal"), abs=1e-12
    )


def test_fleiss_kappa_names_the_rows_with_a_different_number_of_raters() -> None:
    table = pd.DataFrame([[2, 1], [1, 1], [3, 0], [0, 2]], index=["q1", "q2", "q3", "q4"])
    with pytest.raises(ValueError, match=r"\['q2', 'q4'\]"):
        fleiss_kappa(table)


def test_fleiss_kappa_rejects_negative_counts() -> None:
    with pytest.raises(ValueError, match="non-negative"):
        fleiss_kappa([[3, -1], [1, 1]])


def test_fleiss_kappa_of_a_single_category_everywhere_is_nan_with_a_warning() -> None:
    with pytest.warns(AgreementUndefinedWarning, match="single category"):
        assert np.isnan(fleiss_kappa([[0, 5], [0, 5]]))


def test_fleiss_kappa_with_one_rater_is_nan_with_a_warning() -> None:
    with pytest.warns(AgreementUndefinedWarning, match="fewer than two raters"):
        assert np.isnan(fleiss_kappa([[1, 0], [0, 1]]))


def test_fleiss_kappa_without_items_is_nan_with_a_warning() -> None:
    with pytest.warns(AgreementUndefinedWarning, match="no items"):
        assert np.isnan(fleiss_kappa(np.zeros((0, 3))))


def test_cohen_kappa_drops_pairs_with_a_missing_label() -> None:
    a, b = ["x", "y", None, "x", "y"], ["x", "y", "x", "y", None]
    assert cohen_kappa(a, b) == pytest.approx(cohen_kappa(["x", "y", "x"], ["x", "y", "y"]))


def test_cohen_kappa_of_two_raters_using_one_same_label_is_nan_with_a_warning() -> None:
    with pytest.warns(AgreementUndefinedWarning, match="one and the same label"):
        assert np.isnan(cohen_kappa(["x", "x"], ["x", "x"]))


def test_cohen_kappa_rejects_raters_of_different_lengths() -> None:
    with pytest.raises(ValueError, match="same"):
        cohen_kappa([1, 2, 3], [1, 2])


# --- bootstrap -------------------------------------------------------------------------------


def _synthetic(n_items: int, n_raters: int = 5, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 6, n_items)
    noise = rng.integers(1, 6, (n_raters, n_items))
    data = np.where(rng.random((n_raters, n_items)) < 0.6, truth, noise).astype(float)
    data[rng.random(data.shape) < 0.15] = np.nan
    return data


@pytest.mark.parametrize("level", LEVELS)
@settings(max_examples=40, deadline=None)
@given(data=reliability_data(), seed=st.integers(0, 2**32 - 1))
def test_alpha_of_a_resample_from_feature_sums_equals_recomputing_it(
    level: str, data: np.ndarray, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    draw = rng.integers(0, data.shape[1], data.shape[1])
    resample = data[:, draw]  # each drawn copy is a distinct unit
    assume(_defined(resample))
    prepared = agreement._alpha_features(agreement._encode(data, level), level)
    assert prepared is not None
    patterns, pattern_of, stat = prepared
    sums = np.bincount(draw, minlength=data.shape[1]) @ patterns[pattern_of]
    assert stat(sums[None, :])[0] == pytest.approx(krippendorff_alpha(resample, level), abs=1e-9)


@pytest.mark.parametrize("level", ["nominal", "interval"])
def test_fast_alpha_ci_agrees_with_resampling_items_by_brute_force(level: str) -> None:
    data = _synthetic(150)
    fast = krippendorff_alpha_ci(data, level, n_boot=2000, seed=3, interval="units")
    slow = bootstrap_ci(
        lambda d: krippendorff_alpha(d, level), data, n_boot=2000, seed=4, item_axis=1
    )
    assert fast.value == slow.value
    assert fast.low == pytest.approx(slow.low, abs=0.015)
    assert fast.high == pytest.approx(slow.high, abs=0.015)


@pytest.mark.parametrize("level", LEVELS)
def test_alpha_ci_brackets_the_estimate_and_narrows_with_more_items(level: str) -> None:
    # The bootstrap over items: the raters' share of the two-way interval does not shrink.
    small = krippendorff_alpha_ci(_synthetic(60), level, n_boot=500, interval="units")
    large = krippendorff_alpha_ci(_synthetic(2000), level, n_boot=500, interval="units")
    for estimate in (small, large):
        assert estimate.low < estimate.value < estimate.high
    assert large.high - large.low < (small.high - small.low) / 2


def test_alpha_ci_is_reproducible_with_a_seed_and_varies_without() -> None:
    data = _synthetic(80)
    assert krippendorff_alpha_ci(data, seed=7) == krippendorff_alpha_ci(data, seed=7)
    assert krippendorff_alpha_ci(data, seed=7) != krippendorff_alpha_ci(data, seed=8)


def test_alpha_ci_of_a_long_frame_equals_that_of_the_array() -> None:
    data = _synthetic(100)
    assert krippendorff_alpha_ci(as_long(data), "ordinal") == pytest.approx(
        krippendorff_alpha_ci(data, "ordinal")
    )


def test_alpha_ci_falls_back_to_recomputation_when_features_do_not_fit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    data = _synthetic(40)
    monkeypatch.setattr(agreement.limits, "DENSE_CELLS", 1)  # sparse counts: no feature path
    assert agreement._alpha_features(agreement._encode(data, "ratio"), "ratio") is None
    fallback = krippendorff_alpha_ci(data, "ratio", n_boot=300, seed=2, interval="units")
    slow = bootstrap_ci(
        lambda d: krippendorff_alpha(d, "ratio"), data, n_boot=300, seed=2, item_axis=1
    )
    assert fallback == pytest.approx(slow, abs=1e-12)


def test_bootstrap_warns_about_resamples_with_an_undefined_statistic() -> None:
    data = np.array([[1.0, 1.0, 1.0], [1.0, 1.0, 2.0]])  # resamples without item 3 are 0/0
    with pytest.warns(AgreementUndefinedWarning, match="resamples"):
        estimate = krippendorff_alpha_ci(data, n_boot=200)
    assert np.isfinite(estimate.low) and np.isfinite(estimate.high)


def test_bootstrap_ci_resamples_items_of_a_long_frame_as_distinct_items() -> None:
    data = _synthetic(60)
    long = as_long(data)
    assert long["item"].nunique() == data.shape[1]
    via_frame = bootstrap_ci(krippendorff_alpha, long, n_boot=200, seed=5)
    via_array = bootstrap_ci(krippendorff_alpha, data, n_boot=200, seed=5, item_axis=1)
    assert via_frame == pytest.approx(via_array)  # same draws, same items: same interval


def test_fleiss_kappa_ci_brackets_the_wikipedia_estimate() -> None:
    value, low, high = fleiss_kappa_ci(FLEISS_WIKIPEDIA, n_boot=1000)
    assert value == fleiss_kappa(FLEISS_WIKIPEDIA)
    assert low < value < high
    generic = bootstrap_ci(fleiss_kappa, np.array(FLEISS_WIKIPEDIA), n_boot=1000, seed=1)
    assert (low, high) == pytest.approx((generic.low, generic.high), abs=0.03)


def test_percent_agreement_ci_brackets_the_estimate() -> None:
    value, low, high = percent_agreement_ci(_synthetic(200), n_boot=500)
    assert value == percent_agreement(_synthetic(200))
    assert low < value < high


@pytest.mark.parametrize("ci", [0.0, 1.0, 1.5])
def test_bootstrap_rejects_a_confidence_level_outside_0_1(ci: float) -> None:
    with pytest.raises(ValueError, match="ci must lie"):
        krippendorff_alpha_ci(_synthetic(10), ci=ci)
