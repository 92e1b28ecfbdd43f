"""Tests of evalstats.aggregation: majority vote, EmotionLines gold labels, DS, MACE, QC.

Plain pytest, no database. The optional EmotionLines test reads ../shared/data when present.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalstats.aggregation import (
    NON_NEUTRAL,
    TiedLabelWarning,
    dawid_skene,
    emotionlines_labels,
    mace,
    majority_vote,
    rater_agreement,
)
from evalstats.agreement import fleiss_kappa

SHARED_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
EMOTIONS = ["neutral", "joy", "sadness", "fear", "anger", "surprise", "disgust"]


def judgments(rows: list[tuple[object, object, object]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["item", "rater", "value"])


TIED = judgments(
    [
        (1, "a", "x"), (1, "b", "x"), (1, "c", "y"),
        (2, "a", "y"), (2, "b", "x"),
        (3, "a", "z"), (3, "b", "y"), (3, "c", "z"), (3, "d", None),
    ]
)  # fmt: skip


def crowd(n_items: int = 300, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    """Simulate 4 careful raters and 1 spammer answering uniformly at random, 3 classes."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 3, n_items)
    rows = []
    for item, label in enumerate(truth):
        for rater, accuracy in enumerate([0.9, 0.85, 0.8, 0.75, 0.0]):
            value = label if rng.random() < accuracy else rng.integers(0, 3)
            rows.append((item, f"r{rater}", int(value)))
    return judgments(rows), truth


# --- majority vote ---------------------------------------------------------------------------


def test_majority_vote_picks_the_value_with_most_votes() -> None:
    result = majority_vote(TIED)
    assert result.loc[1, "label"] == "x" and result.loc[1, "votes"] == 2
    assert result.loc[3, "label"] == "z" and result.loc[3, "n_votes"] == 3  # missing ignored


def test_majority_vote_reports_ties_with_their_candidates_and_no_label() -> None:
    result = majority_vote(TIED, ties="report")
    assert result.loc[2, "tied"]
    assert pd.isna(result.loc[2, "label"])
    assert result.loc[2, "candidates"] == ("x", "y")
    assert not result.loc[1, "tied"]


def test_majority_vote_can_drop_tied_items() -> None:
    assert list(majority_vote(TIED, ties="drop").index) == [1, 3]


def test_majority_vote_can_raise_naming_the_tied_items() -> None:
    with pytest.raises(ValueError, match=r"e\.g\. \[2\]"):
        majority_vote(TIED, ties="raise")


def test_majority_vote_rejects_an_unknown_tie_policy() -> None:
    with pytest.raises(ValueError, match="ties must be one of"):
        majority_vote(TIED, ties="random")  # type: ignore[arg-type]


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_majority_vote_does_not_depend_on_row_order(seed: int) -> None:
    frame, _ = crowd(40)
    shuffled = frame.sample(frac=1.0, random_state=seed)
    pd.testing.assert_frame_equal(
        majority_vote(shuffled).sort_index(), majority_vote(frame).sort_index()
    )


def test_majority_vote_rejects_a_rater_voting_twice_on_an_item() -> None:
    with pytest.raises(ValueError, match="more than once"):
        majority_vote(judgments([(1, "a", "x"), (1, "a", "y")]))


def test_majority_vote_rejects_judgments_without_a_rater_column() -> None:
    with pytest.raises(ValueError, match="missing \\['rater'\\]"):
        majority_vote(pd.DataFrame({"item": [1], "value": ["x"]}))


# --- EmotionLines gold labels ----------------------------------------------------------------


def test_emotionlines_gives_the_label_of_an_absolute_majority() -> None:
    labels = emotionlines_labels([[3, 1, 1, 0, 0, 0, 0], [0, 0, 0, 0, 5, 0, 0]], EMOTIONS)
    assert labels.tolist() == ["neutral", "anger"]


def test_emotionlines_makes_an_item_without_a_majority_non_neutral() -> None:
    labels = emotionlines_labels([[2, 2, 1, 0, 0, 0, 0], [0, 2, 1, 1, 1, 0, 0]], EMOTIONS)
    assert labels.tolist() == [NON_NEUTRAL, NON_NEUTRAL]


def test_emotionlines_threshold_is_a_parameter() -> None:
    counts = [[3, 1, 1, 0, 0, 0, 0], [2, 1, 1, 1, 0, 0, 0]]
    assert emotionlines_labels(counts, EMOTIONS, threshold=4).tolist() == [NON_NEUTRAL] * 2
    assert emotionlines_labels(counts, EMOTIONS, threshold=2).tolist() == ["neutral"] * 2


def test_emotionlines_never_breaks_a_tie_at_a_low_threshold() -> None:
    labels = emotionlines_labels([[2, 2, 1, 0, 0, 0, 0]], EMOTIONS, threshold=2)
    assert labels.tolist() == [NON_NEUTRAL]


def test_emotionlines_majority_follows_each_items_own_number_of_votes() -> None:
    labels = emotionlines_labels([[3, 3, 1, 0, 0, 0, 0], [3, 1, 0, 0, 0, 0, 0]], EMOTIONS)
    assert labels.tolist() == [NON_NEUTRAL, "neutral"]  # 3 of 7 is no majority; 3 of 4 is


