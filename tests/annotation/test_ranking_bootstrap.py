"""Bradley–Terry's bootstrap by item patterns: the law of resampling items, fits batched."""

import warnings

import numpy as np
import pandas as pd
import pytest

from annotation import ranking
from annotation.ranking import _canonical, _fit, _fit_batch, _wins, bradley_terry

MODELS = ["gold", "retrieval", "generic", "tiny", "blender"]
TRUTH = np.array([1.0, 0.3, -0.6, -0.2, 0.4])  # log-strengths


def simulate(n_items: int, raters: int = 5, seed: int = 1, ties: float = 0.15) -> pd.DataFrame:
    """A/B judgments of ``n_items`` items (one model pair each) by ``raters`` raters; a share
    ``ties`` of them "both" or "neither" (which Bradley–Terry's truth does not model)."""
    rng = np.random.default_rng(seed)
    pairs = [(i, j) for i in range(len(MODELS)) for j in range(i + 1, len(MODELS))]
    which = rng.integers(0, len(pairs), n_items)
    a = np.array([pairs[w][0] for w in which]).repeat(raters)
    b = np.array([pairs[w][1] for w in which]).repeat(raters)
    p_a = 1 / (1 + np.exp(TRUTH[b] - TRUTH[a]))
    u = rng.random(len(a))
    outcome = np.where(u < ties * 2 / 3, "both", np.where(u < ties, "neither", "a"))
    decisive = u >= ties
    outcome[decisive] = np.where(rng.random(decisive.sum()) < p_a[decisive], "a", "b")
    return pd.DataFrame(
        {
            "item": np.repeat([f"i{n}" for n in range(n_items)], raters),
            "a": np.array(MODELS)[a],
            "b": np.array(MODELS)[b],
            "outcome": outcome,
        }
    )


def by_items(data: pd.DataFrame, prior: float, n_boot: int, seed: int) -> pd.DataFrame:
    """The bootstrap as it was: reweigh every judgment by its item's draw, fit one at a time."""
    data = _canonical(data)
    models = sorted(set(data["a"]) | set(data["b"]))
    index = {m: i for i, m in enumerate(models)}
    decided = data[data["outcome"] != "neither"]
    ia = decided["a"].map(index).to_numpy()
    ib = decided["b"].map(index).to_numpy()
    score = decided["outcome"].map({"a": 1.0, "b": 0.0, "both": 0.5}).to_numpy()
    met = _wins(ia, ib, np.ones(len(score)), len(models)) > 0
    virtual = prior * (met | met.T)
    items, codes = np.unique(decided["item"].astype(str).to_numpy(), return_inverse=True)
    rng = np.random.default_rng(seed)
    draws = np.empty((n_boot, len(models)))
    for r in range(n_boot):
        weight = np.bincount(rng.integers(0, len(items), len(items)), minlength=len(items))
        draws[r] = _fit(_wins(ia, ib, score, len(models), weight[codes].astype(float)) + virtual)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        low, high = np.nanpercentile(draws, [2.5, 97.5], axis=0)
    return pd.DataFrame({"ci_low": low, "ci_high": high}, index=models)


def test_batched_fits_are_the_one_at_a_time_fits():
    rng = np.random.default_rng(0)
    wins = rng.integers(0, 30, (40, 5, 5)).astype(float) + 0.5
    for w in wins:
        np.fill_diagonal(w, 0)
    batched = _fit_batch(wins)
    for one, w in zip(batched, wins, strict=True):
        np.testing.assert_allclose(one, _fit(w), rtol=0, atol=1e-12)


@pytest.mark.parametrize("prior", [0.5, 0.0])
@pytest.mark.parametrize("raters", [1, 5])
def test_intervals_match_resampling_items_one_by_one(prior, raters):
    data = simulate(600, raters=raters)
    ours = bradley_terry(data, prior=prior, n_boot=2000, seed=3).set_index("model")
    reference = by_items(data, prior, n_boot=2000, seed=4)
    point = bradley_terry(data, prior=prior, n_boot=0).set_index("model")["strength"]
    pd.testing.assert_series_equal(ours["strength"], point)  # the estimate itself is unchanged
    width = (reference["ci_high"] - reference["ci_low"]).to_numpy()
    for end in ("ci_low", "ci_high"):
        gap = np.abs(ours.loc[reference.index, end].to_numpy() - reference[end].to_numpy())
        assert (gap < 0.1 * width).all(), (end, gap / width)


def test_per_resample_weights_when_patterns_would_not_fit(monkeypatch):
    data = simulate(300)
    patterns = bradley_terry(data, n_boot=500, seed=5)
    monkeypatch.setattr(ranking, "_PATTERN_CELLS", 10)
    weights = bradley_terry(data, n_boot=500, seed=5)
    pd.testing.assert_frame_equal(patterns[["model", "strength"]], weights[["model", "strength"]])
    for end in ("ci_low", "ci_high"):
        np.testing.assert_allclose(patterns[end], weights[end], atol=0.1)


def test_intervals_cover_the_true_strengths_in_simulation():
    data = simulate(4000, seed=7, ties=0.0)
    table = bradley_terry(data, prior=0.5, n_boot=1000).set_index("model")
    truth = pd.Series(TRUTH - TRUTH.mean(), index=MODELS).reindex(table.index)
    assert ((table["ci_low"] < truth) & (truth < table["ci_high"])).sum() >= 4
    assert (table["ci_high"] - table["ci_low"] < 0.3).all()


def test_the_same_seed_gives_the_same_intervals():
    data = simulate(200)
    pd.testing.assert_frame_equal(
        bradley_terry(data, n_boot=300, seed=11), bradley_terry(data, n_boot=300, seed=11)
    )
    assert not bradley_terry(data, n_boot=300, seed=11).equals(
        bradley_terry(data, n_boot=300, seed=12)
    )
