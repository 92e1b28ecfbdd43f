"""Likert: the power to find a model better than its reference (``crossed_contrast``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from evalstats import uncertainty
from evalstats.planner.common import Plan, _check_run, _plan
from evalstats.taste import rater_model_effects


@dataclass(frozen=True)
class LikertDesign:
    """A two-model Likert comparison: the design and the ratings' variance components."""

    items_per_model: int = 100
    ratings_per_item: int = 1
    pool: int | None = None  # raters shared by both models; None: a fresh rater per rating
    sd_item: float = 0.6
    sd_rater: float = 0.5
    sd_noise: float = 0.8
    sd_taste: float = 0.0  # a pool rater's taste for one model over the other
    comparisons: int = 1  # model-vs-reference tests in the report (Holm)

    def __post_init__(self) -> None:
        if self.items_per_model < 2 or self.ratings_per_item < 1:
            raise ValueError("need at least 2 items per model and 1 rating per item")
        if self.pool is not None and self.pool < self.ratings_per_item:
            raise ValueError("the pool needs at least as many raters as ratings per item")
        sds = (self.sd_item, self.sd_rater, self.sd_noise, self.sd_taste)
        if min(sds) < 0 or self.comparisons < 1:
            raise ValueError("standard deviations must be >= 0 and comparisons >= 1")


def _study(rng: np.random.Generator, design: LikertDesign, difference: float) -> pd.DataFrame:
    n, k = design.items_per_model, design.ratings_per_item
    lenient = rng.normal(0.0, design.sd_rater, design.pool or 1)
    frames = []
    for model, mean in (("model", difference), ("reference", 0.0)):
        if design.pool is None:
            raters = np.arange(n * k).reshape(n, k) + (0 if model == "model" else n * k)
            b = rng.normal(0.0, design.sd_rater, (n, k))
        else:
            raters = np.argsort(rng.random((n, design.pool)), axis=1)[:, :k]
            b = (lenient + rng.normal(0.0, design.sd_taste, design.pool))[raters]
        a = rng.normal(0.0, design.sd_item, (n, 1))
        x = mean + a + b + rng.normal(0.0, design.sd_noise, (n, k))
        frames.append(
            pd.DataFrame(
                {
                    "item": np.repeat([f"{model}{i}" for i in range(n)], k),
                    "rater": raters.ravel(),
                    "value": x.ravel(),
                    "model": model,
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def _contrast(data: pd.DataFrame, level: float = 0.95) -> uncertainty.Contrast:
    """The report's difference of the model from its reference (``mean_comparisons``, the
    design method: the shared raters' leniency and each model's taste), at ``level``."""
    return _contrasts(data, (level,))[0]


def _contrasts(data: pd.DataFrame, levels: Sequence[float]) -> list[uncertainty.Contrast]:
    effects, _within, taste = uncertainty.aspect_effects(data, design=True)
    items = data.groupby("item").agg(
        score=("value", "mean"), n=("value", "size"), model=("model", "first")
    )
    a, b = items[items["model"] == "model"], items[items["model"] == "reference"]
    slopes = uncertainty.mean_slopes(data)
    return [
        uncertainty.crossed_contrast(
            a["score"],
            b["score"],
            slopes,
            effects,
            weights_a=a["n"],
            weights_b=b["n"],
            level=level,
            taste=taste,
        )
        for level in levels
    ]


def likert_plan(
    design: LikertDesign,
    difference: float,
    *,
    studies: int = 200,
    alpha: float = 0.05,
    target: float = 0.8,
    seed: int | None = 0,
) -> Plan:
    """Simulate ``studies`` studies of ``design`` and return its power and detectable difference.

    A model counts as found better when its difference from the reference has p < alpha / m
    (m = ``comparisons``: the first step of Holm's procedure, the bar every model must clear
    when the others are not better). The detectable difference comes from the same studies:
    the analysis moves with the difference and its standard error does not, so a study at
    difference d is found when d > t_s se_s - (its difference - ``difference``), t_s its own
    critical value at alpha / m (its degrees of freedom: few with a small pool, or taste);
    the ``target`` quantile of those thresholds is found with ``target`` power. A normal
    approximation ((t + z) x se) promised 0.80 where such a study found 0.71.
    """
    _check_run(studies, alpha, target)
    rng = np.random.default_rng(seed)
    level = alpha / design.comparisons
    found, ses, widths, needed = 0, [], [], []
    for _ in range(studies):
        shown, test = _contrasts(_study(rng, design, difference), (0.95, 1 - level))
        found += bool(test.p < level and test.value > 0)
        ses.append(shown.se)
        widths.append(shown.high - shown.low)
        needed.append((test.high - test.low) / 2 - (test.value - difference))
    plan = _plan(difference, found, ses, widths, level=level, target=target, studies=studies)
    never = np.where(np.isfinite(needed), needed, np.inf)  # a study with no estimate
    return replace(plan, detectable=float(np.quantile(never, target)))


def likert_components(ratings: pd.DataFrame) -> dict[str, float]:
    """Estimate sd_item, sd_rater, sd_noise and sd_taste from pilot ratings (``item``,
    ``rater``, ``value``, ``model``): the rater variance by ``uncertainty.rater_effects``, the
    noise from within-item spread less it, the items' from the item means' spread less both,
    the taste by ``uncertainty.rater_model_effects`` (0 unless raters rated both models)."""
    data = ratings.dropna(subset=["value"])
    tau = float(uncertainty.rater_effects(data, group="model").tau[0, 0])
    centred = data["value"] - data.groupby("model")["value"].transform("mean")
    m = data.groupby("item")["value"].transform("size")
    several = m >= 2
    within = data.loc[several, "value"] - data[several].groupby("item")["value"].transform("mean")
    if several.any():
        dof = float((m[several] - 1).sum() / m[several].sum())
        noise = max(float((within**2).mean()) / dof - tau, 0.0)
    else:
        noise = max(float(centred.var()) - tau, 0.0) / 2.0  # cannot tell item from noise
    item = max(float(centred.var()) - tau - noise, 0.0)
    taste = float(rater_model_effects(data).tau[0, 0])
    return {
        "sd_item": item**0.5,
        "sd_rater": tau**0.5,
        "sd_noise": noise**0.5,
        "sd_taste": taste**0.5,
    }
