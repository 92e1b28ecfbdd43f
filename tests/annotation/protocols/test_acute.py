"""ACUTE-Eval: parameters, items, forced-choice answers with the justification, the page (two
conversations, one speaker highlighted in each, in the stored order) and the report by hand."""

import re
from html import unescape
from io import StringIO

import pandas as pd
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from scipy.stats import binomtest

from annotation.models import Judgment
from annotation.protocols import registry
from annotation.protocols.acute import PUBLISHED
from annotation.protocols.pairwise import outcome
from annotation.selectors import campaign_report
from evalsite.errors import InvalidAnswer, InvalidParameters
from tests.factories import CampaignFactory, ItemFactory

ACUTE = registry.get("acute")
PARAMS = ACUTE.clean_parameters({"min_judgments_per_pair": 3, "n_boot": 100})


TAGS = {"a": "alpha", "b": "beta"}  # what each side's judged speaker says first


def conversation(bot: str, side: str) -> list[dict[str, str]]:
    return [
        {"speaker": "Human", "text": "Hi!"},
        {"speaker": bot, "text": f"Hello, I am {TAGS[side]}."},
        {"speaker": "Human", "text": "What do you like?"},
        {"speaker": bot, "text": "Long walks."},
    ]


def payload(model_a="meena", model_b="mitsuku", speaker_a="Meena", speaker_b="Mitsuku"):
    return {
        "model_a": model_a,
        "speaker_a": speaker_a,
        "dialogue_a": "logs/meena-1",
        "turns_a": conversation(speaker_a, "a"),
        "model_b": model_b,
        "speaker_b": speaker_b,
        "dialogue_b": "logs/mitsuku-1",
        "turns_b": conversation(speaker_b, "b"),
    }


def test_the_defaults_are_the_paper_s_four_questions_in_its_wording():
    questions = ACUTE.questions(ACUTE.clean_parameters({}))
    texts = {q.key: q.text for q in questions}
    assert texts == {
        "engaging": "Who would you prefer to talk to for a long conversation?",
        "interesting": "If you had to say one of these speakers is interesting and one is "
        "boring, who would you say is more interesting?",
        "human": "Which speaker sounds more human?",
        "knowledgeable": "If you had to say that one speaker is more knowledgeable and one "
        "is more ignorant, who is more knowledgeable?",
        "reason": "Briefly, why? (a sentence is enough)",
    }
    for q in questions[:4]:  # forced choice between the two speakers: no tie
        assert [value for value, _ in q.choices] == ["first", "second"]
    assert questions[-1].choices == ()


def test_questions_are_editable_and_checked():
    own = {"key": "funny", "name": "Humour", "text": "Who is funnier?"}
    cleaned = ACUTE.clean_parameters({"questions": ["human", own], "justification": "off"})
    assert [(q.key, q.text, q.help) for q in ACUTE.questions(cleaned)] == [
        ("human", PUBLISHED["human"][1], "Humanness"),
        ("funny", "Who is funnier?", "Humour"),
    ]
    bad = [
        ["boring"],  # no published question of that key
        [{"key": "Bad Key", "text": "Who?"}],
        [{"key": "reason", "text": "Who?"}],  # the justification's key
        [{"key": "x", "text": ""}],
        ["human", {"key": "human", "text": "Again?"}],
        [],
        "human",
    ]
    for questions in bad:
        with pytest.raises(InvalidParameters) as refused:
            ACUTE.clean_parameters({"questions": questions})
        assert set(refused.value.fields) == {"questions"}, questions
    with pytest.raises(InvalidParameters) as refused:
        ACUTE.clean_parameters({"justification": "maybe", "n_boot": -1})
    assert set(refused.value.fields) == {"justification", "n_boot"}


def test_items_need_two_models_and_the_judged_speaker_in_each_conversation():
    cleaned = ACUTE.clean_item(payload())
    assert cleaned["model_a"] == "meena" and cleaned["turns_b"][1]["speaker"] == "Mitsuku"
    with pytest.raises(InvalidParameters, match="two models"):
        ACUTE.clean_item(payload(model_b="meena"))
    with pytest.raises(InvalidParameters, match="never speaks"):
        ACUTE.clean_item(payload() | {"speaker_b": "Meena"})
    with pytest.raises(InvalidParameters, match="turns_a"):
        ACUTE.clean_item(payload() | {"turns_a": [{"speaker": "Meena", "text": "Hi"}]})
    with pytest.raises(InvalidParameters, match="'text'"):
        ACUTE.clean_item(payload() | {"turns_a": [{"speaker": "Meena", "text": " "}] * 2})
    with pytest.raises(InvalidParameters, match="JSON object"):
        ACUTE.clean_item(["not", "an", "object"])


