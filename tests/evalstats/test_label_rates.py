"""Emotion label rates (EmotionLines' Table 4 shares) with a two-way interval (issue #33)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from annotation.protocols import registry
from evalstats import aggregation, cluster_bootstrap
from evalstats.agreement import twoway
from evalstats.emotion_labels import (
    RATES_TWO_WAY,
    gold_labels,
    label_distribution,
    label_rates,
)
from evalstats.options import report_options_set

LABELS = ["neutral", "joy", "anger", "fear"]


def _study(
    rng: np.random.Generator, dialogues: int = 30, pool: int | None = 6, taste: float = 0.3
) -> pd.DataFrame:
    """Votes of 5 workers per dialogue (of 3-6 utterances) from a pool (None: fresh workers);
    each worker is right with chance 0.6, else votes its favourite label with chance
    ``taste``, else a label at random."""
    rows = []
    favourite = rng.integers(0, len(LABELS), 20_000)
    for d in range(dialogues):
        workers = rng.choice(pool, 5, replace=False) if pool else np.arange(5 * d, 5 * d + 5) + 100
        for u in range(int(rng.integers(3, 7))):
            truth = int(rng.choice(len(LABELS), p=[0.5, 0.25, 0.15, 0.1]))
            for w in workers:
                draw = rng.random()
                vote = truth if draw < 0.6 else favourite[w]
                vote = vote if draw < 0.6 + 0.4 * taste else int(rng.integers(len(LABELS)))
                rows.append((f"d{d}", u, f"w{w}", LABELS[vote]))
    return pd.DataFrame(rows, columns=["item", "utterance", "rater", "value"])


def _gold(votes: pd.DataFrame, threshold: int | None = None) -> pd.DataFrame:
    counts = (
        votes.groupby(["item", "utterance", "value"])
        .size()
        .unstack("value", fill_value=0)
        .reindex(columns=LABELS, fill_value=0)
        .reset_index()
    )
    counts.columns.name = None
    counts.insert(2, "source", np.where(counts["item"].str[1:].astype(int) % 2, "a", "b"))
    return gold_labels(counts, LABELS, {"vote_threshold": threshold})


def _coded(votes: pd.DataFrame) -> twoway.Cells:
    unit = votes["item"] + ":" + votes["utterance"].astype(str)
    long = votes.assign(item=unit, cluster=votes["item"])
    return twoway.cells_code(long, cluster="cluster")


@pytest.mark.parametrize("threshold", [None, 2, 3])
def test_the_rate_statistic_with_every_weight_one_is_the_rules_share(threshold: int | None) -> None:
    votes = _study(np.random.default_rng(1))
    cells = _coded(votes)
    a, self_w = twoway._counts(cells, np.ones((cells.n_raters, 1)))
    shares = twoway.label_rate_statistic(cells, threshold)(a, self_w, np.ones((cells.n_units, 1)))
    gold = aggregation.emotionlines_labels(a[:, :, 0], list(cells.values), threshold=threshold)
    expected = gold.value_counts(normalize=True)
    names = [*map(str, cells.values), aggregation.NON_NEUTRAL]
    assert shares.shape == (1, len(names))
    for k, name in enumerate(names):
        assert shares[0, k] == pytest.approx(expected.get(name, 0.0), abs=1e-12)


def test_a_resample_labels_each_copy_by_the_majority_of_its_copied_votes() -> None:
    rng = np.random.default_rng(2)
    votes = _study(rng, dialogues=12)
    cells = _coded(votes)
    c = rng.multinomial(12, np.full(12, 1 / 12)).astype(float)
    w = rng.multinomial(cells.n_raters, np.full(cells.n_raters, 1 / cells.n_raters))
    a, self_w = twoway._counts(cells, w[:, None].astype(float))
    fast = twoway.label_rate_statistic(cells)(a, self_w, c[cells.cluster_of_unit][:, None])[0]
    # By hand: every copy of a dialogue, each utterance's votes with each worker's vote
    # repeated as often as the worker was drawn; the rule on those votes.
    raters = sorted(votes["rater"].unique())
    dialogues = list(pd.factorize(votes["item"])[1])  # cells_code: clusters as first seen
    labels: list[str] = []
    for (item, _), part in votes.groupby(["item", "utterance"]):
        copied = [
            v
            for r, v in zip(part["rater"], part["value"], strict=True)
            for _ in range(w[raters.index(r)])
        ]
        if not copied:
            continue
        tally = pd.Series(copied).value_counts()
        rule = tally.index[0] if tally.iloc[0] > len(copied) / 2 else aggregation.NON_NEUTRAL
        labels += [rule] * int(c[dialogues.index(item)])
    expected = pd.Series(labels).value_counts(normalize=True)
    names = [*map(str, cells.values), aggregation.NON_NEUTRAL]
    for k, name in enumerate(names):
        assert fast[k] == pytest.approx(expected.get(name, 0.0), abs=1e-12)


def test_label_rates_print_table_4s_shares_exactly_with_an_interval_around_each() -> None:
    votes = _study(np.random.default_rng(3), dialogues=40)
    gold = _gold(votes)
    rates = label_rates(gold, LABELS, votes=votes, n_boot=100)
    table = label_distribution(gold, LABELS).set_index("source")
    assert list(rates["source"].unique()) == ["a", "b", "all"]
    for row in rates.itertuples():
        assert row.pct == table.loc[row.source, row.label]  # the same number, not a recount
        assert row.ci_low <= row.pct <= row.ci_high
        assert row.ci_low >= 0.0
        assert row.ci_high <= 100.0
    assert set(rates["ci_method"]) == {RATES_TWO_WAY}


def test_label_rates_take_the_dialogue_bootstrap_for_fresh_workers_or_units_option() -> None:
    rng = np.random.default_rng(4)
    fresh = _study(rng, dialogues=30, pool=None)
    assert set(label_rates(_gold(fresh), LABELS, votes=fresh)["ci_method"]) == {
        cluster_bootstrap.DIALOGUES
    }
    pooled = _study(rng, dialogues=30)
    gold = _gold(pooled)
    assert set(label_rates(gold, LABELS)["ci_method"]) == {cluster_bootstrap.DIALOGUES}
    with report_options_set(interval="units"):
        units = label_rates(gold, LABELS, votes=pooled, n_boot=200)
    with report_options_set(interval="two-way"):
        two = label_rates(gold, LABELS, votes=pooled, n_boot=200)
    assert set(units["ci_method"]) == {cluster_bootstrap.DIALOGUES}
    assert set(two["ci_method"]) == {RATES_TWO_WAY}
    # Workers with favourite labels spread every common label's share: the two-way interval
    # is wider on the labels that carry them.
    wider = (two["ci_high"] - two["ci_low"]) > (units["ci_high"] - units["ci_low"])
    assert wider[two["source"] == "all"].mean() >= 0.5


def test_a_label_nobody_voted_has_a_zero_share_and_a_zero_interval() -> None:
    votes = _study(np.random.default_rng(5), dialogues=20)
    votes = votes[votes["value"] != "fear"]
    rates = label_rates(_gold(votes), LABELS, votes=votes, n_boot=100)
    fear = rates[rates["label"] == "fear"]
    assert (fear[["pct", "ci_low", "ci_high"]].to_numpy() == 0).all()


@pytest.mark.slow
def test_the_two_way_rate_interval_covers_the_population_share_where_dialogues_alone_fail() -> None:
    """Known truth: the share of utterances whose 5 votes by workers of the population (a
    fresh worker each time) give each label, from a large study of fresh workers; studies
    draw a pool of 6 workers with favourite labels."""
    rng = np.random.default_rng(6)
    big = _study(rng, dialogues=3000, pool=None, taste=0.6)
    truth = _gold(big)["label"].value_counts(normalize=True) * 100
    hits = {"two-way": 0, "units": 0}
    studies = 40
    for _ in range(studies):
        votes = _study(rng, dialogues=40, pool=6, taste=0.6)
        gold = _gold(votes)
        for interval in hits:
            with report_options_set(interval=interval, seed=int(rng.integers(1 << 31))):
                row = label_rates(gold, LABELS, votes=votes, n_boot=200).iloc[-5]  # all: neutral
            hits[interval] += int(row.ci_low <= truth["neutral"] <= row.ci_high)
    assert hits["two-way"] >= 0.85 * studies
    assert hits["units"] < hits["two-way"]


def _judgments(votes: pd.DataFrame, question: pd.Series) -> pd.DataFrame:
    return votes.assign(question=question)[["item", "rater", "question", "value"]]


def test_the_emotionlines_report_gives_each_share_of_its_distribution_an_interval() -> None:
    protocol = registry.get("emotionlines")
    parameters = protocol.clean_parameters({"labels": LABELS, "n_boot": 100})
    votes = _study(np.random.default_rng(7), dialogues=16)
    items = pd.DataFrame(
        {
            "item": sorted(votes["item"].unique()),
            "payload": [{"utterances": [], "source": "s"}] * votes["item"].nunique(),
        }
    )
    report = protocol.report(
        parameters, items, _judgments(votes, "u" + votes["utterance"].astype(str))
    )
    shares = report.tables["distribution"].set_index("source")
    rates = report.tables["label_rates"]
    assert len(rates) == len(LABELS) + 1
    for row in rates.itertuples():
        assert row.pct == shares.loc[row.source, row.label]
        assert row.ci_low <= row.pct <= row.ci_high
    assert set(rates["ci_method"]) == {RATES_TWO_WAY}


def test_the_emocontext_report_gives_each_share_and_the_tied_share_an_interval() -> None:
    protocol = registry.get("emocontext")
    parameters = protocol.clean_parameters({"n_boot": 100})
    labels = list(parameters["labels"])
    rng = np.random.default_rng(8)
    rows = [
        (
            f"i{i}",
            f"w{w}",
            labels[int(rng.integers(len(labels)))] if rng.random() < 0.5 else "others",
        )
        for i in range(40)
        for w in rng.choice(8, 7, replace=False)
    ]
    votes = pd.DataFrame(rows, columns=["item", "rater", "value"])
    items = pd.DataFrame({"item": [f"i{i}" for i in range(40)], "payload": [{}] * 40})
    report = protocol.report(parameters, items, votes.assign(question="label"))
    shares = report.tables["distribution"].iloc[0]
    rates = report.tables["label_rates"]
    assert list(rates["label"]) == [*labels, "tied"]
    expected = shares[labels].to_dict() | {"tied": shares["tied"] / shares["items"] * 100}
    for row in rates.itertuples():  # the distribution's "tied" is a count of items
        assert row.pct == pytest.approx(expected[row.label], abs=1e-9)
        assert row.ci_low <= row.pct <= row.ci_high
    assert set(rates["ci_method"]) == {RATES_TWO_WAY}
