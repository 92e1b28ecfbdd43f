"""Likert: the power to find a model better than its reference (``crossed_contrast``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from evalstats import uncertainty
from evalstats.planner.common import Plan, _check_run, _plan


@dataclass(frozen=True)
class LikertDesign:
    """A two-model Likert comparison: the design and the ratings' variance components."""

    items_per_model: int = 100
    ratings_per_item: int = 1
    pool: int | None = None  # raters shared by both models; None: a fresh rater per rating
    sd_item: float = 0.6
    sd_rater: float = 0.5
    sd_noise: float = 0.8
    comparisons: int = 1  # model-vs-reference tests in the report (Holm)

    def __post_init__(self) -> None:
        if self.items_per_model < 2 or self.ratings_per_item < 1:
            raise ValueError("need at least 2 items per model and 1 rating per item")
        if self.pool is not None and self.pool < self.ratings_per_item:
            raise ValueError("the pool needs at least as many raters as ratings per item")
        if min(self.sd_item, self.sd_rater, self.sd_noise) < 0 or self.comparisons < 1:
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
            b = lenient[raters]
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


def _contrast(data: pd.DataFrame) -> uncertainty.Contrast:
    items = data.groupby("item").agg(
        score=("value", "mean"), n=("value", "size"), model=("model", "first")
    )
    a, b = items[items["model"] == "model"], items[items["model"] == "reference"]
    return uncertainty.crossed_contrast(
        a["score"],
        b["score"],
        uncertainty.mean_slopes(data),
        uncertainty.rater_effects(data, group="model"),
        weights_a=a["n"],
        weights_b=b["n"],
    )


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
    when the others are not better). The detectable difference is
    (t_{1 - alpha/2m} + z_target) times the simulated standard error of the difference, the
    normal approximation that the power's simulation checks (tests do).
    """
    _check_run(studies, alpha, target)
    rng = np.random.default_rng(seed)
    level = alpha / design.comparisons
    found, ses, widths = 0, [], []
    for _ in range(studies):
        diff = _contrast(_study(rng, design, difference))
        found += bool(diff.p < level and diff.value > 0)
        ses.append(diff.se)
        widths.append(diff.high - diff.low)
    return _plan(difference, found, ses, widths, level=level, target=target, studies=studies)


def likert_components(ratings: pd.DataFrame) -> dict[str, float]:
    """Estimate sd_item, sd_rater and sd_noise from pilot ratings (``item``, ``rater``,
    ``value``, ``model``): the rater variance by ``uncertainty.rater_effects``, the noise from
    within-item spread less it, the items' from the item means' spread less both."""
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
    return {"sd_item": item**0.5, "sd_rater": tau**0.5, "sd_noise": noise**0.5}
