"""One live campaign per protocol, with items a worker can be shown, for the fuzz tests."""

from __future__ import annotations

from typing import Any

from annotation.models import Campaign
from annotation.protocols import LiveChat, registry
from annotation.services import campaign_create, campaign_set_status, items_add
from modelhub.services import endpoint_register
from providers import local
from tests.factories import likert_payload

REDUNDANCY = 1000  # every generated worker finds an item

PAYLOADS: dict[str, Any] = {
    "likert": likert_payload,
    "ssa": likert_payload,
    "pairwise": lambda n: {
        "context": [f"My dog died {n}."],
        "model_a": "gen",
        "response_a": "I'm so sorry to hear that.",
        "model_b": "generic",
        "response_b": "ok",
        "example": f"e{n}",
    },
    "emotionlines": lambda n: {
        "utterances": [{"speaker": "AB"[i % 2], "text": f"line {i} of {n}"} for i in range(3)],
        "source": "Friends",
    },
    "emocontext": lambda n: {"turns": [f"my cat is sick {n}", "oh no", "I am so worried"]},
    "categorical": lambda n: {"text": f"The film was fine, I guess ({n})."},
    "acute": lambda n: {
        f"{key}_{side}": value
        for side, model in (("a", "meena"), ("b", "mitsuku"))
        for key, value in (
            ("model", model),
            ("speaker", "bot"),
            ("turns", [{"speaker": s, "text": f"{s} turn {n}"} for s in ("human", "bot")] * 2),
        )
    },
}
CHAT_PARAMETERS: dict[str, dict[str, Any]] = {
    "empathetic_chat": {"heartbeat_s": 1, "lobby_timeout_s": 30},
    "ssa_interactive": {"models": ["generic-bot"], "heartbeat_s": 1},
    "arena": {"models": ["generic-bot", "generic-bot-2"], "heartbeat_s": 1},
}
# The registered models a draft of each live chat protocol must name (an arena draws two).
DRAFT_MODELS: dict[str, dict[str, Any]] = {
    name: {"models": parameters["models"]}
    for name, parameters in CHAT_PARAMETERS.items()
    if "models" in parameters
}


def studies_create() -> dict[str, Campaign]:
    """Return a live campaign of every registered protocol, by protocol name."""
    for name in ("generic-bot", "generic-bot-2"):
        endpoint_register(name=name, backend="generic_bot")
    campaigns = {}
    for protocol in registry.all():
        chat = isinstance(protocol, LiveChat)
        campaign = campaign_create(
            slug=f"fuzz-{protocol.name.replace('_', '-')}",
            name=f"Fuzz {protocol.title}",
            protocol=protocol.name,
            parameters=CHAT_PARAMETERS.get(protocol.name, {}),
            redundancy=None if chat else REDUNDANCY,
            items_per_assignment=None if chat else 3,
        )
        if not chat:
            payload = PAYLOADS[protocol.name]
            items_add(campaign=campaign, items=[(f"i{n}", payload(n)) for n in range(3)])
        campaigns[protocol.name] = campaign_set_status(campaign=campaign, status="live")
    return campaigns


def answer_values(campaign: Campaign) -> dict[str, list[str]]:
    """Return the campaign's question keys and the answers each question allows."""
    protocol = registry.get(campaign.protocol)
    questions = protocol.questions(protocol.clean_parameters(campaign.parameters))
    return {q.key: [value for value, _ in q.choices] for q in questions}


def worker_query(campaign: Campaign, worker_id: str) -> dict[str, str]:
    """Return the query of ``worker_id``'s own link to the campaign (signed where local links
    are signed)."""
    query = {"workerId": worker_id}
    link_key = getattr(local, "link_key", None)
    if link_key is not None:
        query["key"] = link_key(campaign.slug, worker_id)
    return query