def test_answers_are_a_forced_choice_and_the_reason_follows_the_parameter():
    answers = {q: "first" for q in PUBLISHED} | {"reason": "  More curious.  "}
    assert ACUTE.clean_answers(PARAMS, answers)["reason"] == "More curious."
    for bad in ("both", "neither", "a", ["first"]):
        with pytest.raises(InvalidAnswer) as refused:
            ACUTE.clean_answers(PARAMS, answers | {"human": bad})
        assert set(refused.value.fields) == {"human"}
    with pytest.raises(InvalidAnswer) as refused:
        ACUTE.clean_answers(PARAMS, answers | {"reason": "  "})
    assert set(refused.value.fields) == {"reason"}
    with pytest.raises(InvalidAnswer) as refused:
        ACUTE.clean_answers(PARAMS, answers | {"reason": "x" * 2001, "extra": "1"})
    assert set(refused.value.fields) == {"reason", "extra"}
    optional = PARAMS | {"justification": "optional"}
    assert ACUTE.clean_answers(optional, answers | {"reason": ""})["reason"] == ""
    off = PARAMS | {"justification": "off"}
    with pytest.raises(InvalidAnswer, match="Some answers"):
        ACUTE.clean_answers(off, answers)  # no reason is asked, so none is accepted
    assert "reason" not in ACUTE.clean_answers(off, {q: "second" for q in PUBLISHED})


def test_the_winner_is_the_model_whose_speaker_was_chosen_whatever_the_order():
    shown = {"order": ["b", "a"]}
    assert ACUTE.judgment_winner(payload(), "human", "first", shown) == "mitsuku"
    assert ACUTE.judgment_winner(payload(), "human", "second", shown) == "meena"
    assert ACUTE.judgment_winner(payload(), "reason", "Because.", shown) is None


def test_report_by_hand_win_rates_sign_tests_and_holm():
    items = pd.DataFrame([{"item": f"p{n}", "payload": payload()} for n in (1, 2, 3)])
    ab, ba = {"order": ["a", "b"]}, {"order": ["b", "a"]}
    rows = []
    # engaging: meena's speaker chosen 9 times of 10 (shown first or second)
    for n in range(10):
        shown = ab if n % 2 else ba
        chose_meena = n < 9
        value = "first" if (shown["order"][0] == "a") == chose_meena else "second"
        rows.append((f"p{n % 3 + 1}", f"r{n}", "engaging", value, shown))
    # human: 5 each way
    rows += [("p1", f"r{n}", "human", "first", ab) for n in range(5)]
    rows += [("p1", f"r{n + 5}", "human", "first", ba) for n in range(5)]
    rows += [("p1", "r0", "reason", "Because.", ab)]  # not an outcome
    judgments = pd.DataFrame(
        [
            {"item": i, "rater": r, "question": q, "value": v, "presentation": p}
            for i, r, q, v, p in rows
        ]
    )
    params = ACUTE.clean_parameters(
        {"questions": ["engaging", "human"], "min_judgments_per_pair": 20, "n_boot": 50}
    )
    table = ACUTE.report(params, items, judgments).tables["win_rates"].set_index("question")
    engaging, human = table.loc["Engagingness"], table.loc["Humanness"]
    assert (engaging.model_a, engaging.model_b) == ("meena", "mitsuku")
    assert (engaging.n, engaging.a_wins, engaging.b_wins) == (10, 9, 1)
    assert engaging.win_rate == pytest.approx(0.9)
    assert engaging.ci_low < 0.9 < engaging.ci_high
    p_engaging = binomtest(9, 10, 0.5).pvalue
    assert engaging.sign_test_p == pytest.approx(p_engaging)
    assert (human.a_wins, human.b_wins, human.win_rate) == (5, 5, 0.5)
    assert human.sign_test_p == pytest.approx(1.0)
    assert engaging.holm_p == pytest.approx(min(1.0, 2 * p_engaging))  # the smaller of two
    assert human.holm_p == pytest.approx(1.0)
    assert engaging.significant and not human.significant  # 2 × 0.021 < 0.05
    report = ACUTE.report(params, items, judgments)
    assert any("Fewer than 20" in n for n in report.notes)
    assert list(report.tables["agreement"]["aspect"]) == ["Engagingness", "Humanness"]


