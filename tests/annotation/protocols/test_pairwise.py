"""The A/B protocol: items, answers, the shown order, gold, and the report by hand."""

import re
from html import unescape

import pandas as pd
import pytest

from annotation.models import Judgment
from annotation.protocols import registry
from annotation.protocols.pairwise import outcome, pairwise_items
from annotation.quality import worker_quality
from annotation.services import items_add
from evalsite.errors import InvalidAnswer, InvalidParameters
from tests.factories import CampaignFactory, ItemFactory

AB = registry.get("pairwise")
PARAMS = AB.clean_parameters({"min_judgments_per_pair": 3, "n_boot": 200})


def payload(a="I'm so sorry to hear that.", b="ok", model_a="gen", model_b="generic"):
    return {
        "context": ["My dog died."],
        "model_a": model_a,
        "response_a": a,
        "model_b": model_b,
        "response_b": b,
        "example": "e1",
    }


def test_only_examples_whose_responses_differ_become_items():
    examples = [("e1", ["Hi"]), ("e2", ["How are you?"]), ("e3", ["Bye"])]
    responses = {"x": ["Hello there", "Fine.", "See you"], "y": ["  hello   THERE ", "Good", "ok"]}
    items, skipped = pairwise_items(examples, responses, [("x", "y")])
    assert skipped == 1
    assert [k for k, _ in items] == ["e2/x~y", "e3/x~y"]
    with pytest.raises(InvalidParameters, match="the same"):
        AB.clean_item(payload(a="Hello there", b="hello  there"))
    with pytest.raises(InvalidParameters, match="must differ"):
        AB.clean_item(payload(model_b="gen"))


def test_four_answers_are_kept_distinct_and_anything_else_is_refused():
    for choice in ("first", "second", "both", "neither"):
        assert AB.clean_answers(PARAMS, {"choice": choice}) == {"choice": choice}
    with pytest.raises(InvalidAnswer):
        AB.clean_answers(PARAMS, {"choice": "a"})
    with pytest.raises(InvalidAnswer):
        AB.clean_answers(PARAMS, {})
    for unhashable in (["first"], {"first": 1}):  # JSON lists and objects: TypeError before
        with pytest.raises(InvalidAnswer) as refused:
            AB.clean_answers(PARAMS, {"choice": unhashable})
        assert refused.value.fields["choice"].startswith("Choose first, second, both or neither")


def test_order_is_stable_per_worker_and_item_and_both_orders_occur():
    orders = {tuple(AB.presentation(PARAMS, payload(), f"seed-{i}")["order"]) for i in range(40)}
    assert orders == {("a", "b"), ("b", "a")}
    assert AB.presentation(PARAMS, payload(), "s") == AB.presentation(PARAMS, payload(), "s")
    assert outcome("first", {"order": ["b", "a"]}) == "b"
    assert outcome("second", {"order": ["b", "a"]}) == "a"
    assert outcome("neither", {"order": ["b", "a"]}) == "neither"


def test_report_maps_shown_positions_back_to_models_by_hand():
    items = pd.DataFrame(
        [{"item": "i1", "payload": payload()}, {"item": "i2", "payload": payload()}]
    )
    ab, ba = {"order": ["a", "b"]}, {"order": ["b", "a"]}
    rows = [
        ("i1", "r1", "first", ab),  # gen
        ("i1", "r2", "second", ba),  # gen (shown second)
        ("i1", "r3", "first", ba),  # generic
        ("i2", "r1", "both", ab),
        ("i2", "r2", "neither", ba),
        ("i2", "r3", "second", ba),  # gen
    ]
    judgments = pd.DataFrame(
        [
            {"item": i, "rater": r, "question": "choice", "value": v, "presentation": p}
            for i, r, v, p in rows
        ]
    )
    report = AB.report(PARAMS, items, judgments)
    pair = report.tables["pairs"].iloc[0]
    assert (pair.model_a, pair.model_b) == ("gen", "generic")
    assert (pair.a_wins, pair.b_wins, pair.both, pair.neither) == (3, 1, 1, 1)
    assert pair.ratio == pytest.approx(3.0)
    ratios = report.tables["ratios"].set_index("model")
    assert ratios.loc["generic", "gen"] == pytest.approx(1 / 3)
    bt = report.tables["bradley_terry"]
    assert list(bt["model"]) == ["gen", "generic"]
    assert set(report.figures) == {"ratio_heatmap", "bradley_terry"}
    assert not any("Fewer than" in n for n in report.notes)


