"""Reading a judge's reply and building its prompt."""

from __future__ import annotations

import pytest

from annotation.protocols import Judged, registry
from evalsite.errors import InvalidParameters
from judges.parse import Refused, answers_clean, choice_best, reply_json
from judges.prompts import (
    item_questions,
    item_text,
    template_clean,
    template_default,
)


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ('Sure! Here it is: {"a": "x"} Hope it helps.', {"a": "x"}),
        ('```json\n{"a": [1, 2]}\n```', {"a": [1, 2]}),
    ],
)
def test_the_json_object_is_found_in_a_reply(reply, expected):
    assert reply_json(reply) == expected


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("", "empty"),
        ("no idea", "no JSON object"),
        ('{"a": 1,}', "not valid"),
        ("[1, 2] {", "no JSON object"),
        ("x" * 30_000, "longer than"),
    ],
)
def test_a_reply_without_one_json_object_is_refused_with_the_reason(reply, reason):
    with pytest.raises(Refused, match=reason):
        reply_json(reply)


def test_answers_are_validated_by_the_protocol_like_a_workers():
    likert = registry.get("likert")
    parameters = likert.clean_parameters({})
    questions = likert.questions(parameters)
    answers = {"empathy": "4", "relevance": 5, "fluency": 1}
    assert answers_clean(likert, parameters, questions, answers) == {
        "empathy": 4,
        "relevance": 5,
        "fluency": 1,
    }
    with pytest.raises(Refused, match="no answer for 'fluency'"):
        answers_clean(likert, parameters, questions, {"empathy": 4, "relevance": 5})
    with pytest.raises(Refused, match="empathy"):
        answers_clean(likert, parameters, questions, {"empathy": 7, "relevance": 5, "fluency": 1})
    ssa = registry.get("ssa")
    p = ssa.clean_parameters({})
    # "specific" is asked only after a sensible response: not needed when it is not
    assert answers_clean(ssa, p, ssa.questions(p), {"sensible": "no"}) == {
        "sensible": "no",
        "specific": "no",
    }


def test_the_best_option_wins_and_a_tie_at_the_top_is_refused():
    assert choice_best([-3.0, -1.0, -2.0], ["a", "b", "c"]) == "b"
    with pytest.raises(Refused, match="score the same"):
        choice_best([-1.0, -1.0, -2.0], ["a", "b", "c"])


def test_the_two_responses_are_shown_in_the_order_given():
    payload = {"context": ["Hi"], "response_a": "AAA", "response_b": "BBB"}
    ab = item_text(payload, {"order": ["a", "b"]})
    ba = item_text(payload, {"order": ["b", "a"]})
    assert ab.index("AAA") < ab.index("BBB") and ba.index("BBB") < ba.index("AAA")
    assert "First response:\nBBB" in ba


def test_emotionlines_asks_one_question_per_line():
    protocol = registry.get("emotionlines")
    parameters = protocol.clean_parameters({})
    payload = {"utterances": [{"speaker": "Ann", "text": "Hi"}, {"speaker": "Bo", "text": "Go!"}]}
    keys = [q.key for q in item_questions(protocol, parameters, payload)]
    assert keys == ["u0", "u1"]
    assert "[u1] Bo: Go!" in item_text(payload, {})


def test_every_protocol_with_items_has_a_default_template_and_live_chats_none():
    judged = [p for p in registry.all() if isinstance(p, Judged)]
    assert {p.name for p in judged} == {
        "likert", "pairwise", "ssa", "emocontext", "emotionlines", "categorical"
    }  # fmt: skip
    for protocol in judged:
        template = template_default(protocol)
        assert template.version == f"{protocol.name}-v1"  # the version names the judge
        assert template.text.endswith(protocol.judge_prompt) and "{item}" in template.text
        assert template_clean(protocol, {"version": template.version, "text": template.text})
    with pytest.raises(InvalidParameters, match="no judge template"):
        template_default(registry.get("empathetic_chat"))
    with pytest.raises(InvalidParameters, match="malformed"):
        template_clean(registry.get("likert"), {"version": "v2", "text": "{item {questions}"})
