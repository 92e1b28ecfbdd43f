"""The start of an arena conversation: which two models it gets (and which is A), and its
two dialogues (``arena_open``).

Under the campaign's row lock (``chat.seats.chat_arrive``), so workers arriving at once
cannot all take the last conversation. The candidates are the pairs of registered models the
arriving worker has met fewer than ``max_pair_per_worker`` times. While a model has had fewer
than ``min_exposure`` conversations, only pairs with the least exposed model are drawn. Then:
``uniform`` takes the pair with the fewest conversations (ties at random); ``adaptive``
draws by ``evalstats.adaptive.pair_weights`` from the votes so far (the A/B campaigns'
allocation: pairs whose order is least certain, after ``adaptive_min_per_pair`` votes each).
Which model is A (the left pane) is a coin flip.
"""

from __future__ import annotations

import itertools
import random
from collections import Counter
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import numpy as np
from django.db.models import Count, Q

from annotation.models import Assignment, Campaign, Judgment, Worker
from annotation.services.dialogues import dialogue_start, dialogue_update
from chat.models import ChatSeat
from evalstats import adaptive

Pair = tuple[str, str]
_SCORE = {"a": 1.0, "b": 0.0, "tie": 0.5}


def _key(a: str, b: str) -> Pair:
    return (a, b) if a <= b else (b, a)


def pair_counts(campaign: Campaign, *, worker: Worker | None = None) -> Counter[Pair]:
    """Count the campaign's arena conversations per pair (unordered): those done or under
    way, or the worker's own of any outcome when ``worker`` is given."""
    seats = ChatSeat.objects.filter(campaign=campaign).exclude(endpoint_b="")
    if worker is not None:
        seats = seats.filter(worker=worker)
    else:
        accepted = Q(assignment__status=Assignment.Status.ACCEPTED)
        seats = seats.filter(Q(stage=ChatSeat.Stage.DONE) | accepted)
    return Counter(_key(a, b) for a, b in seats.values_list("endpoint", "endpoint_b"))


def vote_matrices(campaign: Campaign, models: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Return (wins, votes) k x k over ``models`` from the campaign's counted votes: wins[i, j]
    how often i beat j (a tie half each way), votes[i, j] the pair's votes of any kind."""
    index = {m: i for i, m in enumerate(models)}
    k = len(models)
    wins, votes = np.zeros((k, k)), np.zeros((k, k))
    # Counted in the database, per vote and ordered pair: a few rows per pair however many
    # votes there are (this runs at every arrival, under the campaign's lock).
    rows = (
        Judgment.objects.filter(item__campaign=campaign, question="winner")
        .values_list("value", "item__payload__model_a", "item__payload__model_b")
        .order_by()
        .annotate(n=Count("pk"))
    )
    for value, a, b, n in rows:
        if a not in index or b not in index:
            continue
        i, j = index[a], index[b]
        votes[i, j] += n
        votes[j, i] += n
        if value in _SCORE:
            wins[i, j] += n * _SCORE[value]
            wins[j, i] += n * (1.0 - _SCORE[value])
    return wins, votes


def pair_next(
    *,
    campaign: Campaign,
    parameters: Mapping[str, Any],
    models: list[str],
    worker: Worker,
    rng: random.Random,
) -> Pair | None:
    """Return (model A, model B) for the worker's new conversation among ``models`` (the
    registered ones), or None when the campaign has its conversations or the worker has met
    every pair as often as allowed."""
    counts = pair_counts(campaign)
    if sum(counts.values()) >= parameters["conversations"]:
        return None
    mine = pair_counts(campaign, worker=worker)
    candidates = [
        _key(a, b)
        for a, b in itertools.combinations(models, 2)
        if mine[_key(a, b)] < parameters["max_pair_per_worker"]
    ]
    if not candidates:
        return None
    exposure = Counter[str]()
    for (a, b), n in counts.items():
        exposure[a] += n
        exposure[b] += n
    least = min(exposure[m] for pair in candidates for m in pair)
    if least < parameters["min_exposure"]:
        candidates = [p for p in candidates if exposure[p[0]] == least or exposure[p[1]] == least]
    chosen = None
    if parameters["allocation"] == "adaptive":
        chosen = _adaptive(campaign, parameters, models, candidates, rng)
    if chosen is None:
        fewest = min(counts[p] for p in candidates)
        chosen = rng.choice([p for p in candidates if counts[p] == fewest])
    return chosen if rng.random() < 0.5 else (chosen[1], chosen[0])


def _adaptive(
    campaign: Campaign,
    parameters: Mapping[str, Any],
    models: list[str],
    candidates: list[Pair],
    rng: random.Random,
) -> Pair | None:
    """Draw a candidate pair by its weight in the adaptive allocation (None: all zero)."""
    index = {m: i for i, m in enumerate(models)}
    wins, votes = vote_matrices(campaign, models)
    available = np.zeros((len(models), len(models)), dtype=bool)
    for a, b in candidates:
        i, j = sorted((index[a], index[b]))
        available[i, j] = True
    weights = adaptive.pair_weights(
        wins, votes, available, floor=int(parameters["adaptive_min_per_pair"])
    )
    at = adaptive.draw(weights, rng.random())
    if at is None:
        return None
    i, j = divmod(at, len(models))
    return _key(models[i], models[j])


def arena_open(*, seat: ChatSeat, now: datetime) -> None:
    """Start the seat's conversation: a dialogue per side, each for its model; the worker
    writes first."""
    common = {"seat": seat.pk, "pending": None, "failed": None}
    side_b = dialogue_start(
        campaign_id=seat.campaign_id,
        key=f"arena-{seat.pk}-b",
        metadata={**common, "model": seat.endpoint_b, "side": "b"},
    )
    state = {"b": side_b.pk, "votes": {}, "replied": {}, "started": now.isoformat()}
    side_a = dialogue_start(
        campaign_id=seat.campaign_id,
        key=f"arena-{seat.pk}-a",
        metadata={**common, "model": seat.endpoint, "side": "a", "battle": state},
    )
    dialogue_update(side_b, metadata={"a": side_a.pk})
    seat.dialogue = side_a
    seat.save(update_fields=["dialogue"])
