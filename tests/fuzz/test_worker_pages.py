"""The worker pages (task, submit, done) of every protocol under generated and hostile input:
never a server error or a traceback, JSON clients get a JSON error, and a refused request
stores nothing."""

from __future__ import annotations

import itertools
import re
from typing import Any
from urllib.parse import parse_qsl, urlencode

import pytest
from django.test import Client
from django.urls import reverse
from hypothesis import event, example, given
from hypothesis import strategies as st

from annotation.models import Assignment, Campaign, Judgment, Lease, Worker
from annotation.protocols import LiveChat, registry
from tests.fuzz.strategies import (
    bounded,
    hostile_text,
    json_text,
    json_values,
    nested,
    query_string,
)
from tests.fuzz.studies import answer_values, studies_create, worker_query

PROTOCOLS = sorted(p.name for p in registry.all())
# Protocols with item pages (a live chat has none: its frames are fuzzed in test_chat_frames).
STATIC = sorted(p.name for p in registry.all() if not isinstance(p, LiveChat))
ARRIVAL_KEYS = [
    "workerId",
    "assignmentId",
    "hitId",
    "turkSubmitTo",
    "PROLIFIC_PID",
    "STUDY_ID",
    "SESSION_ID",
    "token",
]
PLAUSIBLE = [
    "w1",
    "A1B2C3",
    "ASSIGNMENT_ID_NOT_AVAILABLE",
    "https://workersandbox.mturk.com",
    "https://www.mturk.com",
    "https://evil.example",
    "javascript:alert(1)",
]
values = st.one_of(hostile_text, st.sampled_from(PLAUSIBLE), json_values.map(json_text))
queries = st.lists(
    st.tuples(st.one_of(st.sampled_from(ARRIVAL_KEYS), hostile_text), values), max_size=7
)
_workers = itertools.count()


@pytest.fixture
def studies(db, unlimited):
    return studies_create()


def _rows() -> tuple[int, ...]:
    return (
        Worker.objects.count(),
        Assignment.objects.count(),
        Lease.objects.count(),
        Judgment.objects.count(),
    )


def _check(response, *, as_json: bool, fuzzed: bool = True) -> None:
    """A handled answer: below 500, no traceback, a JSON error for a JSON client."""
    if fuzzed:
        event(f"status {response.status_code}")
    assert response.status_code < 500, response.content[:500]
    body = response.content.decode("utf-8", "replace")
    assert "Traceback" not in body
    if as_json and response.status_code >= 400:
        assert response["Content-Type"].startswith("application/json"), body[:300]
        assert response.json()["error"]
    elif response.status_code >= 400:
        assert body.strip()  # a message, not an empty page


def _accept(as_json: bool) -> dict[str, str]:
    return {"HTTP_ACCEPT": "application/json"} if as_json else {}


@bounded(120)
@given(protocol=st.sampled_from(PROTOCOLS), query=queries, own=st.booleans(), as_json=st.booleans())
@example(protocol="likert", query=[("workerId", "w\x001")], own=False, as_json=True)
@example(protocol="likert", query=[("workerId", "\ud800")], own=False, as_json=False)
@example(
    protocol="pairwise", query=[("workerId", "٣"), ("token", nested(5000))], own=False, as_json=True
)
@example(
    protocol="likert",
    query=[("assignmentId", "A1"), ("hitId", "H1"), ("workerId", "W1"), ("turkSubmitTo", "x")],
    own=False,
    as_json=False,
)
@example(
    protocol="empathetic_chat",
    query=[("PROLIFIC_PID", "p1"), ("STUDY_ID", "s"), ("SESSION_ID", "\ud800")],
    own=False,
    as_json=True,
)
def test_the_task_page_answers_any_query(studies, client, protocol, query, own, as_json):
    """A hostile query, alone or after a worker's own link's parameters."""
    campaign = studies[protocol]
    url = reverse("annotation:task", args=[campaign.slug])
    if own:
        query = [*worker_query(campaign, f"fz{next(_workers)}").items(), *query]
    before = _rows()
    response = client.get(url + "?" + query_string(query), **_accept(as_json))
    _check(response, as_json=as_json)
    if response.status_code >= 400:
        assert _rows() == before


def _arrive(client: Client, campaign: Campaign) -> tuple[str, str, str]:
    """Open the task page as a new local worker; return its query, the token and the item."""
    query = urlencode(worker_query(campaign, f"fz{next(_workers)}"))
    page = client.get(reverse("annotation:task", args=[campaign.slug]) + "?" + query)
    html = page.content.decode()
    token = re.search(r'name="token" value="([^"]+)"', html)
    item = re.search(r'name="item" value="(\d+)"', html)
    assert token and item, html[:2000]
    return query, token.group(1), item.group(1)


