"""EmoContext: 3-turn items, majority of 7 judges with ties reported, kappa, and F1 / WA."""

import numpy as np
import pandas as pd
import pytest

from annotation.protocols import registry
from evalsite.errors import InvalidAnswer, InvalidParameters
from evalstats.agreement import fleiss_kappa
from evalstats.emotion_eval import emocontext_scores, emotionlines_accuracy

EC = registry.get("emocontext")
PARAMS = EC.clean_parameters({"n_boot": 200})


def frames(votes: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    items = pd.DataFrame([{"item": k, "payload": {"turns": ["a", "b", f"c {k}"]}} for k in votes])
    rows = [
        {"item": k, "rater": f"r{r}", "question": "label", "value": v}
        for k, labels in votes.items()
        for r, v in enumerate(labels)
    ]
    return items, pd.DataFrame(rows)


def test_defaults_and_items():
    assert PARAMS["labels"] == ["happy", "sad", "angry", "others"]
    assert EC.default_redundancy == 7
    assert EC.clean_item({"turns": [" hi ", "hello", "so sad"]}) == {
        "turns": ["hi", "hello", "so sad"]
    }
    with pytest.raises(InvalidParameters):
        EC.clean_item({"turns": ["only", "two"]})
    with pytest.raises(InvalidAnswer):
        EC.clean_answers(PARAMS, {"label": "bored"})


def test_majority_of_seven_with_ties_left_unlabeled_and_kappa():
    items, judgments = frames(
        {
            "i1": ["happy"] * 5 + ["others"] * 2,
            "i2": ["sad"] * 3 + ["angry"] * 3 + ["others"],  # tie
            "i3": ["angry"] * 4 + ["sad"] * 3,
            "i4": ["others"] * 7,
        }
    )
    report = EC.report(PARAMS, items, judgments)
    gold = report.tables["gold"].set_index("item")
    assert gold.loc["i1", "label"] == "happy" and gold.loc["i3", "label"] == "angry"
    assert gold.loc["i2", "tied"] and pd.isna(gold.loc["i2", "label"])
    distribution = report.tables["distribution"].iloc[0]
    assert distribution["tied"] == 1 and distribution["happy"] == pytest.approx(25.0)
    table = [[5, 0, 0, 2], [0, 3, 3, 1], [0, 3, 4, 0], [0, 0, 0, 7]]
    assert report.tables["agreement"].iloc[0]["kappa"] == pytest.approx(fleiss_kappa(table))
    record = EC.labeled_dialogues(PARAMS, items, judgments)[0]
    assert record.utterances[-1].label == "happy"
    assert record.utterances[-1].annotations["votes"] == {"happy": 5, "others": 2}


def test_micro_f1_over_the_three_emotions_by_hand():
    gold = ["happy", "happy", "sad", "angry", "others", "others", "sad"]
    pred = ["happy", "others", "sad", "sad", "happy", "others", "sad"]
    table = emocontext_scores(gold, pred).set_index("class")
    # happy: tp 1, fp 1, fn 1; sad: tp 2, fp 1, fn 0; angry: tp 0, fp 0, fn 1.
    assert table.loc["happy", ["precision", "recall"]].tolist() == [0.5, 0.5]
    assert table.loc["sad", "precision"] == pytest.approx(2 / 3)
    assert table.loc["angry", ["precision", "recall", "f1"]].tolist() == [0, 0, 0]
    micro_p, micro_r = 3 / 5, 3 / 5
    assert table.loc["micro", "precision"] == pytest.approx(micro_p)
    assert table.loc["micro", "recall"] == pytest.approx(micro_r)
    assert table.loc["micro", "f1"] == pytest.approx(0.6)
    assert table.loc["micro", "support"] == 5


def test_weighted_and_unweighted_accuracy_by_hand():
    gold = ["neutral"] * 6 + ["joy"] * 2 + ["anger"] * 2 + ["fear"]
    pred = ["neutral"] * 6 + ["joy", "neutral"] + ["neutral", "neutral"] + ["fear"]
    wa, uwa, table = emotionlines_accuracy(gold, pred)
    # fear is not an EmotionX label: left out. neutral 6/6, joy 1/2, anger 0/2.
    assert wa == pytest.approx(7 / 10)
    assert uwa == pytest.approx((1 + 0.5 + 0) / 3)
    assert np.isnan(table.set_index("label").loc["sadness", "accuracy"])


def test_scores_refuse_unequal_lengths():
    with pytest.raises(ValueError, match="same length"):
        emocontext_scores(["happy"], [])


@pytest.mark.django_db
def test_worker_page_shows_the_three_turns_and_stores_the_label(client):
    from annotation.models import Judgment
    from tests.factories import CampaignFactory, ItemFactory

    campaign = CampaignFactory(protocol="emocontext", parameters=PARAMS, redundancy=7)
    ItemFactory(
        campaign=campaign,
        payload=EC.clean_item({"turns": ["my cat is sick", "oh no", "I am so worried"]}),
    )
    page = client.get(f"/task/{campaign.slug}/?workerId=ec1").content.decode()
    assert "my cat is sick" in page and "I am so worried" in page and 'value="angry"' in page
    token = page.split('name="token" value="')[1].split('"')[0]
    item = page.split('name="item" value="')[1].split('"')[0]
    client.post(
        f"/task/{campaign.slug}/submit/?workerId=ec1",
        {"token": token, "item": item, "label": "sad"},
    )
    assert Judgment.objects.get().value == "sad"


def test_the_report_aggregate_option_labels_by_dawid_skene_with_the_raters_quality():
    from evalstats.options import report_options_set

    rng = np.random.default_rng(3)
    labels = ["happy", "sad", "angry", "others"]
    truth = {f"i{k}": labels[k % 4] for k in range(60)}
    votes = {
        k: [v if rng.random() < p else str(rng.choice(labels)) for p in (0.9, 0.8, 0.7, 0.7)]
        + [str(rng.choice(labels))]  # r4 answers at random
        for k, v in truth.items()
    }
    items, judgments = frames(votes)
    with report_options_set(aggregate="ds", n_boot=20):
        report = EC.report(PARAMS, items, judgments)
        record = EC.labeled_dialogues(PARAMS, items, judgments)[0]
    gold = report.tables["gold"].set_index("item")
    assert set(gold["method"]) == {"Dawid–Skene (1979)"}
    assert report.tables["raters"].iloc[0]["rater"] == "r4"
    assert record.utterances[-1].label == gold.loc["i0", "label"]
    assert "Dawid–Skene" in report.notes[0]
