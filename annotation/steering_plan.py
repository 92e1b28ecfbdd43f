"""Adaptive allocation's plan computed (the read side is ``annotation.steering``): the pair
weights from the judgments so far and a few open items per pair, stored in the cache for
``steering.steered_items``. Runs in the Celery task ``annotation.tasks.adaptive_plan_refresh``,
never in a request."""

from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.core.cache import cache
from django.db.models import Count, F, Window
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import RowNumber

from annotation.judgment_reads import campaign_judgments
from annotation.models import Campaign, Item
from annotation.protocols import ModelPairs, registry
from annotation.steering import (
    COOLDOWN_SECONDS,
    ITEMS_PER_PAIR,
    PAIRS_MAX,
    PLAN_SECONDS,
    _key,
    steering_on,
)
from evalstats import adaptive

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Plan:
    """A campaign's pairs with weight > 0: names, weights and planned item ids."""

    pairs: list[tuple[str, str]]
    weights: list[float]
    items: list[list[int]]
    judged: int  # judgments counted when it was made
    interval: int  # allocations before the next refresh
    # The stopping rule (adaptive.ranking_settled): every adjacent pair of the ranking below
    # adaptive.SETTLED probability of a wrong order; the largest of those probabilities.
    settled: bool = False
    worst: float = 0.5