def _report_of(pairs, params=PARAMS):
    """Build the A/B report of (model_a, model_b, choice, count) rows, shown in order a, b."""
    items, rows = [], []
    for a, b, choice, count in pairs:
        key = f"{a}~{b}"
        if key not in {i["item"] for i in items}:
            items.append({"item": key, "payload": payload(model_a=a, model_b=b)})
        for n in range(count):
            rows.append(
                {
                    "item": key,
                    "rater": f"{key}-{choice}-{n}",
                    "question": "choice",
                    "value": choice,
                    "presentation": {"order": ["a", "b"]},
                }
            )
    return AB.report(params, pd.DataFrame(items), pd.DataFrame(rows))


def test_a_disconnected_design_gets_one_ranking_per_group_and_a_note_saying_so():
    report = _report_of(
        [("A", "B", "first", 8), ("A", "B", "second", 2), ("C", "D", "first", 5)]
        + [("C", "D", "second", 5)]
    )
    assert "bradley_terry" not in report.tables
    assert list(report.tables["bradley_terry_1"]["model"]) == ["A", "B"]
    assert list(report.tables["bradley_terry_2"]["model"]) == ["C", "D"]
    note = next(n for n in report.notes if "never compared" in n)
    assert "group 1: A, B; group 2: C, D" in note and "no overall ranking" in note
    assert len(report.figures["bradley_terry"].figure.axes) == 2


def test_a_connected_design_gets_one_ranking_and_no_note():
    report = _report_of(
        [("A", "B", "first", 8), ("A", "B", "second", 2), ("B", "C", "first", 4)]
        + [("B", "C", "second", 2)]
    )
    assert list(report.tables["bradley_terry"]["model"]) == ["A", "B", "C"]
    assert not any(k.startswith("bradley_terry_") for k in report.tables)
    assert not any("never compared" in n for n in report.notes)
    assert len(report.figures["bradley_terry"].figure.axes) == 1


TIED = [("A", "B", "first", 8), ("A", "B", "second", 2), ("A", "B", "both", 10)] + [
    ("B", "C", "first", 6),
    ("B", "C", "second", 3),
    ("B", "C", "both", 9),
    ("A", "C", "first", 9),
    ("A", "C", "second", 1),
    ("A", "C", "both", 6),
]


def test_report_states_the_half_win_estimand_and_that_the_win_rates_drop_ties():
    report = _report_of(TIED)
    note = next(n for n in report.notes if n.startswith("Estimand"))
    assert "'both' as half a win each way" in note and "compressed" in note
    assert "win-rate table drops ties" in note and "may disagree" in note
    assert "davidson" in note


def test_davidson_option_fits_the_ties_model_and_says_so():
    half = _report_of(TIED).tables["bradley_terry"].set_index("model")
    params = AB.clean_parameters(
        {"min_judgments_per_pair": 3, "n_boot": 200, "bt_ties": "davidson"}
    )
    report = _report_of(TIED, params)
    table = report.tables["bradley_terry"].set_index("model")
    assert list(table.index) == ["A", "B", "C"]
    assert (table.loc["A", "strength"] - table.loc["C", "strength"]) > (
        half.loc["A", "strength"] - half.loc["C", "strength"]
    )
    assert (table["n"] == half.loc[table.index, "n"]).all()
    note = next(n for n in report.notes if n.startswith("Estimand"))
    assert "Davidson (1970)" in note and "ν = " in note
    contrast = report.tables["bt_contrasts"].set_index(["model_a", "model_b"])
    assert contrast.loc[("A", "C"), "difference"] == pytest.approx(
        table.loc["A", "strength"] - table.loc["C", "strength"]
    )


