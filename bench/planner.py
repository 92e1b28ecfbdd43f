"""The planner's promises checked by simulation: promised vs achieved power and width.

Run from the repository root: ``.venv/bin/python bench/planner.py [--studies N] [--seed S]``.
For each protocol's plan it asks the planner (``evalstats.planner.design_found``, the answer
the wizard's review step and ``manage.py plan`` print) for the difference found with 80%
power, then simulates ``--studies`` independent studies of that design at that difference,
staffed as crowds are (a pool of workers doing many items, with leniency spread), and
analyses them with the report's own functions (``uncertainty.mean_comparisons`` for Likert,
``ranking.win_rates`` for A/B) or the planner's analysis where it is the report's (SSA,
interactive SSA, Bradley–Terry, kappa). It prints the promise, what was achieved with a
Monte-Carlo 95% interval, and the expected interval widths; the exit status is 1 when an
achieved power is more than 5 points from the promise beyond Monte-Carlo error (or kappa's
width more than 10%). It also measures, under no difference, how often the ED paper's
2-SEM highlight and Holm's decision mark a model better (their false-positive rates).
The default 100 studies take a few minutes; ``--studies 1000`` is the full check.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
os.environ.setdefault("EVALSITE_TASKS_INLINE", "1")

import django  # noqa: E402

django.setup()

from annotation.protocols.likert import likert_scores  # noqa: E402
from evalstats import planner, ranking, uncertainty  # noqa: E402

Z = 1.959963984540054
SLACK = 0.05  # the target: achieved power within 5 points of the promise
ROW = "{:<34} {:>9} {:>8} {:>17} {:>9} {:>9} {}"


@dataclass(frozen=True)
class Check:
    """One protocol's promise and what its simulated studies achieved."""

    name: str
    difference: float
    promised: float
    promised_se: float  # Monte-Carlo se of the promise (0 for the target itself)
    achieved: float
    achieved_se: float
    width_promised: float
    width_achieved: float

    @property
    def ok(self) -> bool:
        """Within SLACK of the promise, or not beyond Monte-Carlo error."""
        error = Z * float(np.hypot(self.promised_se, self.achieved_se))
        return abs(self.achieved - self.promised) <= SLACK + error


def _share(hits: int, studies: int) -> tuple[float, float]:
    p = hits / studies
    return p, float(np.sqrt(max(p * (1 - p), 0.25 / studies) / studies))


# --- Likert (ED): three aspects, a pool of raters, the report's Holm over aspects ------------


def _likert_study(
    rng: np.random.Generator, n: int, pool: int, difference: float, aspects: int = 3
) -> pd.DataFrame:
    """Two models' items, each rated once on every aspect by a worker of the pool; leniency
    sd 0.5 per worker (shared by the aspects), item sd 0.6, noise sd 0.8; the model is
    ``difference`` above the reference on the first aspect only."""
    lenient = rng.normal(0.0, 0.5, pool)
    frames = []
    for model, shift in (("model", difference), ("reference", 0.0)):
        raters = rng.integers(0, pool, n)
        for aspect in range(aspects):
            value = (shift if aspect == 0 else 0.0) + rng.normal(0.0, 0.6, n)
            value = value + lenient[raters] + rng.normal(0.0, 0.8, n)
            frames.append(
                pd.DataFrame(
                    {
                        "model": model,
                        "aspect": f"a{aspect}",
                        "question": f"a{aspect}",
                        "item": [f"{model}{i}" for i in range(n)],
                        "rater": raters,
                        "value": value,
                    }
                )
            )
    return pd.concat(frames, ignore_index=True)


def likert_check(studies: int, rng: np.random.Generator, plan_studies: int) -> Check:
    # The planner is asked about the design simulated below: its pool of 15 (it had been asked
    # about fresh raters, and promised a width of 0.621 where the pool's intervals are 0.667).
    design = planner.LikertDesign(items_per_model=100, ratings_per_item=1, comparisons=3, pool=15)
    found = planner.design_found(design, studies=plan_studies)
    hits, widths = 0, []
    for _ in range(studies):
        data = _likert_study(rng, 100, 15, found.detectable)
        table = uncertainty.mean_comparisons(data, reference="reference", level=0.95)
        row = table[(table["model"] == "model") & (table["aspect"] == "a0")].iloc[0]
        hits += bool(row["better"])
        widths.append(row["diff_high"] - row["diff_low"])
    power, se = _share(hits, studies)
    name = "likert (ED: 3 aspects, pool 15)"
    return Check(name, found.detectable, 0.8, 0.0, power, se, found.width, float(np.mean(widths)))


