"""Bradley–Terry's intervals in simulated crowd studies with known strengths: a model that
almost never loses, several judgments per item, and workers with their own preferences."""

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit

from evalstats.options import report_options_set
from evalstats.ranking import _fit, _wins, bradley_terry

MODELS = ["gold", "B", "C", "D"]


def marginal_truth(strengths, sd):
    """The log-strengths a fit converges to when each judgment's logit is shifted by N(0, sd)
    (an item's context, a worker's taste): Bradley–Terry of the averaged win probabilities."""
    shift = np.random.default_rng(99).normal(0.0, sd, 200_000) if sd else np.zeros(1)
    k = len(strengths)
    expected = np.zeros((k, k))
    for i in range(k):
        for j in range(k):
            if i != j:
                expected[i, j] = 1e6 * expit(strengths[i] - strengths[j] + shift).mean()
    return _fit(expected)


def study(rng, strengths, *, per_pair=50, per_item=1, sd_item=0.0, raters=0, sd_rater=0.0):
    """One study: every pair of models on ``per_pair`` judgments, ``per_item`` per item;
    with ``raters``, each judgment by one of a pool whose taste for each model is N(0, sd)."""
    k = len(strengths)
    taste = rng.normal(0.0, sd_rater, (max(raters, 1), k))
    rows = []
    for i in range(k):
        for j in range(i + 1, k):
            for n in range(per_pair // per_item):
                context = rng.normal(0.0, sd_item)
                for _ in range(per_item):
                    r = int(rng.integers(raters)) if raters else len(rows)
                    t = taste[r % len(taste)]
                    won = rng.random() < expit(strengths[i] - strengths[j] + context + t[i] - t[j])
                    rows.append(
                        (f"{i}-{j}-{n}", f"w{r}", MODELS[i], MODELS[j], "a" if won else "b")
                    )
    return pd.DataFrame(rows, columns=["item", "rater", "a", "b", "outcome"])


def coverage(strengths, studies, truth, seed, **design):
    rng = np.random.default_rng(seed)
    hits = total = 0
    for _ in range(studies):
        table = bradley_terry(study(rng, strengths, **design)).set_index("model").loc[MODELS]
        hits += int(((table["ci_low"] <= truth) & (truth <= table["ci_high"])).sum())
        total += len(MODELS)
    return hits / total


def test_a_model_that_almost_never_loses_is_estimated_without_bias_and_covered():
    # Gold responses against bots win ~98% of their judgments: the old 0.5 virtual wins
    # pulled gold down by a quarter of a log-strength and its bootstrap covered 87%.
    strengths = np.array([4.0, 0.3, 0.0, -0.3])
    truth = strengths - strengths.mean()
    rng = np.random.default_rng(1)
    estimates = [
        bradley_terry(study(rng, strengths)).set_index("model").loc[MODELS, "strength"]
        for _ in range(300)
    ]
    bias = np.mean(estimates, axis=0) - truth
    assert np.abs(bias).max() < 0.1, bias
    assert 0.93 <= coverage(strengths, 300, truth, seed=2) <= 0.975


@pytest.mark.parametrize("strengths", [[0.0, 0.0, 0.0, 0.0], [2.5, 0.3, 0.0, -0.3]])
def test_several_judgments_of_one_item_widen_the_interval_by_the_design_effect(strengths):
    strengths = np.array(strengths)
    design = {"per_item": 5, "sd_item": 1.0}
    truth = marginal_truth(strengths, 1.0)
    assert 0.93 <= coverage(strengths, 250, truth, seed=3, **design) <= 0.975
    with report_options_set(method="independent"):
        naive = coverage(strengths, 250, truth, seed=3, **design)
    assert naive < 0.91  # taking the judgments as independent is too narrow


def test_workers_with_their_own_tastes_widen_the_interval():
    strengths = np.array([1.0, 0.3, 0.0, -0.3])
    design = {"raters": 30, "sd_rater": 0.6, "per_pair": 60}
    truth = marginal_truth(strengths, 0.6 * np.sqrt(2))
    assert 0.93 <= coverage(strengths, 250, truth, seed=4, **design) <= 0.975
    with report_options_set(method="independent"):
        assert coverage(strengths, 250, truth, seed=4, **design) < 0.91


def test_the_wald_interval_is_the_models_own_when_every_judgment_stands_alone():
    rng = np.random.default_rng(5)
    data = study(rng, np.array([0.5, 0.2, 0.0, -0.4]))
    design = bradley_terry(data)
    with report_options_set(method="independent"):
        independent = bradley_terry(data)
    pd.testing.assert_frame_equal(design, independent)


def test_the_level_of_the_report_sets_the_width():
    data = study(np.random.default_rng(6), np.array([0.5, 0.2, 0.0, -0.4]))
    wide = bradley_terry(data)
    with report_options_set(level=0.8):
        narrow = bradley_terry(data)
    ratio = (narrow["ci_high"] - narrow["ci_low"]) / (wide["ci_high"] - wide["ci_low"])
    np.testing.assert_allclose(ratio, 1.2815516 / 1.9599640, rtol=1e-6)
    assert (_wins(np.array([0]), np.array([1]), np.array([1.0]), 2) == [[0, 1], [0, 0]]).all()