def test_report_has_a_contrast_row_for_every_pair_with_holm_and_a_verdict():
    report = _report_of(TIED)
    contrast = report.tables["bt_contrasts"]
    assert [(r.model_a, r.model_b) for r in contrast.itertuples()] == [
        ("A", "B"),
        ("A", "C"),
        ("B", "C"),
    ]
    assert (contrast["p_holm"] >= contrast["p"]).all()
    assert contrast["verdict"].isin(["A higher", "B higher", "no difference at 5% (Holm)"]).all()
    assert any(n.startswith("bt_contrasts:") for n in report.notes)


def test_a_disconnected_design_gets_contrasts_per_group():
    report = _report_of(
        [("A", "B", "first", 8), ("A", "B", "second", 2), ("C", "D", "first", 5)]
        + [("C", "D", "second", 5)]
    )
    assert "bt_contrasts" not in report.tables
    assert list(report.tables["bt_contrasts_1"][["model_a", "model_b"]].iloc[0]) == ["A", "B"]
    assert list(report.tables["bt_contrasts_2"][["model_a", "model_b"]].iloc[0]) == ["C", "D"]


def test_parameters_are_validated():
    with pytest.raises(InvalidParameters) as refused:
        AB.clean_parameters(
            {"groups": {"g": [["a"]]}, "bt_prior": -1, "n_boot": "x", "bt_ties": "rao"}
        )
    assert set(refused.value.fields) == {"groups", "bt_prior", "n_boot", "bt_ties"}
    assert "davidson" in refused.value.fields["bt_ties"]
    assert AB.clean_parameters({})["bt_ties"] == "half"
    with pytest.raises(InvalidParameters, match="Unknown"):
        AB.clean_parameters({"pairs_per_item": 2})


@pytest.mark.django_db
def test_the_page_shows_responses_in_the_stored_order(client):
    campaign = CampaignFactory(protocol="pairwise", parameters=PARAMS, redundancy=1)
    ItemFactory(campaign=campaign, payload=payload())
    for worker in ("w1", "w2", "w3", "w4", "w5", "w6"):
        html = client.get(f"/task/{campaign.slug}/?workerId={worker}").content.decode()
        first = unescape(re.search(r'id="response-1">([^<]*)<', html).group(1))
        token = re.search(r'name="token" value="([^"]+)"', html).group(1)
        item = re.search(r'name="item" value="(\d+)"', html).group(1)
        client.post(
            f"/task/{campaign.slug}/submit/?workerId={worker}",
            {"token": token, "item": item, "choice": "first"},
        )
        judgment = Judgment.objects.get(worker__external_id=worker)
        side = outcome(judgment.value, judgment.presentation)
        assert payload()[f"response_{side}"] == first
        campaign.redundancy += 1
        campaign.save()


@pytest.mark.django_db
def test_gold_names_the_model_side_whatever_order_was_shown():
    campaign = CampaignFactory(protocol="pairwise", parameters=PARAMS)
    with pytest.raises(InvalidParameters, match="model's side"):
        items_add(campaign=campaign, items=[("g", payload(), {"choice": ["first"]})])
    items_add(campaign=campaign, items=[("g", payload(), {"choice": ["a"]})])
    assert AB.gold_correct({"choice": ["a"]}, {"choice": "second"}, {"order": ["b", "a"]})
    assert not AB.gold_correct({"choice": ["a"]}, {"choice": "first"}, {"order": ["b", "a"]})
    assert worker_quality(campaign).empty
