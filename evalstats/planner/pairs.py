"""A/B win rates and Bradley–Terry strengths: the power to find a better model."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats
from scipy.special import expit

from evalstats import ranking, uncertainty
from evalstats.planner.common import Plan, _check_run, _mean_logit, _plan, _raters

# --- A/B: one pair of models, the win rate among decisive judgments ---------------------------


@dataclass(frozen=True)
class ABDesign:
    """An A/B comparison of two models (the report's ``win_rates``): the design and spreads.

    An item is a context with the two models' responses, judged by ``judgments_per_item``
    workers of a ``pool`` (None: a fresh worker per judgment). A judgment is "both" or
    "neither" with the given shares; otherwise it chooses model A with probability
    expit(mu + item + worker's preference for A + worker's preference for the first response
    shown x (+1 if A was shown first, -1 if not)), the order random as the protocol shows it.
    """

    items: int = 100
    judgments_per_item: int = 3
    pool: int | None = 20
    both: float = 0.1
    neither: float = 0.1
    sd_item: float = 1.0  # contexts' spread on the logit of choosing A
    sd_rater: float = 0.3  # workers' preference for one model (the report's rater effect)
    sd_position: float = 0.5  # workers' preference for the first response shown
    comparisons: int = 1  # pairs tested (Holm's first step, as for Likert)

    def __post_init__(self) -> None:
        if self.items < 2 or self.judgments_per_item < 1:
            raise ValueError("need at least 2 items and 1 judgment per item")
        if self.pool is not None and self.pool < self.judgments_per_item:
            raise ValueError("the pool needs at least as many workers as judgments per item")
        if min(self.both, self.neither) < 0 or self.both + self.neither >= 0.95:
            raise ValueError("tie shares must be >= 0 and leave at least 5% decisive judgments")
        if min(self.sd_item, self.sd_rater, self.sd_position) < 0 or self.comparisons < 1:
            raise ValueError("standard deviations must be >= 0 and comparisons >= 1")


def ab_outcomes(rng: np.random.Generator, design: ABDesign, win_rate: float) -> pd.DataFrame:
    """Simulate one A/B study: ``item``, ``rater``, ``a``, ``b``, ``outcome`` (as the report's)."""
    n, k = design.items, design.judgments_per_item
    spread = np.sqrt(design.sd_item**2 + design.sd_rater**2 + design.sd_position**2)
    mu = _mean_logit(win_rate, float(spread))
    raters = _raters(rng, n, k, design.pool)
    size = design.pool or n * k
    prefer = rng.normal(0.0, design.sd_rater, size)[raters]
    first = rng.normal(0.0, design.sd_position, size)[raters]
    shown_first = np.where(rng.random((n, k)) < 0.5, 1.0, -1.0)  # +1: A shown first
    theta = mu + rng.normal(0.0, design.sd_item, (n, 1)) + prefer + first * shown_first
    chose_a = rng.random((n, k)) < expit(theta)
    tie = rng.random((n, k))
    outcome = np.where(
        tie < design.both, "both", np.where(tie < design.both + design.neither, "neither", "")
    )
    outcome = np.where(outcome != "", outcome, np.where(chose_a, "a", "b"))
    return pd.DataFrame(
        {
            "item": np.repeat(np.arange(n), k),
            "rater": raters.ravel(),
            "a": "A",
            "b": "B",
            "outcome": outcome.ravel(),
        }
    )


def ab_win_rate(outcomes: pd.DataFrame, level: float = 0.95) -> uncertainty.Interval:
    """Return model A's win rate over B with the report's interval (``ranking.win_rates``:
    decisive judgments, crossed items x workers, Wilson at the effective size)."""
    decisive = outcomes[outcomes["outcome"].isin(["a", "b"])]
    decisive = decisive.assign(value=(decisive["outcome"] == "a").astype(float), pair=0)
    by_item = decisive.groupby("item")["value"].agg(["mean", "size"])
    return uncertainty.crossed_mean(
        by_item["mean"],
        uncertainty.mean_slopes(decisive),
        uncertainty.rater_effects(decisive, group="pair"),
        weights=by_item["size"],
        level=level,
        proportion=True,
    )


def ab_plan(
    design: ABDesign,
    difference: float,
    *,
    studies: int = 200,
    alpha: float = 0.05,
    target: float = 0.8,
    seed: int | None = 0,
) -> Plan:
    """Simulate A/B studies where model A wins a share 0.5 + ``difference`` of the decisive
    judgments: the power to find it better (its win rate's 95% interval, at level
    1 - alpha/m, above 0.5) and the advantage over 50% found with ``target`` power, from
    the standard error at ``difference`` (plan again there to refine, as for SSA)."""
    _check_run(studies, alpha, target)
    if not 0 <= difference < 0.5:
        raise ValueError("the win rate's advantage over 50% must be between 0 and 0.5")
    rng = np.random.default_rng(seed)
    level = alpha / design.comparisons
    found, ses, widths = 0, [], []
    for _ in range(studies):
        est = ab_win_rate(ab_outcomes(rng, design, 0.5 + difference), level=1 - level)
        found += bool(est.low > 0.5)
        ses.append(est.se)
        widths.append(est.high - est.low)
    return _plan(difference, found, ses, widths, level=level, target=target, studies=studies)


AB_EDGE = 0.49  # the largest advantage simulated: a 99% win rate
AB_STEPS = 6  # bisection steps of ``ab_detectable``: the bracket ends under 0.01 wide


def ab_detectable(
    design: ABDesign,
    *,
    start: float = 0.1,
    studies: int = 200,
    alpha: float = 0.05,
    target: float = 0.8,
    seed: int | None = 0,
) -> Plan:
    """Return the plan at the smallest advantage over 50% that ``design``'s simulated studies
    find with ``target`` power: bisection on [0, AB_EDGE] of the simulated power itself,
    from a plan at ``start``. Its ``detectable`` is that advantage, never 0.

    The normal approximation the other plans use, (z(1 - alpha/2m) + z(target)) x se, fails
    for win rates: the standard error shrinks as the rate moves from 50%, and in a small
    study (6 contexts, 3 judgments) it promised 80% power where the studies found the
    advantage in 28-40% of cases, or read 0.00 from studies whose decisive judgments all went
    to A. Every plan uses the same seed (common random numbers), so the power grows smoothly
    with the advantage. When even AB_EDGE is found with less than ``target`` power, the plan
    at AB_EDGE is returned with that power: no win rate below 99% is found
    (``ab_reachable``).
    """
    run: dict[str, Any] = {"studies": studies, "alpha": alpha, "target": target, "seed": seed}
    plan = ab_plan(design, start, **run)
    best: Plan | None = plan if plan.power >= target else None
    lo, hi = (0.0, start) if best is not None else (start, AB_EDGE)
    if best is None:
        best = ab_plan(design, AB_EDGE, **run)
        if best.power < target:
            return best
    for _ in range(AB_STEPS):
        middle = (lo + hi) / 2
        plan = ab_plan(design, middle, **run)
        if plan.power >= target:
            best, hi = plan, middle
        else:
            lo = middle
    return replace(best, detectable=best.difference)


def ab_reachable(plan: Plan) -> bool:
    """Tell whether ``ab_detectable``'s plan found an advantage below AB_EDGE with its power."""
    return not (plan.difference == AB_EDGE and plan.power < plan.target)


# --- Bradley–Terry: several models compared in pairs ----------------------------------------


@dataclass(frozen=True)
class BTDesign:
    """Every pair of ``models`` compared on ``items_per_pair`` items, each judged
    ``judgments_per_item`` times (fresh workers), analysed as the report's Bradley–Terry.

    The first model is stronger than the second by the planned difference (log-strength);
    the others equal the second. "both" counts as half a win each way, "neither" is left
    out, ``prior`` virtual wins each way per pair (the report's ``bt_prior``, 0 by
    default); an item's context shifts the logit of its pair by N(0, sd_item).
    """

    models: int = 4
    items_per_pair: int = 50
    judgments_per_item: int = 1
    both: float = 0.1
    neither: float = 0.1
    sd_item: float = 0.0
    prior: float = 0.0

    def __post_init__(self) -> None:
        if self.models < 2 or self.items_per_pair < 2 or self.judgments_per_item < 1:
            raise ValueError("need at least 2 models, 2 items per pair and 1 judgment per item")
        if min(self.both, self.neither) < 0 or self.both + self.neither >= 0.95:
            raise ValueError("tie shares must be >= 0 and leave at least 5% decisive judgments")
        if self.sd_item < 0 or self.prior < 0:
            raise ValueError("sd_item and the prior must be >= 0")


def bt_votes(
    rng: np.random.Generator, design: BTDesign, difference: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Simulate one study's decided judgments: item, model a, model b (indices), score
    (1 a won, 0 b won, 0.5 both); "neither" judgments are left out, as the fit does."""
    k, n, m = design.models, design.items_per_pair, design.judgments_per_item
    pairs = np.array([(i, j) for i in range(k) for j in range(i + 1, k)])
    strength = np.zeros(k)
    strength[0] = difference
    gap = strength[pairs[:, 0]] - strength[pairs[:, 1]]
    theta = gap[:, None, None] + rng.normal(0.0, design.sd_item, (len(pairs), n, 1))
    won = (rng.random((len(pairs), n, m)) < expit(theta)).astype(float)
    tie = rng.random((len(pairs), n, m))
    score = np.where(tie < design.both, 0.5, won)
    keep = (tie >= design.both + design.neither) | (tie < design.both)
    item = np.broadcast_to(np.arange(len(pairs) * n).reshape(len(pairs), n, 1), keep.shape)
    at = np.broadcast_to(np.arange(len(pairs))[:, None, None], keep.shape)[keep]
    return item[keep], pairs[at, 0], pairs[at, 1], score[keep]


def bt_difference(
    votes: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    design: BTDesign,
    *,
    level: float = 0.95,
) -> uncertainty.Interval:
    """Return the strength of model 0 minus model 1 with a ``level`` interval, as the report
    computes it (``ranking.bt_estimate``: Firth's estimate, the Wald interval widened by the
    items' design effect; docs/statistics.md)."""
    item, ia, ib, score = votes
    contrast = np.zeros((1, design.models))
    contrast[0, 0], contrast[0, 1] = 1.0, -1.0
    strength, (variance,) = ranking.bt_estimate(
        ia,
        ib,
        score,
        k=design.models,
        prior=design.prior,
        clusters=[pd.factorize(pd.Series(item))[0]],
        contrasts=contrast,
    )
    value = float(strength[0] - strength[1])
    se = float(np.sqrt(variance))
    z = float(stats.norm.ppf(0.5 + level / 2))
    return uncertainty.Interval(value, value - z * se, value + z * se, se, "wald")


def bt_plan(
    design: BTDesign,
    difference: float,
    *,
    studies: int = 200,
    alpha: float = 0.05,
    target: float = 0.8,
    seed: int | None = 0,
) -> Plan:
    """Simulate Bradley–Terry studies where model 0 is ``difference`` log-strength above
    model 1: the power to separate them (the difference's interval above 0) and the
    difference separated with ``target`` power, analysed as the report does
    (``bt_difference``)."""
    _check_run(studies, alpha, target)
    if difference < 0:
        raise ValueError("the difference must be >= 0")
    rng = np.random.default_rng(seed)
    found, ses, widths = 0, [], []
    for _ in range(studies):
        votes = bt_votes(rng, design, difference)
        est = bt_difference(votes, design, level=1 - alpha)
        found += bool(est.low > 0)
        ses.append(est.se)
        widths.append(est.high - est.low)
    return _plan(difference, found, ses, widths, level=alpha, target=target, studies=studies)
