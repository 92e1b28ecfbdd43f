"""Designs of issue #33 for bench/coverage.py: Bradley–Terry when ties come from a ties model.

Four models meet in every pair; each judgment (its own item, by a fresh worker) is drawn from
Davidson's (1970) model, P(i beats j) = pi_i / D, P(tie) = nu sqrt(pi_i pi_j) / D, with
nu = 0.5 or 1.0. The truth is the generating log-strengths (mean 0) and their pairwise
differences. Methods:

- "Davidson Wald x deff": the report's interval under ``bt_ties = "davidson"``
  (``ties.davidson_components``), and for the differences ``contrasts.bradley_terry_contrasts``
  (the ``bt_contrasts`` table), both default intervals of that option;
- "naive half-win": the default report's interval (a tie as half a win each way) held against
  the Davidson truth: not a failure of that interval, whose estimand is the half-win
  strengths, but the gap between the two estimands a reader should see.

Run alone with ``.venv/bin/python bench/coverage_ties.py [--studies N]``; coverage.py's suite
adds ``designs()``.
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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evalstats import contrasts, ranking, ties  # noqa: E402

Result = tuple[str, str, float, float, float]
STRENGTHS = {"m1": 0.8, "m2": 0.3, "m3": -0.2, "m4": -0.9}
DAVIDSON = "Davidson Wald x deff"
NAIVE = "naive half-win"


def _judgments(
    rng: np.random.Generator, theta: np.ndarray, nu: float, per_pair: int
) -> pd.DataFrame:
    """Return one study's outcomes: ``per_pair`` Davidson judgments for every pair."""
    models = list(STRENGTHS)
    first, second = np.triu_indices(len(models), 1)
    a, b = np.repeat(first, per_pair), np.repeat(second, per_pair)
    tie = nu * np.exp((theta[a] + theta[b]) / 2)
    total = np.exp(theta[a]) + np.exp(theta[b]) + tie
    u = rng.random(len(a)) * total
    outcome = np.where(u < np.exp(theta[a]), "a", np.where(u < total - tie, "b", "both"))
    names = np.array(models)
    return pd.DataFrame(
        {
            "item": np.arange(len(a)),
            "rater": np.arange(len(a)),
            "a": names[a],
            "b": names[b],
            "outcome": outcome,
        }
    )


def ties_studies(
    rng: np.random.Generator, n: int, *, nu: float, per_pair: int = 60
) -> Iterator[Result]:
    """Yield per study each model's strength and each pair's difference against the truth."""
    models = list(STRENGTHS)
    theta = np.array([STRENGTHS[m] for m in models])
    theta -= theta.mean()
    truth = dict(zip(models, theta, strict=True))
    for _ in range(n):
        data = _judgments(rng, theta, nu, per_pair)
        ((davidson, _),) = ties.davidson_components(data)
        half = ranking.bradley_terry(data)
        for method, table in ((DAVIDSON, davidson), (NAIVE, half)):
            for row in table.itertuples():
                yield "BT strength, tie model", method, truth[row.model], row.ci_low, row.ci_high
        for method, convention in ((DAVIDSON, "davidson"), (NAIVE, "half")):
            (table,) = contrasts.bradley_terry_contrasts(data, ties_model=convention)
            for row in table.itertuples():
                difference = truth[row.model_a] - truth[row.model_b]
                yield "BT contrast, tie model", method, difference, row.low, row.high


def designs() -> list[tuple[str, Callable[[np.random.Generator, int], Iterator[Result]]]]:
    """Return (name, studies function of (rng, n)) for coverage.py's suite."""
    return [
        (f"BT Davidson ties nu {nu}, 4 models x 60", partial(ties_studies, nu=nu))
        for nu in (0.5, 1.0)
    ]


def main(argv: list[str] | None = None) -> int:
    """Print coverage and mean width per design, statistic and method (no exit status)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=200, help="studies per design (200)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    for design, run in designs():
        rows = pd.DataFrame(list(run(rng, args.studies)), columns=["s", "m", "t", "lo", "hi"])
        rows["covered"] = (rows["lo"] <= rows["t"]) & (rows["t"] <= rows["hi"])
        rows["width"] = rows["hi"] - rows["lo"]
        summary = rows.groupby(["s", "m"], sort=False).agg(
            coverage=("covered", "mean"), n=("covered", "size"), width=("width", "mean")
        )
        for (statistic, method), r in summary.iterrows():
            se = np.sqrt(r.coverage * (1 - r.coverage) / r.n)
            print(
                f"{design:<34} {statistic:<24} {method:<22} {r.coverage:6.1%} ± {se:.1%}"
                f"  width {r.width:.3f}  (n {int(r.n)})"
            )
    seconds = time.perf_counter() - started
    print(f"{args.studies} studies per design, seed {args.seed}, {seconds:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
