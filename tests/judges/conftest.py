"""Fixtures of the judge tests: campaigns judged by a simulated crowd, the fake judge served
over the OpenAI wire protocol on loopback, and its registered endpoint."""

from __future__ import annotations

import hashlib
import json
import os
import re

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import pytest  # noqa: E402

from annotation.models import Campaign  # noqa: E402
from annotation.services import campaign_create, campaign_set_status, items_add  # noqa: E402
from annotation.simulation import crowd_make, crowd_run  # noqa: E402
from modelhub.services import endpoint_register  # noqa: E402
from tests.judges.fake_judge import FakeJudge  # noqa: E402

MODELS = ("bot-a", "bot-b", "bot-c")


def _context(n: int) -> list[str]:
    return [f"I adopted a puppy last week, number {n}.", "How is it going so far?"]


def _reply(model: str, n: int) -> str:
    return f"{model} says reply {n}: " + ("great!" if model == "bot-a" else "okay I guess")


def likert_items(n: int = 12) -> list[tuple[str, dict]]:
    """Return n items per model; bot-a's replies are the good ones."""
    return [
        (
            f"ex{i}/{model}",
            {"context": _context(i), "response": _reply(model, i), "model": model},
        )
        for i in range(n)
        for model in MODELS
    ]


def pairwise_items(n: int = 12) -> list[tuple[str, dict]]:
    pairs = [("bot-a", "bot-b"), ("bot-a", "bot-c"), ("bot-b", "bot-c")]
    return [
        (
            f"ex{i}/{a}~{b}",
            {
                "context": _context(i),
                "model_a": a,
                "response_a": _reply(a, i),
                "model_b": b,
                "response_b": _reply(b, i),
                "example": f"ex{i}",
            },
        )
        for i in range(n)
        for a, b in pairs
    ]


def truth_of(item) -> dict:
    """The simulated crowd's truth: bot-a is better (Likert 5 vs 2; A/B: bot-a wins)."""
    payload = item.payload
    if "model" in payload:
        score = "5" if payload["model"] == "bot-a" else "2"
        return {"empathy": score, "relevance": score, "fluency": score}
    return {"quality": {"bot-a": 2.0, "bot-b": 0.0, "bot-c": 0.0}}


def campaign_make(slug: str, protocol: str, items: list, *, crowd: bool = True) -> Campaign:
    campaign = campaign_create(slug=slug, name=slug, protocol=protocol, redundancy=3)
    campaign.open_links = True
    campaign.save(update_fields=["open_links"])
    items_add(campaign=campaign, items=items)
    campaign_set_status(campaign=campaign, status=Campaign.Status.LIVE)
    if crowd:
        crowd_run(campaign=campaign, workers=crowd_make(good=4, noisy=1, spammer=0), truth=truth_of)
    return campaign


@pytest.fixture
def likert_campaign(db) -> Campaign:
    return campaign_make("judged-likert", "likert", likert_items())


@pytest.fixture
def pairwise_campaign(db) -> Campaign:
    return campaign_make("judged-ab", "pairwise", pairwise_items())


def _prompt(messages: list[dict]) -> str:
    return messages[0]["content"]


def good_policy(messages: list[dict]) -> str:
    """Answer like the truth: bot-a's replies 5, others 2; A/B: the response that says
    'great!' wins, else both; always as one JSON object."""
    prompt = _prompt(messages)
    if '"choice"' in prompt:
        first = re.search(r"First response:\n(.*)", prompt).group(1)
        second = re.search(r"Second response:\n(.*)", prompt).group(1)
        choice = "first" if "great" in first else "second" if "great" in second else "both"
        return json.dumps({"choice": choice})
    response = re.search(r"Response:\n(.*)", prompt).group(1)
    score = 5 if "great" in response else 2
    return "Sure! " + json.dumps({"empathy": score, "relevance": str(score), "fluency": score})


def first_policy(messages: list[dict]) -> str:
    """A judge with total position bias: always the first response."""
    return '{"choice": "first"}'


def hashed_policy(messages: list[dict]) -> str:
    """Ratings from a hash of the prompt: a judge unrelated to the crowd."""
    digest = int(hashlib.sha256(_prompt(messages).encode()).hexdigest(), 16)
    return json.dumps(
        {k: 1 + (digest >> (3 * i)) % 5 for i, k in enumerate(("empathy", "relevance", "fluency"))}
    )


@pytest.fixture(scope="session")
def fake_judge_server():
    server = FakeJudge()
    yield server
    server.close()


@pytest.fixture
def fake_judge(fake_judge_server):
    fake_judge_server.policy = good_policy
    fake_judge_server.requests.clear()
    return fake_judge_server


@pytest.fixture
def judge_endpoint(db, fake_judge):
    return endpoint_register(
        name="fake-judge",
        backend="openai_http",
        config={"base_url": fake_judge.base_url, "model": "judge-1", "max_retries": 0},
    )
