"""Designs of issue #33 for bench/coverage.py: Likert raters whose taste differs per model.

A pool of raters (10 or 30) rates two models' 100 items each on 1-5, k = 1 or 3 raters per
item drawn from the pool: rating = round(mu_model + item N(0, 0.6) + the rater's leniency
N(0, 0.5) + the rater's taste for this model N(0, taste sd) + noise N(0, 0.8)), clipped to
1-5. The truth is the population's: E[rating] of a model over items, raters and tastes, by the
normal model in closed form (``coverage._clipped_mean``'s formula), and the difference of two
such means.

Rows: the Likert report's difference interval (``uncertainty.mean_comparisons``, with the
raters' taste, ``evalstats.taste``), the same interval without the taste term ("naive
no-taste": the interval before issue #33), the report's mean interval (the raters' variance
within a model, ``taste.within_model_effects``: "crossed, within") and the mean interval with
the raters' variance across models ("naive across", the one before). A second study
with two *equal* models measures the report's "better than the reference" decision: the
statistic "not falsely better" has truth 0 and the interval (diff_low, max(diff_high, 0)), so
its "coverage" is 1 - the rate at which a model equal to the reference is called better
(one-sided, target 97.5%, i.e. a 2.5% false-positive rate); its width is about the interval's.

Standalone: ``.venv/bin/python bench/coverage_taste.py [--studies N] [--seed S]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evalstats import uncertainty  # noqa: E402

Result = tuple[str, str, float, float, float]  # statistic, method, truth, low, high
SD_ITEM, SD_RATER, SD_NOISE, N_ITEMS = 0.6, 0.5, 0.8, 100


def _clipped_mean(mu: float, sd: float) -> float:
    """E[clip(round(X), 1, 5)] for X ~ N(mu, sd)."""
    return 1.0 + float(stats.norm.sf(np.arange(1.5, 5.0, 1.0), mu, sd).sum())


def _study(
    rng: np.random.Generator, mus: dict[str, float], *, k: int, pool: int, taste: float
) -> pd.DataFrame:
    """Return one study's ratings (``model``, ``aspect``, ``item``, ``rater``, ``value``)."""
    lenient = rng.normal(0.0, SD_RATER, pool)
    frames = []
    for model, mu in mus.items():
        raters = np.argsort(rng.random((N_ITEMS, pool)), axis=1)[:, :k]
        liking = rng.normal(0.0, taste, pool)  # this model's taste per rater
        a = rng.normal(0.0, SD_ITEM, (N_ITEMS, 1))
        noise = rng.normal(0.0, SD_NOISE, raters.shape)
        x = np.clip(np.rint(mu + a + lenient[raters] + liking[raters] + noise), 1, 5)
        frames.append(
            pd.DataFrame(
                {
                    "item": np.repeat([f"{model}{i}" for i in range(N_ITEMS)], k),
                    "rater": raters.ravel(),
                    "value": x.ravel(),
                    "model": model,
                    "aspect": "overall",
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def _no_taste(data: pd.DataFrame) -> uncertainty.Contrast:
    """Return the difference interval without the taste term (the one before issue #33)."""
    items = data.groupby("item").agg(
        score=("value", "mean"), n=("value", "size"), model=("model", "first")
    )
    a, b = (items[items["model"] == m] for m in ("model", "reference"))
    return uncertainty.crossed_contrast(
        a["score"],
        b["score"],
        uncertainty.mean_slopes(data),
        uncertainty.rater_effects(data, group="model"),
        weights_a=a["n"],
        weights_b=b["n"],
    )


def _across_models_mean(data: pd.DataFrame) -> uncertainty.Interval:
    """Return the mean interval with the raters' variance across models (the one before)."""
    items = data.groupby("item").agg(
        score=("value", "mean"), n=("value", "size"), model=("model", "first")
    )
    a = items[items["model"] == "model"]
    effects = uncertainty.rater_effects(data, group="model")
    return uncertainty.crossed_mean(
        a["score"], uncertainty.mean_slopes(data), effects, weights=a["n"]
    )


def taste_studies(
    rng: np.random.Generator, n: int, *, k: int, pool: int, taste: float
) -> Iterator[Result]:
    """Yield the rows of ``n`` studies of unequal models and ``n`` of equal ones."""
    mus = {"model": 3.3, "reference": 3.1}
    total = float(np.sqrt(SD_ITEM**2 + SD_RATER**2 + taste**2 + SD_NOISE**2))
    truth = {m: _clipped_mean(mu, total) for m, mu in mus.items()}
    true_diff = truth["model"] - truth["reference"]
    for _ in range(n):
        data = _study(rng, mus, k=k, pool=pool, taste=taste)
        table = uncertainty.mean_comparisons(data, reference="reference").set_index("model")
        row = table.loc["model"]
        yield "Likert difference", "crossed + taste", true_diff, row["diff_low"], row["diff_high"]
        old = _no_taste(data)
        yield "Likert difference", "naive no-taste", true_diff, old.low, old.high
        yield "Likert mean", "crossed, within", truth["model"], row["ci_low"], row["ci_high"]
        old_mean = _across_models_mean(data)
        yield "Likert mean", "naive across", truth["model"], old_mean.low, old_mean.high
        equal = _study(rng, {"model": 3.1, "reference": 3.1}, k=k, pool=pool, taste=taste)
        row = uncertainty.mean_comparisons(equal, reference="reference").set_index("model")
        row = row.loc["model"]
        low, high = row["diff_low"], max(row["diff_high"], 0.0)
        yield "not falsely better", "report (Holm)", 0.0, low, high
        old = _no_taste(equal)
        yield "not falsely better", "naive no-taste", 0.0, old.low, max(old.high, 0.0)


def designs() -> list[tuple[str, Callable[[np.random.Generator, int], Iterator[Result]]]]:
    """Return (name, studies function of (rng, n)) for coverage.py's suite."""
    out: list[tuple[str, Callable[[np.random.Generator, int], Iterator[Result]]]] = []
    for pool in (10, 30):
        for taste in (0.5, 1.0):
            for k in (1, 3):
                name = f"Likert taste {taste}, pool {pool}, {k}/item"
                out.append((name, partial(taste_studies, k=k, pool=pool, taste=taste)))
    return out


def main(argv: list[str] | None = None) -> int:
    """Print coverage, its Monte-Carlo se and the mean width per design, statistic and method."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--studies", type=int, default=200, help="studies per design")
    parser.add_argument("--seed", type=int, default=0, help="random seed")
    parser.add_argument("--only", default="", help="only the designs whose name has this text")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    row = "{:<20} {:<36} {:<16} {:>8} {:>7} {:>6}"
    print(row.format("statistic", "design", "method", "coverage", "± MC se", "width"))
    for design, run in designs():
        if args.only not in design:
            continue
        rows = pd.DataFrame(
            list(run(rng, args.studies)), columns=["stat", "method", "t", "lo", "hi"]
        )
        rows["hit"] = (rows["lo"] <= rows["t"]) & (rows["t"] <= rows["hi"])
        rows["width"] = rows["hi"] - rows["lo"]
        for (stat, method), part in rows.groupby(["stat", "method"], sort=False):
            cover = part["hit"].mean()
            se = np.sqrt(cover * (1 - cover) / len(part))
            width = f"{part['width'].mean():.3f}"
            print(row.format(stat, design, method, f"{cover:.1%}", f"{se:.1%}", width))
        sys.stdout.flush()
    seconds = time.perf_counter() - started
    print(f"{args.studies} studies per design, seed {args.seed}, {seconds:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
