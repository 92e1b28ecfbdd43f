"""Adaptive allocation's plan: where a campaign's next judgments should go, read cheaply.

A campaign of a ``ModelPairs`` protocol with ``allocation: "adaptive"`` has a plan in the
cache: the weight of each model pair (``adaptive.pair_weights`` from the pair win counts so
far) and a few open items of each pair, fewest claims first. ``plan_refresh`` computes it
outside any request (the Celery task ``annotation.tasks.adaptive_plan_refresh``): two
aggregate queries, the judgments counted per pair and answer in the database, and the open
items taken per pair by a window function. Allocation (``allocation.item_next``) calls
``steered_items``, which reads the plan's head (the pairs' weights), counts the allocation,
draws a pair by weight and reads that pair's item ids: three cache operations, whatever the
campaign's size.

The plan is refreshed after ``adaptive.refresh_interval`` allocations (counted in the cache),
when a drawn pair has run out of planned items, and when it is missing (evicted, never made).
A refresh is enqueued once at a time (``cache.add``), at most every ``COOLDOWN_SECONDS``.
Without a plan, or with the cache unreachable, allocation is uniform: steering is an
optimisation, never a condition of work.
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.core.cache import cache
from django.db import transaction
from django.db.models import Count, F, Window
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import RowNumber

from annotation.models import Campaign, Item
from annotation.protocols import ModelPairs, registry
from evalstats import adaptive

logger = logging.getLogger(__name__)

# Open items kept in the plan per pair (fewest claims first): enough for a refresh interval's
# draws of a pair at small scale; a pair that runs out asks for a refresh.
ITEMS_PER_PAIR = 64
# Pairs kept in the plan (the heaviest): bounds what a request reads from the cache.
PAIRS_MAX = 400
PLAN_SECONDS = 24 * 3600
QUEUED_SECONDS = 300
COOLDOWN_SECONDS = 5


def _key(campaign_id: int, what: str) -> str:
    return f"adaptive:{what}:{campaign_id}"


def steering_on(campaign: Campaign) -> bool:
    """Tell whether the campaign asks for adaptive allocation (its stored parameters)."""
    parameters = campaign.parameters if isinstance(campaign.parameters, dict) else {}
    if parameters.get("allocation") != "adaptive":
        return False
    try:
        return isinstance(registry.get(campaign.protocol), ModelPairs)
    except KeyError:
        return False


@dataclass(frozen=True)
class Plan:
    """A campaign's pairs with weight > 0: names, weights and planned item ids."""

    pairs: list[tuple[str, str]]
    weights: list[float]
    items: list[list[int]]
    judged: int  # judgments counted when it was made
    interval: int  # allocations before the next refresh


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
    return Plan(pairs, plan_weights, items, total, adaptive.refresh_interval(total))


def _pair_tallies(
    campaign: Campaign, protocol: ModelPairs, parameters: dict[str, Any], question: str
) -> dict[tuple[str, str], tuple[float, float, int]]:
    """Return per (model_a, model_b): model_a's wins, model_b's (ties half each), judgments.

    Counted in the database per pair, answer and presentation; each distinct combination is
    turned into a winner once by the protocol's ``judgment_winner``. Gold items, soft-blocked
    workers and model raters (LLM judges) are left out, as the report leaves them.
    """
    from annotation.selectors import campaign_judgments  # selectors import allocation, as we

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
    }
    cache.set(_key(campaign_id, "plan"), head, PLAN_SECONDS)
    cache.set(_key(campaign_id, "count"), 0, PLAN_SECONDS)


def plan_ran_dry(*, campaign: Campaign) -> None:
    """Ask for a refresh: the drawn pair's planned items were all taken (allocation fell back
    to uniform for this request)."""
    try:
        _refresh_enqueue(campaign.pk)
    except Exception as exc:  # noqa: BLE001 -- an unreachable cache must not stop the work
        logger.warning("adaptive plan refresh not asked (cache unavailable): %s", exc)


def _refresh_enqueue(campaign_id: int) -> None:
    """Ask for a refresh after this transaction commits, unless one is already queued."""
    if not cache.add(_key(campaign_id, "queued"), 1, QUEUED_SECONDS):
        return
    from annotation.tasks import adaptive_plan_refresh  # tasks import allocation, which imports us

    # robust: a broker that cannot be reached is logged, not turned into the worker's error
    # after their lease was committed.
    transaction.on_commit(lambda: adaptive_plan_refresh.delay(campaign_id), robust=True)


def steered_items(*, campaign: Campaign, u: float) -> list[int]:
    """Return the ids of the planned items of a pair drawn by weight (``u`` uniform in [0, 1));
    [] when the campaign does not steer, has no plan yet or the cache is unreachable.

    Counts the allocation and asks for a refresh when the plan is due, missing, or the drawn
    pair has no planned item left.
    """
    if not steering_on(campaign):
        return []
    try:
        head = cache.get(_key(campaign.pk, "plan"))
        if not isinstance(head, dict) or not isinstance(head.get("weights"), list):
            _refresh_enqueue(campaign.pk)
            return []
        try:
            count = cache.incr(_key(campaign.pk, "count"))
        except ValueError:  # the counter was evicted: count from here
            cache.set(_key(campaign.pk, "count"), 1, PLAN_SECONDS)
            count = 1
        at = adaptive.draw(np.asarray(head["weights"], dtype=float), u)
        ids = None
        if at is not None:
            ids = cache.get(_key(campaign.pk, f"items:{head.get('version')}:{at}"))
        if count >= int(head.get("interval", 0)) or not isinstance(ids, list) or not ids:
            _refresh_enqueue(campaign.pk)
        return ids if isinstance(ids, list) else []
    except Exception as exc:  # noqa: BLE001 -- an unreachable cache must not stop the work
        logger.warning("adaptive allocation skipped (cache unavailable): %s", exc)
        return []
