"""MACE's labels depend on the judgments, not on their row order or the workers' names."""

import numpy as np
import pandas as pd
import pytest

from evalstats import aggregation

LABELS = ("a", "b", "c", "d")


def _crowd(seed: int, items: int = 60, pool: int = 8, k: int = 3) -> pd.DataFrame:
    """A pool of workers of mixed skill, each answering the truth or a random label."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, len(LABELS), items)
    skill = rng.uniform(0.2, 0.9, pool)
    rows = []
    for i in range(items):
        for w in rng.choice(pool, k, replace=False):
            label = truth[i] if rng.random() < skill[w] else rng.integers(0, len(LABELS))
            rows.append((f"item{i}", f"w{w}", LABELS[label]))
    return pd.DataFrame(rows, columns=["item", "rater", "value"])


def _pseudonymised(judgments: pd.DataFrame, seed: int) -> tuple[pd.DataFrame, dict[str, str]]:
    """The same judgments shuffled, the workers renamed as the import pipeline does."""
    rng = np.random.default_rng(seed)
    names = {w: f"p{rng.integers(10**9):09d}" for w in judgments["rater"].unique()}
    shuffled = judgments.sample(frac=1, random_state=seed)
    return shuffled.assign(rater=shuffled["rater"].map(names)), names


@pytest.mark.parametrize("seed", [0, 1])
def test_mace_gives_the_same_labels_and_competence_whatever_the_row_order_and_worker_names(seed):
    judgments = _crowd(seed)
    labels, competence = aggregation.mace(judgments, n_restarts=1)
    for permutation in (1, 2, 3):
        other, names = _pseudonymised(judgments, permutation)
        again, quality = aggregation.mace(other, n_restarts=1)
        pd.testing.assert_series_equal(labels.sort_index(), again.sort_index())
        renamed = competence.rename(index=names).sort_index()
        pd.testing.assert_series_equal(renamed, quality.sort_index(), rtol=1e-9)


def test_mace_recovers_the_truth_of_a_clear_crowd_and_ranks_the_spammer_last():
    rng = np.random.default_rng(5)
    truth = rng.integers(0, 3, 80)
    rows = []
    for i, t in enumerate(truth):
        for w in range(4):  # workers 0-2 copy the truth; worker 3 answers at random
            label = t if w < 3 and rng.random() < 0.9 else rng.integers(0, 3)
            rows.append((i, f"w{w}", LABELS[label]))
    labels, competence = aggregation.mace(pd.DataFrame(rows, columns=["item", "rater", "value"]))
    assert (labels.sort_index().to_numpy() == np.array(LABELS)[truth]).mean() > 0.95
    assert competence.idxmin() == "w3" and competence["w3"] < 0.5 < competence.drop("w3").min()
