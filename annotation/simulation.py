"""A simulated crowd: workers of configurable reliability who work through the same services
as real ones (``worker_visit``, ``judgment_submit``). Used by the demo, tests and benchmarks.

- good: answers near the item's true value (small noise);
- noisy: answers near it with large noise;
- spammer: answers uniformly at random.

Each answer arrives after a simulated reading time (never under the campaign's minimum), so
per-worker times in the quality table look like a real crowd's: spammers are the fast ones.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from annotation.exceptions import AnnotationError, InvalidParameters
from annotation.models import Campaign, Item, Lease, Worker
from annotation.protocols import Simulated, registry
from annotation.protocols.base import Reliability
from annotation.providers import Arrival
from annotation.services import judgment_submit, presentation_seed, worker_visit

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
) -> CrowdRun:
    """Let the workers take turns judging items until none gets one or ``max_items`` is reached.

    Each turn is a real visit of the task page's service and a real submission, so
    allocation, leases, validation and idempotency are exercised exactly as for people.
    """
    rng = random.Random(seed)
    protocol = registry.get(campaign.protocol)
    if not isinstance(protocol, Simulated):
        raise InvalidParameters(f"{protocol.title}: the simulated crowd cannot answer it.")
    parameters = protocol.clean_parameters(campaign.parameters)
    crowd = list(workers)
    run = CrowdRun(items_judged={w.external_id: 0 for w in crowd})
    active = list(crowd)
    while active and (max_items is None or run.total < max_items):
        for sim in list(active):
            if max_items is not None and run.total >= max_items:
                break
            arrival = Arrival(provider=Worker.Provider.SIMULATED, worker_id=sim.external_id)
            visit = worker_visit(campaign=campaign, arrival=arrival)
            if visit.kind == "done":
                continue  # the next visit opens a new assignment
            if visit.kind in ("nothing", "stopped"):
                active.remove(sim)
                continue
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
            lease = Lease.objects.get(item=visit.item, worker=visit.assignment.worker)
            mean, sd = _THINK_SECONDS[sim.reliability]
            least = protocol.item_min_seconds(parameters, visit.item.payload)
            think = max(least + max(rng.gauss(mean, sd), 0.5), campaign.min_seconds_per_item)
            try:
                judgment_submit(
                    assignment=visit.assignment,
                    item_id=visit.item.pk,
                    answers=answers,
                    now=lease.created_at + timedelta(seconds=think),
                )
            except AnnotationError as exc:
                run.errors.append(f"{sim.external_id}: {exc.message}")
                continue
            run.items_judged[sim.external_id] += 1
            if progress:
                progress(run.total)
    return run