def test_report_without_judgments_says_so():
    report = ACUTE.report(PARAMS, pd.DataFrame(columns=["item", "payload"]), pd.DataFrame())
    assert report.tables["win_rates"].empty and report.notes == ["No judgments yet."]


@pytest.mark.django_db
def test_the_page_shows_both_conversations_in_the_stored_order_and_stores_the_answers(client):
    campaign = CampaignFactory(protocol="acute", parameters=PARAMS, redundancy=1)
    ItemFactory(campaign=campaign, payload=payload())
    answers = {q: "first" for q in PUBLISHED} | {"reason": "Speaker 1 asked back."}
    seen_orders = set()
    # The order is drawn per worker (by their random pseudonym): six workers, then more until
    # both orders were shown (all of 30 alike: a chance of 2^-29).
    workers = [f"w{n}" for n in range(1, 31)]
    for number, worker in enumerate(workers, start=1):
        if number > 6 and len(seen_orders) == 2:
            break
        html = client.get(f"/task/{campaign.slug}/?workerId={worker}").content.decode()
        # Model names never show; the judged speakers are "Speaker 1" and "Speaker 2".
        assert "meena" not in html.lower() and "mitsuku" not in html.lower()
        first = re.search(r'id="conversation-1".*?acute-judged.*?</span>([^<]*)<', html, re.S)
        assert 'id="conversation-2"' in html and 'name="reason"' in html
        token = re.search(r'name="token" value="([^"]+)"', html).group(1)
        item = re.search(r'name="item" value="(\d+)"', html).group(1)
        response = client.post(
            f"/task/{campaign.slug}/submit/?workerId={worker}",
            {"token": token, "item": item, **answers},
        )
        assert response.status_code == 302
        stored = Judgment.objects.filter(worker__external_id=worker)
        assert {j.question: j.value for j in stored} == answers
        judgment = stored.get(question="engaging")
        side = outcome(judgment.value, judgment.presentation)
        seen_orders.add(tuple(judgment.presentation["order"]))
        assert unescape(first.group(1)).strip() == f"Hello, I am {TAGS[side]}."
        campaign.redundancy += 1
        campaign.save()
    assert seen_orders == {("a", "b"), ("b", "a")}
    table = campaign_report(campaign).tables["win_rates"]
    assert table["n"].sum() == Judgment.objects.filter(question__in=PUBLISHED).count()
    assert table["n"].sum() >= 6 * 4


@pytest.mark.django_db
def test_a_missing_reason_is_refused_on_the_page_with_a_message(client):
    campaign = CampaignFactory(protocol="acute", parameters=PARAMS, redundancy=1)
    ItemFactory(campaign=campaign, payload=payload())
    html = client.get(f"/task/{campaign.slug}/?workerId=w1").content.decode()
    token = re.search(r'name="token" value="([^"]+)"', html).group(1)
    item = re.search(r'name="item" value="(\d+)"', html).group(1)
    response = client.post(
        f"/task/{campaign.slug}/submit/?workerId=w1",
        {"token": token, "item": item, **{q: "second" for q in PUBLISHED}, "reason": ""},
    )
    assert response.status_code == 400
    assert "Please say briefly why you chose as you did." in response.content.decode()
    assert not Judgment.objects.exists()


@pytest.mark.django_db
def test_a_german_page_shows_the_published_questions_and_speakers_in_german(client):
    campaign = CampaignFactory(protocol="acute", parameters=PARAMS, language="de")
    ItemFactory(campaign=campaign, payload=payload())
    html = unescape(client.get(f"/task/{campaign.slug}/?workerId=w1").content.decode())
    for german in (
        "Gespräch 1",
        "Bewerten Sie <strong>Sprecher/in 2</strong>",
        "Mit wem würden Sie lieber ein langes Gespräch führen?",
        "Kurz: Warum? (Ein Satz genügt.)",
    ):
        assert german in html, german


def test_the_planner_has_no_acute_entry_and_plans_it_as_a_b_without_ties():
    """docs/protocols.md: one question of one matchup is an A/B design without ties."""
    with pytest.raises(CommandError, match="invalid choice: 'acute'"):
        call_command("plan", "acute")
    out = StringIO()
    call_command(
        "plan",
        "ab",
        "--both",
        "0",
        "--neither",
        "0",
        "--items",
        "20",
        "--studies",
        "10",
        stdout=out,
    )
    assert "win rate advantage over 50%" in out.getvalue()
