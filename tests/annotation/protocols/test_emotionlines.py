"""EmotionLines: whole-dialogue items, the 3-second rule on the server, gold labels, report."""

import json
from datetime import timedelta

import numpy as np
import pandas as pd
import pytest

from annotation.allocation import item_next
from annotation.models import Judgment
from annotation.protocols import registry
from annotation.services import assignment_start, campaign_create, judgment_submit
from evalsite.errors import InvalidAnswer, InvalidParameters
from evalstats.agreement import fleiss_kappa, fleiss_kappa_ci
from evalstats.emotion_labels import (
    gold_labels,
    kappa_by_source,
    label_distribution,
    utterance_votes,
)
from tests.factories import CampaignFactory, ItemFactory, WorkerFactory

EL = registry.get("emotionlines")
PARAMS = EL.clean_parameters({"n_boot": 200})
LABELS = PARAMS["labels"]


def dialogue(n: int, source: str = "Friends") -> dict:
    return {
        "utterances": [{"speaker": "AB"[i % 2], "text": f"line {i}"} for i in range(n)],
        "source": source,
    }


def frames(votes: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Items and judgments from {item: (source, [[label per rater] per utterance])}."""
    items, rows = [], []
    for item, (source, utterances) in votes.items():
        items.append({"item": item, "payload": dialogue(len(utterances), source)})
        for u, raters in enumerate(utterances):
            for r, label in enumerate(raters):
                rows.append({"item": item, "rater": f"r{r}", "question": f"u{u}", "value": label})
    return pd.DataFrame(items), pd.DataFrame(rows)


def test_defaults_are_the_published_ones():
    assert LABELS == ["neutral", "joy", "sadness", "fear", "anger", "surprise", "disgust"]
    assert PARAMS["min_seconds_per_utterance"] == 3.0
    assert PARAMS["pay_buckets"] == [
        [5, 9, "0.10"],
        [10, 14, "0.15"],
        [15, 19, "0.20"],
        [20, 24, "0.25"],
    ]
    assert EL.default_redundancy == 5


@pytest.mark.parametrize(
    "parameters, field",
    [
        ({"labels": ["joy"]}, "labels"),
        ({"labels": ["joy", "joy"]}, "labels"),
        ({"fallback_label": "joy"}, "fallback_label"),
        ({"min_seconds_per_utterance": -1}, "min_seconds_per_utterance"),
        ({"vote_threshold": 0}, "vote_threshold"),
        ({"pay_buckets": [[5, 9, "0.10"], [9, 12, "0.2"]]}, "pay_buckets"),
        ({"pay_buckets": [[5, 9, "free"]]}, "pay_buckets"),
    ],
)
def test_bad_parameters_are_refused_by_name(parameters, field):
    with pytest.raises(InvalidParameters) as refused:
        EL.clean_parameters(parameters)
    assert field in refused.value.fields


def test_a_configured_label_set_is_what_workers_may_answer():
    params = EL.clean_parameters({"labels": ["positive", "negative", "neutral"]})
    assert EL.clean_answers(params, {"u0": "positive", "u1": "neutral"}) == {
        "u0": "positive",
        "u1": "neutral",
    }
    with pytest.raises(InvalidAnswer) as refused:
        EL.clean_answers(params, {"u0": "joy"})
    assert "u0" in refused.value.fields


def test_hand_built_votes_give_the_published_rules_labels():
    items, judgments = frames(
        {
            "d1": (
                "Friends",
                [
                    ["joy"] * 5,  # unanimous
                    ["anger", "anger", "anger", "neutral", "disgust"],  # 3-1-1: labeled
                    ["joy", "joy", "sadness", "sadness", "neutral"],  # 2-2-1 tie
                    ["neutral", "joy", "sadness", "fear", "anger"],  # five emotions
                    ["surprise", "surprise", "joy", "fear", "neutral"],  # 2-1-1-1
                    ["neutral", "neutral", "neutral", "neutral", "joy"],
                ],
            )
        }
    )
    gold = gold_labels(utterance_votes(items, judgments, LABELS), LABELS, PARAMS)
    assert gold["label"].tolist() == [
        "joy",
        "anger",
        "non-neutral",
        "non-neutral",
        "non-neutral",
        "neutral",
    ]
    low = EL.clean_parameters({"vote_threshold": 2, "n_boot": 0})
    gold = gold_labels(utterance_votes(items, judgments, LABELS), LABELS, low)
    # At 2 votes a 2-1-1-1 split is labeled; a 2-2-1 tie is never broken.
    assert gold["label"].tolist()[2:5] == ["non-neutral", "non-neutral", "surprise"]


def test_report_gives_distribution_and_fleiss_kappa_per_source():
    rng = np.random.default_rng(1)
    votes = {}
    for d in range(12):
        source = "Friends" if d < 6 else "EmotionPush"
        utterances = []
        for _ in range(8):
            truth = LABELS[int(rng.integers(0, 3))]
            utterances.append(
                [truth if rng.random() < 0.7 else LABELS[int(rng.integers(0, 7))] for _ in range(5)]
            )
        votes[f"d{d}"] = (source, utterances)
    items, judgments = frames(votes)
    report = EL.report(PARAMS, items, judgments)
    distribution = report.tables["distribution"].set_index("source")
    assert list(distribution.index) == ["EmotionPush", "Friends", "all"]
    assert distribution.loc["Friends", "dialogues"] == 6
    assert distribution.loc["Friends", "utterances"] == 48
    shares = distribution[[*LABELS, "non-neutral"]]
    assert np.allclose(shares.sum(axis=1), 100)
    gold = gold_labels(utterance_votes(items, judgments, LABELS), LABELS, PARAMS)
    friends = gold[gold["source"] == "Friends"]
    expected = (friends["label"] == "non-neutral").mean() * 100
    assert distribution.loc["Friends", "non-neutral"] == pytest.approx(expected)

    agreement = report.tables["agreement"].set_index("source")
    counts = utterance_votes(items, judgments, LABELS)
    by_hand = fleiss_kappa(counts[counts["source"] == "Friends"][LABELS].to_numpy())
    assert agreement.loc["Friends", "kappa"] == pytest.approx(by_hand)
    assert agreement.loc["Friends", "ci_low"] < by_hand < agreement.loc["Friends", "ci_high"]
    assert agreement.loc["Friends", "raters"] == 5
    assert "distribution" in report.figures


def test_distribution_of_no_labels_is_empty():
    assert label_distribution(pd.DataFrame(columns=["item", "source", "label"]), LABELS).empty


# --- submission: every line, and 3 s per line measured by the server -------------------------


@pytest.fixture
def leased(db):
    campaign = CampaignFactory(protocol="emotionlines", parameters=PARAMS, redundancy=5)
    ItemFactory(campaign=campaign, payload=EL.clean_item(dialogue(4)))
    assignment = assignment_start(campaign=campaign, worker=WorkerFactory())
    item = item_next(assignment=assignment)
    return assignment, item, item.leases.get().created_at


ALL = {"u0": "joy", "u1": "neutral", "u2": "anger", "u3": "neutral"}


def test_a_whole_dialogue_labeled_in_time_is_stored_one_judgment_per_line(leased):
    assignment, item, leased_at = leased
    timing = [[100 + 3100 * i, 3200 + 3100 * i] for i in range(4)]
    judgment_submit(
        assignment=assignment,
        item_id=item.pk,
        answers={**ALL, "timing": json.dumps(timing)},
        now=leased_at + timedelta(seconds=14),
    )
    stored = {j.question: j.value for j in Judgment.objects.filter(item=item)}
    assert stored == ALL


def test_labeling_faster_than_three_seconds_a_line_is_refused_by_the_server(leased):
    assignment, item, leased_at = leased
    with pytest.raises(InvalidAnswer, match="4 lines in 11.0 s"):
        judgment_submit(
            assignment=assignment,
            item_id=item.pk,
            answers=ALL,
            now=leased_at + timedelta(seconds=11),
        )
    assert not Judgment.objects.exists()


def test_one_line_answered_too_soon_after_it_was_shown_is_refused_by_name(leased):
    assignment, item, leased_at = leased
    timing = [[0, 3000], [3000, 6500], [6500, 8000], [8000, 11500]]
    with pytest.raises(InvalidAnswer) as refused:
        judgment_submit(
            assignment=assignment,
            item_id=item.pk,
            answers={**ALL, "timing": timing},
            now=leased_at + timedelta(seconds=20),
        )
    assert list(refused.value.fields) == ["u2"]
    assert "1.5 s after it was shown" in refused.value.fields["u2"]
    assert not Judgment.objects.exists()


def test_times_later_than_the_server_measured_are_refused(leased):
    assignment, item, leased_at = leased
    timing = [[0, 30_000], [30_000, 60_000], [60_000, 90_000], [90_000, 120_000]]
    with pytest.raises(InvalidAnswer):
        judgment_submit(
            assignment=assignment,
            item_id=item.pk,
            answers={**ALL, "timing": timing},
            now=leased_at + timedelta(seconds=20),
        )


@pytest.mark.parametrize(
    "timing",
    [
        "[[NaN, NaN], [NaN, NaN], [NaN, NaN], [NaN, NaN]]",
        "[[0, Infinity], [0, 1], [0, 1], [0, 1]]",
        [[0, 3000], [3000, 6500], [6500, 9700]],
        [[0, "3000"], [3000, 6500], [6500, 9700], [9700, 13000]],
    ],
)
def test_answer_times_that_are_not_finite_numbers_per_line_are_refused(leased, timing):
    assignment, item, leased_at = leased
    with pytest.raises(InvalidAnswer, match="answer times"):
        judgment_submit(
            assignment=assignment,
            item_id=item.pk,
            answers={**ALL, "timing": timing},
            now=leased_at + timedelta(seconds=20),
        )
    assert not Judgment.objects.exists()


def test_a_line_left_unlabeled_is_refused_naming_it(leased):
    assignment, item, leased_at = leased
    answers = {k: v for k, v in ALL.items() if k != "u2"}
    with pytest.raises(InvalidAnswer) as refused:
        judgment_submit(
            assignment=assignment,
            item_id=item.pk,
            answers=answers,
            now=leased_at + timedelta(seconds=60),
        )
    assert list(refused.value.fields) == ["u2"]


def test_items_are_checked():
    assert EL.clean_item({"utterances": ["hi", {"speaker": "B", "text": " yo "}]}) == {
        "utterances": [{"speaker": "", "text": "hi"}, {"speaker": "B", "text": "yo"}]
    }
    for bad in ({"utterances": []}, {"utterances": [""]}, {"utterances": [{"text": 3}]}):
        with pytest.raises(InvalidParameters):
            EL.clean_item(bad)


def test_labeled_dialogues_carry_gold_labels_and_pseudonymous_votes():
    items, judgments = frames({"d1": ("Friends", [["joy"] * 3 + ["anger"] * 2, ["fear"] * 5])})
    record = EL.labeled_dialogues(PARAMS, items, judgments)[0]
    assert [u.label for u in record.utterances] == ["joy", "fear"]
    assert record.utterances[0].annotations["votes"] == {"joy": 3, "anger": 2}
    assert record.utterances[0].annotations["workers"]["r4"] == "anger"


@pytest.mark.django_db
def test_launch_pays_by_the_protocols_dialogue_length_buckets():
    from decimal import Decimal

    from annotation.models import Campaign
    from recruitment.launch import launch_preview
    from recruitment.services import LaunchOptions

    campaign = CampaignFactory(
        protocol="emotionlines",
        parameters=PARAMS,
        status=Campaign.Status.DRAFT,
        items_per_assignment=2,
        redundancy=5,
        budget=Decimal("100.00"),
    )
    for n in (5, 12):  # $0.10 and $0.15 per dialogue
        ItemFactory(campaign=campaign, payload=EL.clean_item(dialogue(n)))
    preview = launch_preview(campaign=campaign, options=LaunchOptions(provider="local"))
    # Published at the lowest bucket's rate for 2 dialogues; the rest reserved as top-ups.
    assert preview.plan.hits[0].reward == Decimal("0.20")
    assert preview.topup_reserve == Decimal("0.25")  # (0.10 + 0.15) x 5 - 0.20 x 5


def test_a_new_campaign_gives_one_dialogue_per_hit_unless_told_otherwise(db):
    one = campaign_create(slug="el-one", name="EL", protocol="emotionlines")
    assert (one.items_per_assignment, one.redundancy) == (1, 5)
    three = campaign_create(
        slug="el-three", name="EL", protocol="emotionlines", items_per_assignment=3
    )
    assert three.items_per_assignment == 3


def test_kappa_interval_draws_whole_dialogues() -> None:
    rng = np.random.default_rng(0)
    rows = []
    for dialogue in range(40):
        easy = rng.random() < 0.5  # whole dialogues are easy or hard to agree on
        for utterance in range(12):
            truth = int(rng.integers(0, 3))
            votes = [truth if rng.random() < (0.9 if easy else 0.4) else int(rng.integers(0, 3))]
            votes += [
                truth if rng.random() < (0.9 if easy else 0.4) else int(rng.integers(0, 3))
                for _ in range(4)
            ]
            counts = np.bincount(votes, minlength=3)
            rows.append(
                {"item": f"d{dialogue}", "utterance": utterance, "source": "x"}
                | dict(zip(["joy", "anger", "neutral"], counts.tolist(), strict=True))
            )
    counts = pd.DataFrame(rows)
    table = kappa_by_source(counts, ["joy", "anger", "neutral"], n_boot=500).iloc[0]
    assert table["ci_method"] == "bootstrap over dialogues"
    assert table["ci_low"] < table["kappa"] < table["ci_high"]
    by_utterance = fleiss_kappa_ci(counts[["joy", "anger", "neutral"]].to_numpy(), n_boot=500)
    assert table["ci_high"] - table["ci_low"] > by_utterance.high - by_utterance.low