def paper_false_positives(studies: int, rng: np.random.Generator) -> tuple[float, float]:
    """Return how often, with no difference, the paper's 2-SEM mark and Holm's decision call
    the model better than the reference (per aspect; 100 items per model, 3 aspects, one
    rating per item from a pool of 10 workers)."""
    paper = holm = 0
    for _ in range(studies):
        data = _likert_study(rng, 100, 10, 0.0)
        scores = likert_scores(data, reference="reference", highlight_sem=2.0)
        paper += int(scores["highlighted"].sum())
        table = uncertainty.mean_comparisons(data, reference="reference", level=0.95)
        holm += int(table["better"].sum())
    return paper / (3 * studies), holm / (3 * studies)


# --- A/B: the report's win rate, a pool of 20 workers -----------------------------------------


def ab_check(studies: int, rng: np.random.Generator, plan_studies: int) -> Check:
    design = planner.ABDesign(items=100, judgments_per_item=3, pool=20)
    found = planner.design_found(design, studies=plan_studies)
    hits, widths = 0, []
    for _ in range(studies):
        outcomes = planner.ab_outcomes(rng, design, 0.5 + found.detectable)
        row = ranking.win_rates(outcomes, level=0.95).iloc[0]
        hits += bool(row["ci_low"] > 0.5)
        widths.append(row["ci_high"] - row["ci_low"])
    power, se = _share(hits, studies)
    promised = float(found.power or 0.8)
    promised_se = float(np.sqrt(promised * (1 - promised) / plan_studies))
    name = "ab (100 contexts x 3, pool 20)"
    widths_mean = float(np.mean(widths))
    return Check(name, found.detectable, promised, promised_se, power, se, found.width, widths_mean)


# --- the others: the planner's simulation at an independent seed --------------------------------


def _again(
    name: str,
    design: planner.SSADesign | planner.ChatDesign | planner.BTDesign,
    simulate: Callable[..., planner.Plan],
    studies: int,
    seed: int,
    plan_studies: int,
) -> Check:
    found = planner.design_found(design, studies=plan_studies)
    plan = simulate(design, found.detectable, studies=studies, seed=seed)
    return Check(
        name,
        found.detectable,
        0.8,
        0.0,
        plan.power,
        plan.power_se or float(np.sqrt(0.25 / studies) / np.sqrt(studies)),
        found.width,
        plan.mean_width,
    )


def kappa_line(studies: int, seed: int, plan_studies: int) -> tuple[str, bool]:
    design = planner.KappaDesign(dialogues=150, n_boot=300)
    promised = planner.design_found(design, studies=plan_studies)
    achieved = planner.kappa_plan(design, studies=studies, seed=seed)
    error = Z * achieved.width_se
    ok = abs(achieved.mean_width - promised.width) <= 0.1 * promised.width + error
    text = (
        f"kappa (150 dialogues, 5 raters): promised width {promised.width:.3f}, achieved "
        f"{achieved.mean_width:.3f} ± {error:.3f}{'' if ok else '  << OUTSIDE'}"
    )
    return text, ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=100, help="Simulated studies per check.")
    parser.add_argument("--plan-studies", type=int, default=200, help="The planner's (200).")
    parser.add_argument("--seed", type=int, default=12345, help="Seed of the checks (12345).")
    args = parser.parse_args()
    started = time.perf_counter()
    rng = np.random.default_rng(args.seed)
    n, seed, plans = args.studies, args.seed, args.plan_studies
    checks = [
        likert_check(n, rng, plans),
        ab_check(n, rng, plans),
        _again(
            "ssa (200 responses x 5, pool 20)",
            planner.SSADesign(),
            planner.ssa_plan,
            n,
            seed,
            plans,
        ),
        _again(
            "ssa_interactive (100 chats)",
            planner.ChatDesign(n_boot=300),
            planner.chat_plan,
            n,
            seed,
            plans,
        ),
        _again("bt (4 models x 50 items)", planner.BTDesign(), planner.bt_plan, n, seed, plans),
    ]
    print(ROW.format("plan", "found", "promise", "achieved (95% MC)", "width", "achieved", ""))
    for c in checks:
        achieved = f"{c.achieved:.1%} ± {Z * c.achieved_se:.1%}"
        mark = "" if c.ok else "<< OUTSIDE"
        print(
            ROW.format(
                c.name,
                f"{c.difference:.3f}",
                f"{c.promised:.0%}",
                achieved,
                f"{c.width_promised:.3f}",
                f"{c.width_achieved:.3f}",
                mark,
            )
        )
    text, kappa_ok = kappa_line(n, seed, plans)
    print(text)
    paper, holm = paper_false_positives(n, rng)
    print(
        f"false positives per comparison, no difference (ED: 100 items per model, 3 aspects, "
        f"pool of 10): paper 2-SEM highlight {paper:.1%}, Holm {holm:.1%} "
        f"(± {Z * np.sqrt(max(paper, 0.01) / (3 * n)):.1%})"
    )
    print(f"{n} studies per check, {time.perf_counter() - started:.0f} s")
    return 0 if all(c.ok for c in checks) and kappa_ok else 1


if __name__ == "__main__":
    sys.exit(main())
