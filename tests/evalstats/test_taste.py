"""Tests of evalstats.taste: the raters' taste per model in a Likert difference (issue #33)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from evalstats import taste, uncertainty


def _crossed_study(x: np.ndarray, y: np.ndarray, items: int) -> pd.DataFrame:
    """Every rater rates every item of both models, without noise: rating = item + effect."""
    rng = np.random.default_rng(3)
    frames = []
    for model, effect in (("A", x), ("B", y)):
        item_effect = rng.normal(3.0, 1.0, items)
        value = item_effect[:, None] + effect[None, :]
        frames.append(
            pd.DataFrame(
                {
                    "item": np.repeat([f"{model}{i}" for i in range(items)], len(x)),
                    "rater": np.tile([f"r{r}" for r in range(len(x))], items),
                    "value": value.ravel(),
                    "model": model,
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def test_taste_is_the_variance_of_the_raters_centred_differences_when_all_rate_all() -> None:
    # Fully crossed and noiseless, a rater's mean residual in a model is its effect minus the
    # model's mean effect, and the moments reduce to the textbook unbiased variance of the
    # raters' differences, halved: omega = sum_r (dx_r - dy_r)^2 / (2 (R - 1)).
    x = np.array([1.0, -0.4, 0.7, 0.2, -1.3])
    y = np.array([0.3, 0.5, -0.8, 0.9, 0.1])
    dx, dy = x - x.mean(), y - y.mean()
    expected = float(((dx - dy) ** 2).sum() / (2.0 * (len(x) - 1)))
    got = taste.rater_model_effects(_crossed_study(x, y, items=6))
    assert got.tau[0, 0] == pytest.approx(expected)
    same = taste.rater_model_effects(_crossed_study(x, x + 0.5, items=6))
    assert same.tau[0, 0] == pytest.approx(0.0, abs=1e-12)  # one leniency, no taste


def test_the_cross_product_coefficient_is_that_of_the_residuals_linear_map() -> None:
    # alpha_p . alpha_q by brute force: each rater's unit effect pushed through the residuals.
    rng = np.random.default_rng(4)
    rows = []
    for model in ("A", "B"):
        for i in range(12):
            for r in rng.choice(6, size=int(rng.integers(2, 5)), replace=False):
                rows.append({"item": f"{model}{i}", "rater": int(r), "model": model})
    data = pd.DataFrame(rows)
    cross = taste.cross_products(data.assign(value=rng.normal(size=len(data))))
    alpha = {}
    for s in range(6):
        z = data.assign(value=(data["rater"] == s).astype(float))
        z["value"] -= z.groupby("item")["value"].transform("mean")
        alpha[s] = z.groupby(["rater", "model"])["value"].mean()
    assert len(cross.rater) == data["rater"].nunique()  # every rater rated both models
    for rater, coef in zip(cross.rater, cross.coef, strict=True):
        a = np.array([alpha[s].get((rater, "A"), 0.0) for s in range(6)])
        b = np.array([alpha[s].get((rater, "B"), 0.0) for s in range(6)])
        assert coef == pytest.approx(float(a @ b))


def _pool_study(
    rng: np.random.Generator, *, pool: int, items: int, k: int, sd_taste: float
) -> pd.DataFrame:
    """Two equal models' items rated by k raters of a pool: item + leniency + taste + noise."""
    leniency = rng.normal(0.0, 0.5, pool)
    frames = []
    for model in ("A", "B"):
        raters = np.argsort(rng.random((items, pool)), axis=1)[:, :k]
        liking = rng.normal(0.0, sd_taste, pool)
        effect = leniency[raters] + liking[raters]
        value = rng.normal(0.0, 0.6, (items, 1)) + effect + rng.normal(0.0, 0.8, raters.shape)
        frames.append(
            pd.DataFrame(
                {
                    "item": np.repeat([f"{model}{i}" for i in range(items)], k),
                    "rater": raters.ravel(),
                    "value": value.ravel(),
                    "model": model,
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def _both_contrasts(data: pd.DataFrame) -> tuple[uncertainty.Contrast, uncertainty.Contrast]:
    """Return A - B with the taste term and without it (the interval before issue #33)."""
    items = data.groupby("item").agg(
        score=("value", "mean"), n=("value", "size"), model=("model", "first")
    )
    a, b = (items[items["model"] == m] for m in ("A", "B"))
    slopes = uncertainty.mean_slopes(data)
    effects = uncertainty.rater_effects(data, group="model")
    omega = taste.rater_model_effects(data)
    args = (a["score"], b["score"], slopes, effects)
    weights = {"weights_a": a["n"], "weights_b": b["n"]}
    return (
        uncertainty.crossed_contrast(*args, **weights, taste=omega),
        uncertainty.crossed_contrast(*args, **weights),
    )


@pytest.mark.slow
def test_with_taste_the_difference_interval_covers_where_the_one_without_does_not() -> None:
    # Taste sd 0.7 per rater x model, pool of 10 (measured: 93.0% against 71.0%).
    rng = np.random.default_rng(7)
    new = old = 0
    n = 200
    for _ in range(n):
        data = _pool_study(rng, pool=10, items=40, k=3, sd_taste=0.7)
        with_taste, without = _both_contrasts(data)
        new += with_taste.low <= 0.0 <= with_taste.high
        old += without.low <= 0.0 <= without.high
    assert new / n >= 0.90
    assert old / n <= 0.85


@pytest.mark.slow
def test_without_taste_the_difference_variance_stays_within_a_few_percent() -> None:
    # omega truncated at 0 adds a little on average (measured: se +3.4% over 200 studies).
    rng = np.random.default_rng(8)
    var_new, var_old = [], []
    for _ in range(60):
        with_taste, without = _both_contrasts(
            _pool_study(rng, pool=30, items=40, k=3, sd_taste=0.0)
        )
        var_new.append(with_taste.se**2)
        var_old.append(without.se**2)
    assert np.all(np.array(var_new) >= np.array(var_old) - 1e-15)
    assert np.sqrt(np.mean(var_new) / np.mean(var_old)) == pytest.approx(1.0, abs=0.06)


def test_the_report_table_widens_the_difference_by_the_raters_taste() -> None:
    data = _pool_study(np.random.default_rng(9), pool=10, items=30, k=3, sd_taste=1.0)
    table = uncertainty.mean_comparisons(data.assign(aspect="overall"), reference="B")
    row = table.set_index("model").loc["A"]
    with_taste, without = _both_contrasts(data)
    assert (row["diff_low"], row["diff_high"]) == pytest.approx((with_taste.low, with_taste.high))
    assert with_taste.high - with_taste.low > 1.5 * (without.high - without.low)


def test_a_models_mean_has_the_raters_variance_within_a_model_pooled_over_models() -> None:
    # Fully crossed and noiseless: the raters' variance within a model is the textbook
    # variance of their effects on it, pooled over the two balanced models, and the mean of
    # n items by R raters has variance s^2 / n + V / R (s^2 the item scores' variance) on
    # Satterthwaite's df of its item part (n - 1 df) and rater part (V's df).
    x = np.array([1.0, -0.4, 0.7, 0.2, -1.3])
    y = np.array([0.3, 0.5, -0.8, 0.9, 0.1])
    data = _crossed_study(x, y, items=6)
    within = taste.within_model_effects(data)
    v = float((np.var(x, ddof=1) + np.var(y, ddof=1)) / 2.0)
    assert within.tau[0, 0] == pytest.approx(v)
    scores = data[data["model"] == "A"].groupby("item")["value"].mean()
    n, r = len(scores), len(x)
    item_part, rater_part = (float(np.var(scores, ddof=1)) + v / r) / n, v * (n - 1) / (n * r)
    df = (item_part + rater_part) ** 2 / (item_part**2 / (n - 1) + rater_part**2 / within.df)
    half = float(stats.t.ppf(0.975, df)) * np.sqrt(item_part + rater_part)
    table = uncertainty.mean_comparisons(data.assign(aspect="overall"), reference="B")
    row = table.set_index("model").loc["A"]
    mean = float(scores.mean())
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((mean - half, mean + half))
    pooled = uncertainty.rater_effects(data, group="model")  # the raters across models
    assert pooled.tau[0, 0] < 0.5 * v  # what the mean's interval had before


def test_where_each_rater_rated_one_model_the_mean_interval_is_unchanged() -> None:
    data = _pool_study(np.random.default_rng(5), pool=10, items=30, k=3, sd_taste=1.0)
    data["rater"] = data["model"] + data["rater"].astype(str)  # separate pools per model
    table = uncertainty.mean_comparisons(data.assign(aspect="overall"), reference="B")
    effects = uncertainty.rater_effects(data, group="model")
    items = data.groupby("item").agg(score=("value", "mean"), n=("value", "size"))
    a = items[items.index.str.startswith("A")]
    est = uncertainty.crossed_mean(
        a["score"], uncertainty.mean_slopes(data), effects, weights=a["n"]
    )
    row = table.set_index("model").loc["A"]
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((est.low, est.high), rel=1e-12)


@pytest.mark.slow
def test_with_taste_the_mean_interval_covers_and_its_variance_matches_the_truth() -> None:
    # Taste sd 1.0, pool of 10, truth 0 per model (measured: coverage 95.0%; mean se^2 over
    # the estimates' mean square 1.10 with the raters' variance within a model, 0.78 with
    # their variance across models, the interval before).
    rng = np.random.default_rng(11)
    hits, se2_new, se2_old, square = 0, [], [], []
    for _ in range(150):
        data = _pool_study(rng, pool=10, items=40, k=3, sd_taste=1.0)
        items = data.groupby("item").agg(
            score=("value", "mean"), n=("value", "size"), model=("model", "first")
        )
        slopes = uncertainty.mean_slopes(data)
        within = taste.within_model_effects(data)
        across = uncertainty.rater_effects(data, group="model")
        for model in ("A", "B"):
            a = items[items["model"] == model]
            new = uncertainty.crossed_mean(a["score"], slopes, within, weights=a["n"])
            old = uncertainty.crossed_mean(a["score"], slopes, across, weights=a["n"])
            hits += new.low <= 0.0 <= new.high
            se2_new.append(new.se**2)
            se2_old.append(old.se**2)
            square.append(new.value**2)
    assert hits / 300 >= 0.90
    assert np.mean(se2_new) / np.mean(square) == pytest.approx(1.0, abs=0.25)
    assert np.mean(se2_old) / np.mean(square) <= 0.85
