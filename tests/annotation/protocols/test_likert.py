"""The Likert protocol: parameters, answers, and the report against hand-computed numbers."""

import math
import random

import pandas as pd
import pytest

from annotation.protocols import registry
from annotation.protocols.likert import PAPER_LABEL, likert_items
from evalsite.errors import InvalidParameters

LIKERT = registry.get("likert")
PARAMS = LIKERT.clean_parameters({"reference_model": "A", "min_ratings_per_model": 4})


def frames(ratings: dict[str, list[int]], question: str = "empathy"):
    """Items (one per rating) and judgments for {model: [ratings]}; one rater per rating."""
    items, judgments = [], []
    for model, values in ratings.items():
        for i, v in enumerate(values):
            key = f"{model}-{i}"
            items.append({"item": key, "payload": {"model": model}})
            judgments.append({"item": key, "rater": f"r{i}", "question": question, "value": v})
    return pd.DataFrame(items), pd.DataFrame(judgments)


def test_report_gives_hand_computed_means_and_sems():
    # A: mean 3, sd sqrt(2.5), SEM sqrt(2.5)/sqrt(5) = 0.70711
    # B: mean 4.5, sd sqrt(1/3), SEM 0.28868 -> 1.5 above A > 2 SEM: highlighted
    # C: mean 3.25, sd 0.5, SEM 0.25 -> 0.25 above A < 2 SEM: not highlighted
    items, judgments = frames({"A": [1, 2, 3, 4, 5], "B": [4, 5, 5, 4], "C": [3, 3, 4, 3]})
    scores = LIKERT.report(PARAMS, items, judgments).tables["scores"].set_index("model")
    assert scores.loc["A", "mean"] == pytest.approx(3.0)
    assert scores.loc["A", "sem"] == pytest.approx(math.sqrt(2.5) / math.sqrt(5))
    assert scores.loc["B", "mean"] == pytest.approx(4.5)
    assert scores.loc["B", "sem"] == pytest.approx(math.sqrt(1 / 3) / 2)
    assert scores.loc["C", "sem"] == pytest.approx(0.25)
    assert list(scores["n"]) == [5, 4, 4]
    assert scores["reference"].to_dict() == {"A": True, "B": False, "C": False}
    assert scores["paper_highlighted"].to_dict() == {"A": False, "B": True, "C": False}
    assert set(scores["aspect"]) == {"Empathy/Sympathy"}


def test_summary_marks_reference_and_highlighted_models():
    items, judgments = frames({"A": [1, 2, 3, 4, 5], "B": [4, 5, 5, 4]})
    summary = LIKERT.report(PARAMS, items, judgments).tables["summary"]
    cells = dict(zip(summary["model"], summary[f"Empathy/Sympathy ({PAPER_LABEL})"], strict=True))
    assert cells == {"A (reference)": "3.00 ± 0.71 (n=5)", "B": "4.50 ± 0.29 (n=4)*"}
    crossed = dict(zip(summary["model"], summary["Empathy/Sympathy"], strict=True))
    assert crossed["A (reference)"].startswith("3.00 [") and crossed["B"].endswith("(n=4)")


def test_report_warns_below_the_minimum_number_of_ratings():
    items, judgments = frames({"A": [1, 2, 3, 4, 5], "B": [4, 5]})
    notes = " ".join(LIKERT.report(PARAMS, items, judgments).notes)
    assert "Fewer than 4 ratings" in notes and "B" in notes


def test_single_rating_has_undefined_sem_not_a_crash():
    items, judgments = frames({"A": [3]})
    scores = LIKERT.report(PARAMS, items, judgments).tables["scores"]
    assert math.isnan(scores.loc[0, "sem"])


def test_report_of_no_judgments_is_empty_but_valid():
    items = pd.DataFrame({"item": ["x"], "payload": [{"model": "A"}]})
    judgments = pd.DataFrame(columns=["item", "rater", "question", "value", "time_spent_ms"])
    report = LIKERT.report(PARAMS, items, judgments)
    assert report.tables["scores"].empty and not report.figures


def test_report_draws_the_bar_figure():
    items, judgments = frames({"A": [1, 2, 3, 4, 5], "B": [4, 5, 5, 4]})
    figure = LIKERT.report(PARAMS, items, judgments).figures["likert"].figure
    assert len(figure.axes[0].patches) == 2