def test_emotionlines_keeps_the_index_of_a_count_frame() -> None:
    frame = pd.DataFrame([[0, 3, 2, 0, 0, 0, 0]], columns=EMOTIONS, index=["utt-9"])
    assert emotionlines_labels(frame, EMOTIONS).to_dict() == {"utt-9": "joy"}


def test_emotionlines_rejects_counts_with_the_wrong_number_of_labels() -> None:
    with pytest.raises(ValueError, match="7 labels"):
        emotionlines_labels([[3, 2]], EMOTIONS)


def test_emotionlines_rejects_items_without_votes() -> None:
    with pytest.raises(ValueError, match="without votes"):
        emotionlines_labels([[0] * 7], EMOTIONS)


def _friends() -> tuple[np.ndarray, list[str]]:
    folder = SHARED_DATA / "emotionlines_friends"
    if not folder.exists():
        pytest.skip(f"{folder} is absent")
    counts, released = [], []
    for part in ("train", "dev", "test"):
        for dialogue in json.loads((folder / f"friends_{part}.json").read_text()):
            for utterance in dialogue:
                counts.append([int(digit) for digit in utterance["annotation"]])
                released.append(utterance["emotion"])
    return np.array(counts), released


def test_emotionlines_reproduces_every_released_friends_label() -> None:
    counts, released = _friends()
    labels = emotionlines_labels(counts, EMOTIONS)
    assert len(labels) == 14_503
    mismatches = Counter(zip(labels, released, strict=True))
    assert sum(n for (ours, theirs), n in mismatches.items() if ours != theirs) == 0
    # The paper's description holds for all of them: >2 different emotions were voted.
    non_neutral = counts[labels.to_numpy() == NON_NEUTRAL]
    assert len(non_neutral) == 2_772 and ((non_neutral > 0).sum(axis=1) > 2).all()


def test_fleiss_kappa_of_the_friends_votes_is_the_published_034() -> None:
    counts, _ = _friends()
    assert round(fleiss_kappa(counts), 2) == 0.34  # Chen et al. (2018), EmotionLines, LREC


# --- Dawid-Skene and MACE (crowd-kit) --------------------------------------------------------


def test_dawid_skene_recovers_the_truth_and_ranks_the_spammer_last() -> None:
    frame, truth = crowd()
    labels, accuracy = dawid_skene(frame)
    assert (labels.sort_index().to_numpy() == truth).mean() > 0.95
    assert accuracy.idxmin() == "r4"
    assert accuracy["r0"] > 0.85


def test_dawid_skene_gives_a_missing_label_to_a_posterior_tie_with_a_warning() -> None:
    with pytest.warns(TiedLabelWarning, match="tied posterior"):
        labels, _ = dawid_skene(judgments([(1, "a", "x"), (1, "b", "y")]))
    assert labels.isna().all()


@pytest.mark.parametrize("model", [dawid_skene, mace])
def test_latent_class_models_reject_empty_judgments(model: object) -> None:
    with pytest.raises(ValueError, match="no judgments"):
        model(judgments([]))  # type: ignore[operator]


def test_mace_recovers_the_truth_and_gives_the_spammer_the_lowest_competence() -> None:
    frame, truth = crowd()
    labels, competence = mace(frame)
    assert (labels.sort_index().to_numpy() == truth).mean() > 0.95
    assert competence.idxmin() == "r4" and competence["r4"] < 0.2
    assert set(competence.index) == {"r0", "r1", "r2", "r3", "r4"}


# --- rater quality ---------------------------------------------------------------------------


def _leave_one_out_by_hand(frame: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for _, judgment in frame.iterrows():
        others = frame[(frame["item"] == judgment["item"]) & (frame["rater"] != judgment["rater"])]
        tally = Counter(others["value"]).most_common()
        clear = bool(tally) and (len(tally) == 1 or tally[0][1] > tally[1][1])
        rows.append((judgment["rater"], clear, clear and tally[0][0] == judgment["value"]))
    table = pd.DataFrame(rows, columns=["rater", "compared", "agree"])
    return table.groupby("rater").agg(n_compared=("compared", "sum"), n_agree=("agree", "sum"))


@settings(max_examples=60, deadline=None)
@given(
    votes=st.lists(
        st.tuples(st.integers(0, 5), st.sampled_from("abcd"), st.sampled_from("xyz")),
        min_size=1,
        max_size=40,
        unique_by=lambda vote: (vote[0], vote[1]),
    )
)
def test_rater_agreement_equals_a_leave_one_out_count_by_hand(
    votes: list[tuple[int, str, str]],
) -> None:
    frame = judgments(votes)
    result = rater_agreement(frame)
    expected = _leave_one_out_by_hand(frame)
    for column in ("n_compared", "n_agree"):
        assert result[column].to_dict() == expected[column].astype(int).to_dict()


def test_rater_agreement_leaves_out_tied_leave_one_out_majorities() -> None:
    result = rater_agreement(TIED)
    # a: item 1 others x/y tie, item 2 other says x (a said y), item 3 others z/y tie.
    assert result.loc["a"].to_dict() == {
        "n_judgments": 3, "n_compared": 1, "n_agree": 0, "agreement": 0.0,
    }  # fmt: skip


def test_rater_agreement_ranks_the_spammer_last() -> None:
    frame, _ = crowd()
    result = rater_agreement(frame)
    assert result["agreement"].idxmin() == "r4"
    assert result.loc["r0", "agreement"] > 0.85