def plan_compute(campaign: Campaign) -> Plan:
    """Compute the campaign's plan from its judgments and open items (two queries)."""
    protocol = registry.get(campaign.protocol)
    if not isinstance(protocol, ModelPairs):
        raise ValueError(f"{campaign.protocol} items do not compare two models")
    parameters = protocol.clean_parameters(campaign.parameters)
    question = protocol.pair_question(parameters)
    tallies = _pair_tallies(campaign, protocol, parameters, question)
    open_items = _open_items(campaign)
    models = sorted({m for pair in [*tallies, *open_items] for m in pair})
    index = {m: i for i, m in enumerate(models)}
    k = len(models)
    wins, judged, available = np.zeros((k, k)), np.zeros((k, k)), np.zeros((k, k), dtype=bool)
    for (a, b), (won_a, won_b, n) in tallies.items():
        i, j = index[a], index[b]
        wins[i, j] += won_a
        wins[j, i] += won_b
        judged[i, j] += n
        judged[j, i] += n
    for a, b in open_items:
        i, j = sorted((index[a], index[b]))
        available[i, j] = True
    weights = adaptive.pair_weights(
        wins,
        judged,
        available,
        floor=int(parameters["adaptive_min_per_pair"]),
    )
    chosen = sorted(zip(*np.nonzero(weights), strict=True), key=lambda p: -weights[p])
    pairs, plan_weights, items = [], [], []
    for i, j in chosen[:PAIRS_MAX]:
        a, b = models[i], models[j]
        ids = open_items.get((a, b), []) + open_items.get((b, a), [])
        pairs.append((a, b))
        plan_weights.append(float(weights[i, j]))
        items.append(ids[:ITEMS_PER_PAIR])
    total = int(judged.sum() // 2)
    verdict = adaptive.ranking_settled(wins)
    return Plan(
        pairs,
        plan_weights,
        items,
        total,
        adaptive.refresh_interval(total),
        verdict.settled,
        verdict.worst,
    )


def _pair_tallies(
    campaign: Campaign, protocol: ModelPairs, parameters: dict[str, Any], question: str
) -> dict[tuple[str, str], tuple[float, float, int]]:
    """Return per (model_a, model_b): model_a's wins, model_b's (ties half each), judgments.

    Counted in the database per pair, answer and presentation; each distinct combination is
    turned into a winner once by the protocol's ``judgment_winner``. Gold items, soft-blocked
    workers and model raters (LLM judges) are left out, as the report leaves them.
    """
    judgments, _ = campaign_judgments(campaign)  # the report's: no gold, blocked or judges
    rows = (
        judgments.filter(question=question)
        .annotate(
            model_a=KeyTextTransform("model_a", "item__payload"),
            model_b=KeyTextTransform("model_b", "item__payload"),
        )
        .values("model_a", "model_b", "value", "presentation")
        .annotate(n=Count("pk"))
        .order_by()
    )
    tallies: dict[tuple[str, str], tuple[float, float, int]] = {}
    for row in rows:
        a, b = row["model_a"], row["model_b"]
        if not a or not b or a == b:
            continue
        payload = {"model_a": a, "model_b": b}
        winner = protocol.judgment_winner(payload, question, row["value"], row["presentation"])
        won_a, won_b, n = tallies.get((a, b), (0.0, 0.0, 0))
        count = int(row["n"])
        if winner == a:
            won_a += count
        elif winner == b:
            won_b += count
        elif winner == "both":
            won_a, won_b = won_a + count / 2, won_b + count / 2
        tallies[(a, b)] = (won_a, won_b, n + count)
    return tallies


def _open_items(campaign: Campaign) -> dict[tuple[str, str], list[int]]:
    """Return per (model_a, model_b) up to ITEMS_PER_PAIR open items, fewest claims first."""
    pair = [KeyTextTransform("model_a", "payload"), KeyTextTransform("model_b", "payload")]
    rows = (
        Item.objects.filter(campaign=campaign, gold__isnull=True, claims__lt=campaign.redundancy)
        .annotate(
            model_a=pair[0],
            model_b=pair[1],
            place=Window(RowNumber(), partition_by=pair, order_by=[F("claims"), F("shuffle")]),
        )
        .filter(place__lte=ITEMS_PER_PAIR)
        .order_by("place")
        .values_list("pk", "model_a", "model_b")
    )
    found: dict[tuple[str, str], list[int]] = {}
    for pk, a, b in rows:
        if a and b and a != b:
            found.setdefault((a, b), []).append(pk)
    return found


def plan_refresh(*, campaign_id: int) -> Plan | None:
    """Compute and store the campaign's plan (the task's body); None if it steers no more."""
    try:
        campaign = Campaign.objects.filter(pk=campaign_id).first()  # deleted since: no plan
        old = cache.get(_key(campaign_id, "plan"))
        if campaign is None or not steering_on(campaign):
            cache.delete_many([_key(campaign_id, w) for w in ("plan", "count")])
            plan = None
        else:
            plan = plan_compute(campaign)
            _store(campaign_id, plan)
            if plan.settled:  # the campaign may stop: its owner decides (pause or finish)
                logger.info(
                    "adaptive campaign %s: ranking settled at %s judgments (largest adjacent "
                    "P(wrong order) %.3f)",
                    campaign_id,
                    plan.judged,
                    plan.worst,
                )
        if isinstance(old, dict):  # the previous plan's item lists
            cache.delete_many(_item_keys(campaign_id, old.get("version"), old.get("lists", 0)))
        return plan
    finally:
        # A short pause before the next refresh may be asked: a pair whose planned items a
        # busy campaign keeps finding taken must not keep a worker refreshing back to back.
        cache.set(_key(campaign_id, "queued"), 1, COOLDOWN_SECONDS)


def _item_keys(campaign_id: int, version: Any, lists: Any) -> list[str]:
    if not isinstance(version, str) or not isinstance(lists, int):
        return []
    return [_key(campaign_id, f"items:{version}:{n}") for n in range(lists)]


def _store(campaign_id: int, plan: Plan) -> None:
    """Put the plan in the cache: each pair's item ids under a key of its own, then the head
    (weights, the version naming those keys, the refresh interval), so a request reads the
    small head and one pair's ids, however many pairs the campaign has."""
    version = secrets.token_hex(6)
    keys = _item_keys(campaign_id, version, len(plan.items))
    cache.set_many(dict(zip(keys, plan.items, strict=True)), PLAN_SECONDS)
    head = {
        "version": version,
        "lists": len(plan.items),
        "weights": plan.weights,
        "interval": plan.interval,
        "settled": plan.settled,
        "worst": plan.worst,
    }
    cache.set(_key(campaign_id, "plan"), head, PLAN_SECONDS)
    cache.set(_key(campaign_id, "count"), 0, PLAN_SECONDS)
