"""What every plan shares: the Plan, its summary of simulated studies, random raters."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats
from scipy.special import expit


@dataclass(frozen=True)
class Plan:
    """What a design can show: power at ``difference`` and the difference at 80% power."""

    difference: float
    power: float
    power_se: float  # Monte-Carlo standard error of the power
    detectable: float  # the difference found with ``target`` power
    target: float
    mean_width: float  # expected width of the difference's 95% interval
    studies: int


def _plan(
    difference: float,
    found: int,
    ses: list[float],
    widths: list[float],
    *,
    level: float,
    target: float,
    studies: int,
) -> Plan:
    """Return the Plan of ``studies`` simulated studies: found, standard errors, widths."""
    power = found / studies
    se = float(np.sqrt(np.nanmean(np.square(ses))))
    detectable = (float(stats.norm.ppf(1 - level / 2)) + float(stats.norm.ppf(target))) * se
    return Plan(
        difference=difference,
        power=power,
        power_se=float(np.sqrt(power * (1 - power) / studies)),
        detectable=detectable,
        target=target,
        mean_width=float(np.nanmean(widths)),
        studies=studies,
    )


def _check_run(studies: int, alpha: float, target: float) -> None:
    if studies < 1 or not 0 < alpha < 1 or not 0 < target < 1:
        raise ValueError("need studies >= 1, 0 < alpha < 1 and 0 < target < 1")


def _mean_logit(share: float, sd: float) -> float:
    """Return mu with E expit(mu + sd Z) = ``share``, Z ~ N(0, 1) (Gauss-Hermite, bisection)."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(60)
    weights = weights / weights.sum()
    lo, hi = -15.0, 15.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if float(weights @ expit(mid + sd * nodes)) < share else (lo, mid)
    return (lo + hi) / 2


def _raters(rng: np.random.Generator, n: int, k: int, pool: int | None) -> np.ndarray:
    """Return n x k rater ids: k distinct workers of the pool per item, or fresh ones."""
    if pool is None:
        return np.arange(n * k).reshape(n, k)
    return np.argsort(rng.random((n, pool)), axis=1)[:, :k]