def _answers(choices: dict[str, list[str]]) -> st.SearchStrategy[Any]:
    """Answers of every shape, mostly objects of the questions' keys with plausible values."""
    keys = list(choices) or ["u0", "u1", "u2"]  # EmotionLines asks one question per line

    def value(key: str) -> st.SearchStrategy[Any]:
        plausible = choices.get(key) or ["joy", "neutral", "1", "3"]
        valid = st.sampled_from(plausible)
        return st.one_of(valid, valid, valid, hostile_text, json_values)

    return st.one_of(
        st.fixed_dictionaries({k: value(k) for k in keys}),
        st.fixed_dictionaries({k: value(k) for k in keys}),
        st.dictionaries(st.one_of(st.sampled_from(keys), hostile_text), value(keys[0]), max_size=5),
        json_values,
    )


def _mostly(valid: str) -> st.SearchStrategy[Any]:
    return st.one_of(st.just(valid), st.just(valid), st.just(valid), hostile_text, json_values)


@bounded(150)
@given(protocol=st.sampled_from(STATIC), data=st.data(), as_json=st.booleans())
def test_a_submission_of_any_shape_is_answered_and_a_refused_one_stores_nothing(
    studies, client, protocol, data, as_json
):
    campaign = studies[protocol]
    choices = answer_values(campaign)
    query, token, item = _arrive(client, campaign)
    token = data.draw(_mostly(token), label="token")
    item = data.draw(_mostly(item), label="item")
    answers = data.draw(_answers(choices), label="answers")
    kind = data.draw(st.sampled_from(["form", "json", "raw"]), label="kind")
    url = reverse("annotation:task_submit", args=[campaign.slug]) + "?" + query
    if kind == "form":
        fields = list(answers.items()) if isinstance(answers, dict) else [("answer", answers)]
        pairs = [("token", str(token)), ("item", str(item))]
        pairs += [(str(k), v if isinstance(v, str) else json_text(v)) for k, v in fields]
        body: str | bytes = query_string(pairs)
        content_type = "application/x-www-form-urlencoded"
    elif kind == "json":
        body = json_text({"token": token, "item": item, "answers": answers})
        content_type = "application/json"
    else:
        body = data.draw(
            st.sampled_from(["", "[]", "1", '"x"', "{", nested(5000), nested(100_000)])
            | hostile_text,
            label="raw",
        ).encode("utf-8", "surrogatepass")
        content_type = "application/json"
    before = Judgment.objects.count()
    response = client.post(url, data=body, content_type=content_type, **_accept(as_json))
    # (The test client sends no content type with an empty body.)
    _check(response, as_json=as_json or (content_type == "application/json" and bool(body)))
    if response.status_code >= 400:
        assert Judgment.objects.count() == before


@bounded(80)
@given(
    protocol=st.sampled_from(PROTOCOLS),
    query=queries,
    own=st.booleans(),
    token=st.one_of(st.none(), hostile_text, json_values.map(json_text)),
    as_json=st.booleans(),
)
@example(protocol="likert", query=[], own=True, token=None, as_json=True)
@example(protocol="ssa", query=[("token", "\ud800")], own=False, token="\x00", as_json=False)
def test_the_end_screen_answers_any_query_and_an_unfinished_assignment_is_refused(
    studies, client, protocol, query, own, token, as_json
):
    """The end screen, with a hostile query, or with the worker's own link and a token that is
    theirs (``token`` None: their assignment is not finished) or not."""
    campaign = studies[protocol]
    url = reverse("annotation:task_done", args=[campaign.slug])
    if own and protocol in STATIC:
        arrival, valid, _ = _arrive(client, campaign)
        query = [*parse_qsl(arrival), ("token", valid if token is None else token)]
    before = _rows()
    response = client.get(url + "?" + query_string(query), **_accept(as_json))
    _check(response, as_json=as_json)
    assert response.status_code != 200 or own  # a finished assignment only
    assert _rows() == before


# Answers that were 500s before (issue #17): the examples the generated ones must keep covering.
KNOWN = [
    ("likert", "json", {"empathy": "²", "relevance": "3", "fluency": "5"}),
    ("likert", "form", {"empathy": "①", "relevance": "3", "fluency": "5"}),
    ("pairwise", "json", {"choice": ["a"]}),
    ("pairwise", "json", {"choice": {"a": 1}}),
    ("likert", "raw", nested(5000)),
    ("likert", "raw", '{"answers": ' + nested(5000) + "}"),
]


@pytest.mark.parametrize(("protocol", "kind", "answers"), KNOWN)
def test_answers_that_were_server_errors_are_refused_with_a_message(
    studies, client, protocol, kind, answers
):
    campaign = studies[protocol]
    query, token, item = _arrive(client, campaign)
    url = reverse("annotation:task_submit", args=[campaign.slug]) + "?" + query
    if kind == "form":
        body = query_string([("token", token), ("item", item), *answers.items()])
        response = client.post(url, body, content_type="application/x-www-form-urlencoded")
    else:
        body = (
            answers
            if kind == "raw"
            else json_text({"token": token, "item": item, "answers": answers})
        )
        response = client.post(url, body, content_type="application/json")
    _check(response, as_json=kind != "form", fuzzed=False)
    assert response.status_code == 400
    assert not Judgment.objects.exists()
