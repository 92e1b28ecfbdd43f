"""Adaptive allocation's plan: where a campaign's next judgments should go, read cheaply.

A campaign of a ``ModelPairs`` protocol with ``allocation: "adaptive"`` has a plan in the
cache: the weight of each model pair (``adaptive.pair_weights`` from the pair win counts so
far) and a few open items of each pair, fewest claims first. ``steering_plan.plan_refresh``
computes it outside any request (the Celery task ``annotation.tasks.adaptive_plan_refresh``): two
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

import numpy as np
from django.core.cache import cache
from django.db import transaction

from annotation.models import Campaign
from annotation.protocols import ModelPairs, registry
from evalsite.celery import task_send
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
    # robust: a broker that cannot be reached is logged, not turned into the worker's error
    # after their lease was committed.
    transaction.on_commit(
        lambda: task_send("annotation.tasks.adaptive_plan_refresh", campaign_id), robust=True
    )


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


def ranking_settled(*, campaign: Campaign) -> bool | None:
    """Tell whether the campaign's last plan found its ranking settled (the stopping rule,
    ``adaptive.ranking_settled``: every adjacent pair below ``adaptive.SETTLED`` probability
    of a wrong order); None when it does not steer, has no plan or the cache is unreachable."""
    if not steering_on(campaign):
        return None
    try:
        head = cache.get(_key(campaign.pk, "plan"))
    except Exception as exc:  # noqa: BLE001 -- an unreachable cache must not stop the work
        logger.warning("adaptive plan not read (cache unavailable): %s", exc)
        return None
    if not isinstance(head, dict) or "settled" not in head:
        return None
    return bool(head["settled"])
