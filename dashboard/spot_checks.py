"""Spot checks: random work of a campaign's most active workers, for the researcher to read.

ED's practice: before paying, read a few items (or conversations) of each busy worker. The
items show their payload's fields and the worker's answers in words (``dashboard.items``);
chat campaigns show whole conversations. A fixed number of queries per worker shown.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from django.db.models import Count

from annotation.models import Campaign, Dialogue, Judgment, Utterance, Worker
from annotation.protocols import Question
from dashboard.items import answer_lines, campaign_questions, payload_fields


@dataclass(frozen=True)
class SpotCheck:
    """A sample of one worker's work: judged items (their payload's fields and the answers
    in words, ``dashboard.items``), or conversations."""

    pseudonym: str
    count: int
    judged: list[dict[str, Any]]
    dialogues: list[dict[str, Any]]


def spot_checks(
    campaign: Campaign, *, workers: int = 3, per_worker: int = 3, seed: int | None = None
) -> list[SpotCheck]:
    """Return random work of the campaign's most active workers (ED's spot-check practice).

    Item campaigns show judged items with every answer the worker gave; chat campaigns show
    whole conversations the worker took part in. Queries: a fixed number per worker shown.
    """
    rng = random.Random(seed)
    top = list(
        Judgment.objects.filter(item__campaign=campaign, item__gold__isnull=True)
        .exclude(worker__provider=Worker.Provider.MODEL)  # people's work only
        .values("worker", "worker__pseudonym")
        .annotate(n=Count("item", distinct=True))
        .order_by("-n", "worker__pseudonym")[:workers]
    )
    chat_top = list(
        Utterance.objects.filter(dialogue__campaign=campaign, worker__isnull=False)
        .values("worker", "worker__pseudonym")
        .annotate(n=Count("dialogue", distinct=True))
        .order_by("-n", "worker__pseudonym")[:workers]
    )
    questions = campaign_questions(campaign) if top else []
    checks = [
        SpotCheck(
            row["worker__pseudonym"],
            row["n"],
            _judged_sample(campaign, row["worker"], questions, rng, per_worker),
            dialogues=[],
        )
        for row in top
    ]
    checks += [
        SpotCheck(
            row["worker__pseudonym"],
            row["n"],
            [],
            _conversations_sample(campaign, row["worker"], rng, per_worker),
        )
        for row in chat_top
    ]
    return checks


def _judged_sample(
    campaign: Campaign, worker: int, questions: list[Question], rng: random.Random, size: int
) -> list[dict[str, Any]]:
    """Return ``size`` random non-gold items the worker judged, with every answer in words."""
    item_ids = list(
        Judgment.objects.filter(item__campaign=campaign, worker=worker)
        .filter(item__gold__isnull=True)
        .values_list("item", flat=True)
        .distinct()
    )
    picked = rng.sample(item_ids, min(size, len(item_ids)))
    answers: dict[int, dict[str, Any]] = {}
    for item_id, key, payload, question, value in Judgment.objects.filter(
        item__in=picked, worker=worker
    ).values_list("item", "item__key", "item__payload", "question", "value"):
        entry = answers.setdefault(item_id, {"key": key, "payload": payload, "answers": {}})
        entry["answers"][question] = value
    return [
        {
            "key": entry["key"],
            "fields": payload_fields(entry["payload"]),
            "answers": answer_lines(questions, entry["answers"]),
        }
        for entry in answers.values()
    ]


def _conversations_sample(
    campaign: Campaign, worker: int, rng: random.Random, size: int
) -> list[dict[str, Any]]:
    """Return ``size`` random conversations the worker took part in, every turn with them."""
    dialogue_ids = list(
        Utterance.objects.filter(dialogue__campaign=campaign, worker=worker)
        .values_list("dialogue", flat=True)
        .distinct()
    )
    picked = rng.sample(dialogue_ids, min(size, len(dialogue_ids)))
    conversations: dict[int, dict[str, Any]] = {}
    for dialogue in Dialogue.objects.filter(pk__in=picked).select_related("situation"):
        conversations[dialogue.pk] = {
            "key": dialogue.key,
            "status": dialogue.status,
            "flags": dialogue.flags,
            "emotion": dialogue.situation.emotion if dialogue.situation else dialogue.emotion,
            "situation": dialogue.situation.text if dialogue.situation else "",
            "turns": [],
        }
    for utterance in Utterance.objects.filter(dialogue__in=picked).select_related("worker"):
        conversations[utterance.dialogue_id]["turns"].append(
            {
                "speaker": utterance.speaker,
                "worker": utterance.worker.pseudonym if utterance.worker else "",
                "text": utterance.text,
                "signals": utterance.signals,
            }
        )
    return list(conversations.values())
