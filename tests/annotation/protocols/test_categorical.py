"""The generic categorical protocol: parameters, items, answers, gold, and its report under the
three aggregations (majority vote, Dawid–Skene, MACE) with each rater's estimated quality."""

import io

import numpy as np
import pandas as pd
import pytest
from django.core.management import CommandError, call_command

from annotation.models import Participation, Worker
from annotation.protocols import GoldChecks, registry
from annotation.selectors import campaign_report
from annotation.services import campaign_create, campaign_set_status, items_add
from annotation.simulation import crowd_make, crowd_run
from evalsite.errors import InvalidAnswer, InvalidParameters
from evalstats.agreement import fleiss_kappa
from evalstats.options import report_options_set

CAT = registry.get("categorical")
LABELS = ["cat", "dog", "bird"]
PARAMS = CAT.clean_parameters({"labels": LABELS, "question": "Which animal is it about?"})


@pytest.mark.parametrize(
    ("labels", "message"),
    [
        (["only"], "Give 2 to 50 labels, not 1."),
        ([f"l{i}" for i in range(51)], "Give 2 to 50 labels, not 51."),
        (["a", " ", "b"], "A label must not be empty."),
        (["a", "b", "a"], "Labels must differ; given twice: a."),
        ("a,b", "Give the labels as a list of texts."),
        (["a", 2], "Give the labels as a list of texts."),
        (["a", "x" * 101], "A label has at most 100 characters."),
    ],
)
def test_bad_labels_are_refused_with_a_clear_message(labels, message):
    with pytest.raises(InvalidParameters) as caught:
        CAT.clean_parameters({"labels": labels})
    assert caught.value.fields["labels"] == message


def test_parameters_keep_defaults_and_refuse_unknown_keys_and_empty_questions():
    assert CAT.clean_parameters({})["labels"] == ["positive", "neutral", "negative"]
    assert CAT.clean_parameters({"labels": [" yes ", "no"]})["labels"] == ["yes", "no"]
    with pytest.raises(InvalidParameters, match="Unknown parameter"):
        CAT.clean_parameters({"label_set": LABELS})
    with pytest.raises(InvalidParameters) as caught:
        CAT.clean_parameters({"question": " ", "instructions": 3})
    assert set(caught.value.fields) == {"question", "instructions"}


def test_an_item_is_a_text_or_a_conversation():
    assert CAT.clean_item({"text": " A tabby. "}) == {"text": "A tabby."}
    assert CAT.clean_item({"context": ["hi", " there "]}) == {"context": ["hi", "there"]}
    for bad in (
        {},
        {"text": "x", "context": ["y"]},
        {"text": ""},
        {"text": 3},
        {"context": []},
        {"context": ["ok", ""]},
        {"text": "x", "model": "m"},
        ["text"],
    ):
        with pytest.raises(InvalidParameters):
            CAT.clean_item(bad)


def test_answers_are_one_of_the_labels():
    assert CAT.clean_answers(PARAMS, {"label": "dog"}) == {"label": "dog"}
    for bad in ({}, {"label": ""}, {"label": "cow"}, {"label": ["dog"]}):
        with pytest.raises(InvalidAnswer) as caught:
            CAT.clean_answers(PARAMS, bad)
        assert "label" in caught.value.fields
    with pytest.raises(InvalidAnswer) as caught:
        CAT.clean_answers(PARAMS, {"label": "dog", "mood": "x"})
    assert set(caught.value.fields) == {"mood"}
    question = CAT.questions(PARAMS)[0]
    assert [c[0] for c in question.choices] == LABELS and question.text.startswith("Which")


def test_gold_answers_are_checked_and_compared():
    assert isinstance(CAT, GoldChecks)
    gold = CAT.clean_gold(PARAMS, {"label": ["cat", "dog"]})
    assert CAT.gold_correct(gold, {"label": "dog"}, {})
    assert not CAT.gold_correct(gold, {"label": "bird"}, {})
    with pytest.raises(InvalidParameters, match="'cow'"):
        CAT.clean_gold(PARAMS, {"label": "cow"})


def _frames(votes: dict[str, list[str]]) -> tuple[pd.DataFrame, pd.DataFrame]:
    items = pd.DataFrame([{"item": k, "payload": {"text": k}} for k in votes])
    rows = [
        {"item": k, "rater": f"r{r}", "question": "label", "value": v}
        for k, labels in votes.items()
        for r, v in enumerate(labels)
    ]
    return items, pd.DataFrame(rows)