def test_agreement_table_reports_alpha_per_aspect():
    # Two raters agreeing perfectly on five items with varied ratings: alpha = 1.
    rows = [
        {"item": f"i{i}", "rater": r, "question": "fluency", "value": v}
        for i, v in enumerate([1, 2, 3, 4, 5])
        for r in ("r1", "r2")
    ]
    items = pd.DataFrame({"item": [f"i{i}" for i in range(5)], "payload": [{"model": "A"}] * 5})
    table = LIKERT.report(PARAMS, items, pd.DataFrame(rows)).tables["agreement"]
    assert table.loc[0, "aspect"] == "Fluency"
    assert table.loc[0, "alpha"] == pytest.approx(1.0)


def test_defaults_are_the_published_parameters():
    params = LIKERT.default_parameters()
    assert [a["name"] for a in params["aspects"]] == ["Empathy/Sympathy", "Relevance", "Fluency"]
    assert params["scale"] == {
        "min": 1,
        "max": 5,
        "anchors": {"1": "not at all", "3": "somewhat", "5": "very much"},
    }
    assert params["min_ratings_per_model"] == 100
    assert params["highlight_sem"] == 2.0


@pytest.mark.parametrize(
    ("parameters", "field"),
    [
        ({"aspects": []}, "aspects"),
        ({"aspects": [{"key": "a b", "name": "x", "question": "y"}]}, "aspects"),
        ({"scale": {"min": 5, "max": 1}}, "scale"),
        ({"scale": {"min": 1, "max": 5, "anchors": {"9": "x"}}}, "scale"),
        ({"min_ratings_per_model": 0}, "min_ratings_per_model"),
        ({"highlight_sem": True}, "highlight_sem"),
    ],
)
def test_bad_parameters_are_refused_naming_the_field(parameters, field):
    with pytest.raises(InvalidParameters) as info:
        LIKERT.clean_parameters(parameters)
    assert field in info.value.fields


def test_unknown_parameter_is_refused():
    with pytest.raises(InvalidParameters, match="Unknown parameter.*Likert"):
        LIKERT.clean_parameters({"aspect": []})


def test_questions_carry_the_anchors():
    choices = LIKERT.questions(PARAMS)[0].choices
    assert choices[0] == ("1", "1 – not at all") and choices[1] == ("2", "2")


def test_spammer_answers_cover_the_scale_and_good_workers_stay_near_the_truth():
    rng = random.Random(1)
    truth = {"empathy": 4.0, "relevance": 4.0, "fluency": 4.0}
    spam = [
        LIKERT.simulate_answers(PARAMS, {}, {}, truth, "spammer", rng)["empathy"]
        for _ in range(200)
    ]
    good = [
        int(LIKERT.simulate_answers(PARAMS, {}, {}, truth, "good", rng)["empathy"])
        for _ in range(200)
    ]
    assert set(spam) == {"1", "2", "3", "4", "5"}
    assert 3.7 < sum(good) / len(good) < 4.3


def test_likert_items_make_one_item_per_example_and_model():
    items = likert_items([("e1", ["hi"]), ("e2", ["yo"])], {"m": ["a", "b"], "g": ["c", "d"]})
    assert [k for k, _ in items] == ["e1/m", "e2/m", "e1/g", "e2/g"]
    assert items[1][1] == {"context": ["yo"], "response": "b", "model": "m", "example": "e2"}
    with pytest.raises(ValueError):
        likert_items([("e1", ["hi"])], {"m": ["a", "b"]})


def test_report_highlights_by_holm_and_keeps_the_paper_rule_beside_it():
    rng = random.Random(0)
    ratings = {
        "A": [rng.choice([2, 3, 3, 4]) for _ in range(60)],
        "B": [rng.choice([4, 4, 5, 5]) for _ in range(60)],
        "C": [rng.choice([2, 3, 3, 4]) for _ in range(60)],
    }
    items, judgments = frames(ratings)
    scores = LIKERT.report(PARAMS, items, judgments).tables["scores"].set_index("model")
    assert scores.loc["B", "highlighted"] and not scores.loc["C", "highlighted"]
    assert scores.loc["B", "p_holm"] < 0.05 <= scores.loc["C", "p_holm"]
    assert scores.loc["B", "ci_low"] < scores.loc["B", "mean"] < scores.loc["B", "ci_high"]
    assert scores.loc["B", "diff"] == pytest.approx(
        scores.loc["B", "mean"] - scores.loc["A", "mean"]
    )
    assert scores.loc["B", "ci_method"].startswith("crossed items×raters")
    assert "paper_highlighted" in scores.columns and math.isnan(scores.loc["A", "p"])
