"""Static SSA: the power to find a difference in sensibleness or specificity."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats
from scipy.special import expit

from evalstats import uncertainty
from evalstats.planner.common import Plan, _check_run, _plan


@dataclass(frozen=True)
class SSADesign:
    """A two-model static SSA comparison of sensibleness (Meena: 5 workers per response)."""

    responses_per_model: int = 200
    raters_per_response: int = 5
    pool: int | None = 20  # workers shared by both models; None: fresh workers
    sensible: float = 0.7  # the reference's sensibleness (share of majority-sensible)
    sd_item: float = 1.5  # responses' spread on the logit scale of one vote
    sd_rater: float = 1.0  # workers' leniency on the same scale
    comparisons: int = 1

    def __post_init__(self) -> None:
        if self.responses_per_model < 2 or self.raters_per_response < 1:
            raise ValueError("need at least 2 responses per model and 1 worker per response")
        if self.pool is not None and self.pool < self.raters_per_response:
            raise ValueError("the pool needs at least as many workers as votes per response")
        if not 0 < self.sensible < 1 or min(self.sd_item, self.sd_rater) < 0:
            raise ValueError("need 0 < sensible < 1 and standard deviations >= 0")


def _vote_logit(design: SSADesign, share: float) -> float:
    """Return the mean vote logit at which the majority-sensible share is ``share``."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(60)
    weights = weights / weights.sum()
    k = design.raters_per_response

    def majority(mu: float) -> float:
        q = expit(mu + design.sd_item * nodes[:, None] + design.sd_rater * nodes[None, :]) @ weights
        return float(weights @ stats.binom.sf(k // 2, k, q))

    lo, hi = -12.0, 12.0
    for _ in range(60):  # bisection: the share grows with the mean logit
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if majority(mid) < share else (lo, mid)
    return (lo + hi) / 2


def ssa_plan(
    design: SSADesign,
    difference: float,
    *,
    studies: int = 200,
    alpha: float = 0.05,
    target: float = 0.8,
    seed: int | None = 0,
) -> Plan:
    """Simulate static SSA studies: the power to find sensibleness higher by ``difference``
    (a share: 0.05 is 5 points) and the difference found with ``target`` power, analysed as
    the report does (majority labels, crossed items x raters with pivotal votes).

    A share's standard error depends on its level, so the detectable difference uses the one
    simulated at ``difference``: planning again at the returned value refines it (the
    ``plan`` command does so once)."""
    _check_run(studies, alpha, target)
    if not 0 < design.sensible + difference < 1:
        raise ValueError("the model's sensibleness must stay between 0 and 1")
    rng = np.random.default_rng(seed)
    means = {
        "model": _vote_logit(design, design.sensible + difference),
        "reference": _vote_logit(design, design.sensible),
    }
    level = alpha / design.comparisons
    found, ses, widths = 0, [], []
    for _ in range(studies):
        data = _study_votes(design, means, rng)
        data["w"] = uncertainty.pivotal_weights(data)
        effects = uncertainty.rater_effects(data, weights=["w"])
        slopes = data.assign(slope=uncertainty.majority_slopes(data))
        labels = data.groupby("item").agg(yes=("value", "sum"), m=("value", "size"))
        label = (2 * labels["yes"] > labels["m"]).astype(float)
        label[2 * labels["yes"] == labels["m"]] = np.nan
        a = label[label.index.str.startswith("model")]
        b = label[label.index.str.startswith("reference")]
        diff = uncertainty.crossed_contrast(a, b, slopes, effects)
        found += bool(diff.p < level and diff.value > 0)
        ses.append(diff.se)
        widths.append(diff.high - diff.low)
    return _plan(difference, found, ses, widths, level=level, target=target, studies=studies)


def _study_votes(
    design: SSADesign, means: dict[str, float], rng: np.random.Generator
) -> pd.DataFrame:
    """Simulate one study's sensible votes: ``item``, ``rater``, ``value`` (0/1), ``model``;
    each model's responses drawn around its mean vote logit, each vote with its worker's
    leniency (a pool shared by both models, or fresh workers)."""
    n, k = design.responses_per_model, design.raters_per_response
    lenient = rng.normal(0.0, design.sd_rater, design.pool or 1)
    frames = []
    for model, mu in means.items():
        if design.pool is None:
            raters = np.arange(n * k).reshape(n, k) + (0 if model == "model" else n * k)
            b = rng.normal(0.0, design.sd_rater, (n, k))
        else:
            raters = np.argsort(rng.random((n, design.pool)), axis=1)[:, :k]
            b = lenient[raters]
        theta = mu + rng.normal(0.0, design.sd_item, (n, 1))
        votes = (rng.random((n, k)) < expit(theta + b)).astype(float)
        frames.append(
            pd.DataFrame(
                {
                    "item": np.repeat([f"{model}{i}" for i in range(n)], k),
                    "rater": raters.ravel(),
                    "value": votes.ravel(),
                    "model": model,
                }
            )
        )
    return pd.concat(frames, ignore_index=True)