def test_report_by_majority_gives_labels_distribution_and_agreement():
    votes = {
        "i1": ["cat", "cat", "dog"],
        "i2": ["dog", "dog", "dog"],
        "i3": ["cat", "dog", "bird"],  # tied
        "i4": ["bird", "bird", "cat"],
    }
    report = CAT.report(PARAMS, *_frames(votes))
    labels = report.tables["labels"].set_index("item")
    assert labels.loc["i1", "label"] == "cat" and labels.loc["i4", "label"] == "bird"
    assert labels.loc["i3", "tied"] and pd.isna(labels.loc["i3", "label"])
    assert set(labels["method"]) == {"majority vote (ties left unlabeled)"}
    distribution = report.tables["distribution"].iloc[0]
    assert distribution["cat"] == pytest.approx(25.0) and distribution["unlabeled"] == 1
    agreement = report.tables["agreement"].set_index("statistic")
    table = [[2, 1, 0], [0, 3, 0], [1, 1, 1], [1, 0, 2]]
    assert agreement.loc["Fleiss' kappa", "value"] == pytest.approx(fleiss_kappa(table))
    alpha = agreement.loc["Krippendorff's alpha (nominal)"]
    assert alpha["ci_low"] <= alpha["value"] <= alpha["ci_high"]
    assert "raters" not in report.tables
    assert "majority vote" in report.notes[0]


def _spammer_crowd(seed: int = 1, n_items: int = 120) -> tuple[pd.DataFrame, pd.Series]:
    """Four honest raters of mixed skill and one spammer, every rater on every item."""
    rng = np.random.default_rng(seed)
    truth = pd.Series(rng.choice(LABELS, n_items), index=[f"i{k}" for k in range(n_items)])
    skill = {"r0": 0.9, "r1": 0.8, "r2": 0.65, "r3": 0.6, "spam": None}
    rows = []
    for item, right in truth.items():
        for rater, p in skill.items():
            if p is not None and rng.random() < p:
                value = right
            else:
                value = rng.choice([x for x in LABELS if p is None or x != right])
            rows.append({"item": item, "rater": rater, "question": "label", "value": value})
    return pd.DataFrame(rows), truth


def test_ds_and_mace_label_at_least_as_well_as_majority_and_find_the_spammer():
    judgments, truth = _spammer_crowd()
    items = pd.DataFrame({"item": truth.index, "payload": [{"text": "x"}] * len(truth)})
    accuracy = {}
    for method in ("majority", "ds", "mace"):
        with report_options_set(aggregate=method, n_boot=50):
            report = CAT.report(PARAMS, items, judgments)
        labels = report.tables["labels"].set_index("item")["label"]
        accuracy[method] = (labels.reindex(truth.index) == truth).mean()
        if method != "majority":
            raters = report.tables["raters"]
            assert raters.iloc[0]["rater"] == "spam", method
            assert raters["quality"].idxmin() == raters.index[0]
            assert report.tables["labels"]["method"].iloc[0] in report.notes[0]
    assert accuracy["ds"] >= accuracy["majority"]
    assert accuracy["mace"] >= accuracy["majority"]


def test_a_bad_aggregate_is_refused():
    with (
        pytest.raises(ValueError, match="aggregate must be one of majority, ds, mace"),
        report_options_set(aggregate="median"),
    ):
        pass


@pytest.mark.django_db
def test_a_simulated_campaign_reports_and_the_report_command_takes_aggregate(tmp_path):
    campaign = campaign_create(
        slug="animals",
        name="Animals",
        protocol="categorical",
        parameters={"labels": LABELS},
        redundancy=5,
    )
    truth = {f"t{k}": LABELS[k % 3] for k in range(12)}
    items_add(campaign=campaign, items=[(k, {"text": f"about a {v}"}) for k, v in truth.items()])
    campaign_set_status(campaign=campaign, status="live")
    run = crowd_run(
        campaign=campaign,
        workers=crowd_make(good=4, noisy=0, spammer=1),
        truth=lambda item: {"label": truth[item.key]},
    )
    assert run.total == 60 and not run.errors
    report = campaign_report(campaign)
    labels = report.tables["labels"].set_index("item")["label"]
    assert (labels.reindex(list(truth)) == pd.Series(truth)).mean() >= 0.75
    out = io.StringIO()
    call_command("report", campaign.slug, "--aggregate", "ds", "--out", str(tmp_path), stdout=out)
    assert "Dawid–Skene" in out.getvalue()
    raters = pd.read_csv(tmp_path / "animals_raters.csv")
    spammer = Worker.objects.get(external_id="sim-spammer-1")
    # Where the quality review at the end of the run soft-blocked the spammer (12 items are
    # little evidence: it depends on who got which item), their labels are left out and
    # Dawid–Skene rates the four good workers; otherwise it rates the spammer worst.
    if Participation.objects.filter(worker=spammer, campaign=campaign, soft_blocked=True):
        assert spammer.pseudonym not in set(raters["rater"]) and len(raters) == 4
    else:
        assert raters.iloc[0]["rater"] == spammer.pseudonym
    with pytest.raises(CommandError, match="aggregate must be one of majority, ds, mace"):
        call_command("report", campaign.slug, "--aggregate", "vote", stdout=io.StringIO())


def test_the_item_page_shows_a_text_or_a_conversation():
    from django.template.loader import render_to_string

    text = render_to_string(CAT.template_name, {"payload": {"text": "A <b>tabby</b>.\nYes."}})
    assert "A &lt;b&gt;tabby&lt;/b&gt;.<br>Yes." in text and "Instructions" in text
    chat = render_to_string(
        CAT.template_name, {"payload": {"context": ["hi", "hello"]}, "instructions_card": "x"}
    )
    assert chat.count('<li class="turn') == 2 and "Instructions" not in chat
