"""What a design finds with the target power: the one answer the wizard and ``plan`` print.

The wizard's review step (``dashboard.drafts.plan``) and ``manage.py plan`` both call
``design_found``; with the same studies and seed they print the same numbers (the wizard's
page shows the command that reproduces it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from evalstats.planner.chats import ChatDesign, chat_plan
from evalstats.planner.common import Plan
from evalstats.planner.kappa import KappaDesign, kappa_plan
from evalstats.planner.likert import LikertDesign, likert_plan
from evalstats.planner.pairs import ABDesign, BTDesign, ab_detectable, ab_reachable, bt_plan
from evalstats.planner.ssa import SSADesign, ssa_plan

Design = LikertDesign | SSADesign | ABDesign | BTDesign | ChatDesign | KappaDesign

# Where each search starts (``plan``'s default --difference): Likert points, SSA and
# interactive SSA shares, the A/B win rate's advantage over 50%, Bradley–Terry log-strength.
STARTS: dict[type, float] = {
    LikertDesign: 0.3,
    SSADesign: 0.05,
    ChatDesign: 0.05,
    ABDesign: 0.1,
    BTDesign: 0.5,
    KappaDesign: 0.0,
}


@dataclass(frozen=True)
class Found:
    """The difference a design finds with ``target`` power, or that it finds none.

    ``power`` is the simulated power at ``detectable`` where it was searched for directly
    (A/B); ``reached`` is False when no difference the planner can simulate reaches the
    target (then ``detectable`` is the largest one tried and ``power`` its power).
    """

    detectable: float
    width: float  # expected width of the difference's (kappa's) 95% interval
    studies: int
    target: float
    power: float | None = None
    reached: bool = True


def _refined(plan: Callable[[float], Plan], first: float) -> Plan:
    """Plan at ``first``, then once more at the difference found (a share's standard error
    depends on its level), keeping the first when the second is impossible."""
    result = plan(first)
    try:
        return plan(result.detectable)
    except ValueError:  # the difference found would take the share past 1
        return result


BT_EDGE = 4.0  # the largest Bradley–Terry gap searched (log-strength; a 98% win probability)
BT_STEPS = 7


def _searched(plan: Callable[[float], Plan], start: float, edge: float, steps: int) -> Plan:
    """Return the plan at the smallest difference in [0, ``edge``] whose simulated power
    reaches the target (bisection from ``start``; the same seed at every step), or the plan
    at ``edge`` when even that falls short."""
    best = plan(start)
    lo, hi = (0.0, start) if best.power >= best.target else (start, edge)
    if best.power < best.target:
        best = plan(edge)
        if best.power < best.target:
            return best
    for _ in range(steps):
        middle = (lo + hi) / 2
        tried = plan(middle)
        if tried.power >= tried.target:
            best, hi = tried, middle
        else:
            lo = middle
    return best


def design_found(
    design: Design,
    *,
    start: float | None = None,
    studies: int = 200,
    seed: int | None = 0,
    target: float = 0.8,
) -> Found:
    """Return what ``design`` finds with ``target`` power, from ``studies`` simulated studies.

    Likert: (t + z_target) x the standard error simulated at ``start``; SSA and interactive
    SSA: the same, planned once more at the difference found; A/B and Bradley–Terry, where
    that normal approximation promised more power than the studies had: the simulated power
    searched directly (``ab_detectable``, ``_searched``); kappa: the difference between two
    sources' kappas. docs/statistics.md, "Planner", gives each method and how
    bench/planner.py checks it.
    """
    first = STARTS[type(design)] if start is None else start
    run: dict[str, Any] = {"studies": studies, "seed": seed, "target": target}
    if isinstance(design, KappaDesign):
        kappa = kappa_plan(design, **run)
        return Found(kappa.detectable, kappa.mean_width, kappa.studies, target)
    if isinstance(design, ABDesign):
        ab = ab_detectable(design, start=first, **run)
        reached = ab_reachable(ab)
        return Found(ab.detectable, ab.mean_width, ab.studies, target, ab.power, reached)
    plan: Plan
    if isinstance(design, BTDesign):
        bt = _searched(lambda d: bt_plan(design, d, **run), first, BT_EDGE, BT_STEPS)
        reached = bt.power >= target
        return Found(bt.difference, bt.mean_width, bt.studies, target, bt.power, reached)
    if isinstance(design, LikertDesign):
        plan = likert_plan(design, first, **run)
    elif isinstance(design, SSADesign):
        plan = _refined(lambda d: ssa_plan(design, d, **run), first)
    else:
        plan = _refined(lambda d: chat_plan(design, d, **run), first)
    return Found(plan.detectable, plan.mean_width, plan.studies, target)
