"""The SSA protocol: the sensible-then-specific rule, and the report by hand."""

import numpy as np
import pandas as pd
import pytest

from annotation.models import Judgment
from annotation.protocols import registry
from annotation.protocols.ssa import ssa_scores
from annotation.services import campaign_create
from evalsite.errors import InvalidAnswer
from tests.factories import CampaignFactory, ItemFactory, likert_payload

SSA = registry.get("ssa")
PARAMS = SSA.clean_parameters({"n_boot": 200})


def test_not_sensible_is_stored_as_not_specific_and_never_asked():
    assert SSA.clean_answers(PARAMS, {"sensible": "no"}) == {"sensible": "no", "specific": "no"}
    assert SSA.clean_answers(PARAMS, {"sensible": "yes", "specific": "yes"}) == {
        "sensible": "yes",
        "specific": "yes",
    }
    specific = SSA.questions(PARAMS)[1]
    assert specific.only_if == ("sensible", "yes")


@pytest.mark.parametrize(
    "answers, field",
    [
        ({"sensible": "no", "specific": "yes"}, "specific"),
        ({"sensible": "yes"}, "specific"),
        ({"specific": "no"}, "sensible"),
        ({"sensible": "maybe", "specific": "no"}, "sensible"),
        ({"sensible": "yes", "specific": "yes", "funny": "yes"}, "funny"),
    ],
)
def test_impossible_or_incomplete_answers_are_refused(answers, field):
    with pytest.raises(InvalidAnswer) as refused:
        SSA.clean_answers(PARAMS, answers)
    assert field in refused.value.fields


def frames(votes):
    """Items and judgments from {item: (model, [(sensible, specific) per rater])}."""
    items, rows = [], []
    for item, (model, answers) in votes.items():
        items.append({"item": item, "payload": {"model": model}})
        for r, (sens, spec) in enumerate(answers):
            rows.append({"item": item, "rater": f"r{r}", "question": "sensible", "value": sens})
            rows.append({"item": item, "rater": f"r{r}", "question": "specific", "value": spec})
    return pd.DataFrame(items), pd.DataFrame(rows)


Y, N = ("yes", "yes"), ("no", "no")
S = ("yes", "no")  # sensible, not specific


def test_report_gives_hand_computed_sensibleness_specificity_and_ssa():
    items, judgments = frames(
        {
            # model "bot": 2 of 3 sensible, 1 of 3 specific -> 66.7 / 33.3 / SSA 50
            "b1": ("bot", [Y, Y, Y, S, N]),  # sensible 4/5, specific 3/5
            "b2": ("bot", [S, S, S, N, N]),  # sensible 3/5, specific 0/5
            "b3": ("bot", [N, N, N, S, Y]),  # sensible 2/5
            # model "generic": all sensible, none specific -> 100 / 0 / 50
            "g1": ("generic", [S, S, S, S, S]),
            "g2": ("generic", [S, S, S, S, N]),
        }
    )
    report = SSA.report(PARAMS, items, judgments)
    scores = report.tables["scores"].set_index("model")
    assert scores.loc["bot", "sensibleness"] == pytest.approx(200 / 3)
    assert scores.loc["bot", "specificity"] == pytest.approx(100 / 3)
    assert scores.loc["bot", "ssa"] == pytest.approx(50)
    assert scores.loc["generic", ["sensibleness", "specificity", "ssa"]].tolist() == [100, 0, 50]
    assert (
        scores.loc["bot", "sensibleness_low"] <= 200 / 3 <= scores.loc["bot", "sensibleness_high"]
    )
    assert list(scores["responses"]) == [3, 2]
    assert "ssa" in report.figures


def test_agreement_per_question_matches_a_hand_count():
    # One item, 4 raters, sensible votes yes,yes,yes,no: 3 agreeing pairs of 6 -> 50%.
    items, judgments = frames({"i": ("m", [Y, Y, Y, N]), "j": ("m", [Y, Y, Y, Y])})
    table = SSA.report(PARAMS, items, judgments).tables["agreement"].set_index("question")
    # Item i: 3 of 6 pairs agree; item j: 6 of 6 -> 9/12 = 75%.
    assert table.loc["sensible", "agreement_pct"] == pytest.approx(75)
    assert table.loc["sensible", "items"] == 2


def test_ties_are_left_out_and_said():
    items, judgments = frames({"t": ("m", [Y, Y, N, N]), "u": ("m", [Y, Y, Y, Y])})
    report = SSA.report(PARAMS, items, judgments)
    assert report.tables["scores"].iloc[0]["sensibleness"] == 100
    assert any("tied" in note for note in report.notes)
    assert np.isfinite(report.tables["scores"].iloc[0]["ssa"])


@pytest.mark.django_db
def test_server_refuses_not_sensible_but_specific_and_stores_nothing(client):
    campaign = CampaignFactory(protocol="ssa", parameters=PARAMS)
    ItemFactory(campaign=campaign)
    html = client.get(f"/task/{campaign.slug}/?workerId=w").content.decode()
    assert 'data-only-if="sensible" data-only-value="yes" hidden' in html
    token = html.split('name="token" value="')[1].split('"')[0]
    item = html.split('name="item" value="')[1].split('"')[0]
    response = client.post(
        f"/task/{campaign.slug}/submit/?workerId=w",
        {"token": token, "item": item, "sensible": "no", "specific": "yes"},
    )
    assert response.status_code == 400
    assert "cannot be specific" in response.content.decode()
    assert not Judgment.objects.exists()


@pytest.mark.django_db
def test_new_ssa_campaigns_start_with_five_workers_per_response():
    campaign = campaign_create(slug="ssa", name="SSA", protocol="ssa")
    assert campaign.redundancy == 5
    likert = campaign_create(slug="lk", name="L", protocol="likert")
    assert likert.redundancy == 1
    assert SSA.clean_item(likert_payload(1))["model"] == "model-a"


def test_turns_of_one_chat_are_resampled_together() -> None:
    """Interactive SSA: a chat's turns share the chat and its worker; the CI draws whole chats."""
    rng = np.random.default_rng(0)
    rows, chats = [], {}
    for chat in range(60):
        good = rng.random() < 0.5  # whole chats go well or badly
        for turn in range(10):
            sensible = rng.random() < (0.95 if good else 0.3)
            item = f"c{chat}t{turn}"
            rows.append({"item": item, "model": "bot", "sensible": sensible, "specific": False})
            chats[item] = f"c{chat}"
    labels = pd.DataFrame(rows)
    by_turn = ssa_scores(labels, n_boot=500).iloc[0]
    by_chat = ssa_scores(labels, n_boot=500, conversations=pd.Series(chats)).iloc[0]
    assert by_chat["ci_method"] == "bootstrap over conversations"
    assert by_chat["sensibleness"] == by_turn["sensibleness"]
    width = by_chat["sensibleness_high"] - by_chat["sensibleness_low"]
    assert width > 1.8 * (by_turn["sensibleness_high"] - by_turn["sensibleness_low"])
