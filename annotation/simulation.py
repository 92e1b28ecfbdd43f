"""A simulated crowd: workers of configurable reliability who work through the same services
as real ones (``worker_visit``, ``judgment_submit``). Used by the demo, tests and benchmarks.

- good: answers near the item's true value (small noise);
- noisy: answers near it with large noise;
- spammer: answers uniformly at random.

Each answer arrives after a simulated reading time (never under the campaign's minimum), so
per-worker times in the quality table look like a real crowd's: spammers are the fast ones.
``study_simulate`` simulates whole studies without a database, for the quality rule's
benchmark (``bench/quality.py``) and tests.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import pandas as pd

from annotation.allocation import leases_release
from annotation.models import Campaign, Item, Lease, Worker
from annotation.protocols import Simulated, registry
from annotation.protocols.base import Reliability
from annotation.quality import quality_review
from annotation.services import Visit, judgment_submit, presentation_seed, worker_visit
from evalsite.errors import AnnotationError, InvalidParameters
from evalstats.quality_rule import Rule, worker_decisions
from providers import Arrival

Truth = Callable[[Item], Mapping[str, Any] | None]
# Mean and standard deviation of the seconds a simulated worker takes per item.
_THINK_SECONDS: dict[Reliability, tuple[float, float]] = {
    "good": (9.0, 3.0),
    "noisy": (6.0, 2.0),
    "spammer": (1.5, 0.5),
}


@dataclass(frozen=True)
class SimulatedWorker:
    """One simulated worker: an external id and a reliability."""

    external_id: str
    reliability: Reliability


def crowd_make(*, good: int = 8, noisy: int = 3, spammer: int = 1) -> list[SimulatedWorker]:
    """Return a crowd with the given numbers of good, noisy and spamming workers."""
    kinds: list[tuple[Reliability, int]] = [("good", good), ("noisy", noisy), ("spammer", spammer)]
    return [
        SimulatedWorker(external_id=f"sim-{kind}-{i + 1}", reliability=kind)
        for kind, n in kinds
        for i in range(n)
    ]


@dataclass
class CrowdRun:
    """What a simulated crowd did: judgments per worker and refusals met."""

    items_judged: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)  # blocked by the review at the end

    @property
    def total(self) -> int:
        return sum(self.items_judged.values())


def crowd_run(
    *,
    campaign: Campaign,
    workers: Iterable[SimulatedWorker],
    truth: Truth | None = None,
    seed: int = 0,
    max_items: int | None = None,
    progress: Callable[[int], None] | None = None,
    item_cap: int | None = None,
) -> CrowdRun:
    """Let the workers take turns judging items until none gets one or ``max_items`` items
    (gold checks not counted) are judged.

    Each turn is a real visit of the task page's service and a real submission, so
    allocation, leases, validation and idempotency are exercised exactly as for people.
    With ``item_cap``, a worker offered an item (not a gold one) that their lease takes past
    that many claims gives it back (the lease released) and stops: the demo's crowd leaves
    each item's last slots to people. The run ends with the quality review
    (``quality.quality_review``) a finished study gets.
    """
    rng = random.Random(seed)
    protocol = registry.get(campaign.protocol)
    if not isinstance(protocol, Simulated):
        raise InvalidParameters(f"{protocol.title}: the simulated crowd cannot answer it.")
    parameters = protocol.clean_parameters(campaign.parameters)
    crowd = list(workers)
    run = CrowdRun(items_judged={w.external_id: 0 for w in crowd})
    active = list(crowd)
    counted = 0  # items judged, gold checks apart: what ``max_items`` bounds
    while active and (max_items is None or counted < max_items):
        for sim in list(active):
            if max_items is not None and counted >= max_items:
                break
            arrival = Arrival(provider=Worker.Provider.SIMULATED, worker_id=sim.external_id)
            visit = worker_visit(campaign=campaign, arrival=arrival)
            if visit.kind == "done":
                continue  # the next visit opens a new assignment
            if visit.kind in ("nothing", "stopped"):
                active.remove(sim)
                continue
            assert visit.item is not None and visit.assignment is not None
            lease = Lease.objects.get(item=visit.item, worker=visit.assignment.worker)
            if _past_cap(visit.item, lease, item_cap):
                active.remove(sim)
                continue
            answers, now = _answers(campaign, protocol, parameters, visit, lease, sim, truth, rng)
            try:
                judgment_submit(
                    assignment=visit.assignment, item_id=visit.item.pk, answers=answers, now=now
                )
            except AnnotationError as exc:
                run.errors.append(f"{sim.external_id}: {exc.message}")
                continue
            run.items_judged[sim.external_id] += 1
            counted += not visit.item.is_gold
            if progress:
                progress(run.total)
    # The rule ran after each gold answer; the answers since then count in a last review.
    run.blocked = [p.worker.external_id for p in quality_review(campaign)]
    return run


def _past_cap(item: Item, lease: Lease, item_cap: int | None) -> bool:
    """Give the item back (its lease released) when the lease took it past ``item_cap``
    claims; gold items have no redundancy, so every worker may take them."""
    if item_cap is None or item.is_gold:
        return False
    if Item.objects.values_list("claims", flat=True).get(pk=item.pk) <= item_cap:
        return False
    leases_release(Lease.objects.filter(pk=lease.pk))
    return True


def _answers(
    campaign: Campaign,
    protocol: Simulated,
    parameters: Mapping[str, Any],
    visit: Visit,
    lease: Lease,
    sim: SimulatedWorker,
    truth: Truth | None,
    rng: random.Random,
) -> tuple[dict[str, Any], datetime]:
    """Return the simulated worker's answers to the visit's item and when they submit them:
    after a think time drawn for their reliability (at least the protocol's and the
    campaign's least time) from the lease's start."""
    assert visit.item is not None and visit.assignment is not None
    shown = protocol.presentation(
        parameters,
        visit.item.payload,
        presentation_seed(item=visit.item, worker=visit.assignment.worker),
    )
    answers = protocol.simulate_answers(
        parameters,
        visit.item.payload,
        shown,
        truth(visit.item) if truth else None,
        sim.reliability,
        rng,
    )
    mean, sd = _THINK_SECONDS[sim.reliability]
    least = protocol.item_min_seconds(parameters, visit.item.payload)
    think = max(least + max(rng.gauss(mean, sd), 0.5), campaign.min_seconds_per_item)
    return answers, lease.created_at + timedelta(seconds=think)


# --- simulated studies without a database: the quality rule's benchmark and tests -----------


@dataclass(frozen=True)
class WorkerKind:
    """How a simulated worker answers yes/no questions, and how long they take per item."""

    accuracy: float | None  # chance of the true answer; None: the item is ignored
    yes_share: float  # how often a worker who ignores the item says "yes"
    seconds: tuple[float, float]  # mean and standard deviation per item


WORKER_KINDS: dict[str, WorkerKind] = {
    "good": WorkerKind(0.9, 0.5, (9.0, 3.0)),
    "fast-good": WorkerKind(0.9, 0.5, (1.5, 0.5)),  # quick and careful: must never be blocked
    "noisy": WorkerKind(0.7, 0.5, (6.0, 2.0)),
    "fast-60": WorkerKind(0.6, 0.5, (1.3, 0.4)),  # the spammer: fast, right 60%
    "fast-random": WorkerKind(None, 0.5, (1.3, 0.4)),
    "fast-biased": WorkerKind(None, 0.9, (1.3, 0.4)),  # "yes" nine times in ten
}


@dataclass(frozen=True)
class StudyShape:
    """A study's size: items, raters per item, hidden gold checks and the share of gold turns."""

    items: int
    redundancy: int
    gold_items: int
    gold_rate: float


@dataclass
class SimulatedStudy:
    """A simulated SSA-like study: answers, gold answers and times, each with its turn."""

    answers: pd.DataFrame  # worker, item, question, value, turn
    gold: pd.DataFrame  # worker, right, turn
    seconds: pd.DataFrame  # worker, item, seconds, turn


def study_simulate(
    shape: StudyShape, crowd: Mapping[str, str], rng: np.random.Generator
) -> SimulatedStudy:
    """Simulate a study shaped like the demo's SSA one, without a database.

    ``crowd`` maps worker ids to ``WORKER_KINDS`` names. Workers take turns as ``crowd_run``
    makes them: each turn is a gold check with ``gold_rate`` (while the worker has unseen
    gold items), else, as allocation serves them, one of the least-judged items they have not
    judged, at random. Each item
    asks "sensible?" (true for 60% of items) and, when the worker said yes, "specific?"
    (true for half the sensible ones); gold items are nonsense (right answer: not sensible).
    """
    sensible = rng.random(shape.items) < 0.6
    specific = sensible & (rng.random(shape.items) < 0.5)
    judged = np.zeros(shape.items, dtype=int)
    seen: dict[str, set[int]] = {w: set() for w in crowd}
    gold_left = dict.fromkeys(crowd, shape.gold_items)
    answers: list[tuple[str, int, str, str, int]] = []
    gold: list[tuple[str, bool, int]] = []
    seconds: list[tuple[str, int, float, int]] = []
    active, turn = list(crowd), 0
    while active:
        for worker in list(active):
            kind = WORKER_KINDS[crowd[worker]]
            turn += 1
            spent = max(0.5, rng.normal(*kind.seconds))
            if gold_left[worker] and rng.random() < shape.gold_rate:
                gold_left[worker] -= 1
                gold.append((worker, not _answer(kind, False, rng), turn))
                seconds.append((worker, -gold_left[worker] - 1, spent, turn))
                continue
            # As allocation does: the least-judged open items first, at random among them.
            open_items = [
                int(i) for i in np.flatnonzero(judged < shape.redundancy) if i not in seen[worker]
            ]
            if not open_items:
                active.remove(worker)
                continue
            least = judged[open_items].min()
            item = int(rng.choice([i for i in open_items if judged[i] == least]))
            seen[worker].add(item)
            judged[item] += 1
            said = _answer(kind, bool(sensible[item]), rng)
            answers.append((worker, item, "sensible", "yes" if said else "no", turn))
            if said:
                also = _answer(kind, bool(specific[item]), rng)
                answers.append((worker, item, "specific", "yes" if also else "no", turn))
            seconds.append((worker, item, spent, turn))
    return SimulatedStudy(
        answers=pd.DataFrame(answers, columns=["worker", "item", "question", "value", "turn"]),
        gold=pd.DataFrame(gold, columns=["worker", "right", "turn"]),
        seconds=pd.DataFrame(seconds, columns=["worker", "item", "seconds", "turn"]),
    )


def _answer(kind: WorkerKind, truth: bool, rng: np.random.Generator) -> bool:
    if kind.accuracy is None:
        return bool(rng.random() < kind.yes_share)
    return truth if rng.random() < kind.accuracy else not truth


def study_decisions(study: SimulatedStudy, rule: Rule, until: int | None = None) -> pd.DataFrame:
    """Return the quality rule's decisions (``quality_rule.worker_decisions``) on a simulated
    study as it stood after turn ``until`` (None: at its end)."""
    last = np.inf if until is None else until
    answers = study.answers[study.answers["turn"] <= last]
    gold = study.gold[study.gold["turn"] <= last]
    seconds = study.seconds[study.seconds["turn"] <= last]
    checks = gold.groupby("worker")["right"].agg(gold_answered="size", gold_correct="sum")
    median = seconds.groupby("worker")["seconds"].median()
    return worker_decisions(answers, checks, median, rule)
