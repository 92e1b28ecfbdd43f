"""Adaptive vs uniform pair allocation on simulated A/B crowds with known strengths.

Every crowd is a campaign of all pairs of the models, ``--items`` items per pair judged at
most ``--redundancy`` times (``evalstats.adaptive.Crowd``: ties and item effects as the
planner's Bradley–Terry design). Both allocations draw from the same simulated judgments
(each pair's stream, in the order allocation hands items out), so the comparison is paired.
Uniform takes the pairs in turn; adaptive draws each judgment's pair from
``adaptive.pair_weights`` refreshed every ``adaptive.refresh_interval`` judgments: the
functions the campaign's allocation runs (``annotation.steering``).

Ranking accuracy is the share of model pairs that Bradley–Terry point estimates
(``adaptive.fit``: Hunter's MM with 0.5 virtual wins each way per pair that met) order as the
true strengths do, averaged over the crowds at each budget. For each target accuracy the
script prints the judgments each allocation needed to reach it and the saving; then, at
those two budgets, the mean width of the report's 95% intervals of the strengths
(``ranking.bradley_terry`` with its defaults) and of the win rates, so the price in interval
width is visible, and the share of true strengths those Bradley–Terry intervals cover over
all crowds (adaptive allocation chooses pairs from the data; the intervals treat the numbers
per pair as fixed).

    .venv/bin/python bench/adaptive.py                 # 8 models, then 4
    .venv/bin/python bench/adaptive.py --crowds 200 --seed 3
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import expit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
os.environ.setdefault("EVALSITE_TASKS_INLINE", "1")

from evalstats import adaptive, ranking  # noqa: E402

ALLOCATIONS = ("uniform", "adaptive")


def _frame(a: np.ndarray, b: np.ndarray, item: np.ndarray, score: np.ndarray) -> pd.DataFrame:
    """Return the judgments as the report's outcomes (every judgment its own worker)."""
    outcome = np.where(
        np.isnan(score), "neither", np.where(score == 0.5, "both", np.where(score == 1, "a", "b"))
    )
    return pd.DataFrame(
        {
            "item": item,
            "rater": np.arange(len(a)),
            "a": [f"m{i}" for i in a],
            "b": [f"m{j}" for j in b],
            "outcome": outcome,
        }
    )


def _needed(curve: np.ndarray, budgets: list[int], target: float) -> int | None:
    """Return the first budget whose mean accuracy reaches ``target`` and stays there."""
    reached = curve >= target
    for at in range(len(budgets)):
        if reached[at:].all():
            return budgets[at]
    return None


def scenario(args: argparse.Namespace, strengths: tuple[float, ...], label: str) -> float | None:
    """Run one set of crowds; print accuracies, savings and widths; return the main saving."""
    crowd = adaptive.Crowd(
        strengths=strengths,
        items_per_pair=args.items,
        redundancy=args.redundancy,
        sd_item=args.sd_item,
    )
    k = crowd.models
    pairs = k * (k - 1) // 2
    top = min(args.max_per_pair * pairs, args.items * args.redundancy * pairs)
    budgets = list(range(args.step, top + 1, args.step))
    accuracy = {a: np.zeros((args.crowds, len(budgets))) for a in ALLOCATIONS}
    runs: dict[str, list[adaptive.Run]] = {a: [] for a in ALLOCATIONS}
    started = time.perf_counter()
    for c in range(args.crowds):
        streams = adaptive.crowd_streams(crowd, np.random.default_rng([args.seed, c]))
        for allocation in ALLOCATIONS:
            run = adaptive.simulate(
                crowd,
                streams,
                allocation=allocation,
                budget=top,
                floor=args.floor,
                rng=np.random.default_rng([args.seed, c, 1]),
            )
            runs[allocation].append(run)
            for at, budget in enumerate(budgets):
                a, b, _, score = run.arrays(budget)
                fitted = adaptive.fit(a, b, score, k)
                accuracy[allocation][c, at] = adaptive.order_accuracy(strengths, fitted)
    mean = {a: accuracy[a].mean(axis=0) for a in ALLOCATIONS}
    print(
        f"\n== {label}: {k} models, strengths {', '.join(f'{s:g}' for s in strengths)}; "
        f"{args.items} items per pair x {args.redundancy}; {args.crowds} crowds, seed "
        f"{args.seed}, floor {args.floor} per pair ({time.perf_counter() - started:.0f} s)"
    )
    print("budget  " + "  ".join(f"{b:>6}" for b in budgets[:: max(1, len(budgets) // 12)]))
    for allocation in ALLOCATIONS:
        shown = mean[allocation][:: max(1, len(budgets) // 12)]
        print(f"{allocation:<8}" + "  ".join(f"{v:6.3f}" for v in shown))
    closest, truth = _closest(strengths), _truth(crowd)
    savings = [_target(args, runs, mean, budgets, closest, truth, t) for t in args.targets]
    return savings[0]


def _target(
    args: argparse.Namespace,
    runs: dict[str, list[adaptive.Run]],
    mean: dict[str, np.ndarray],
    budgets: list[int],
    closest: set[tuple[str, str]],
    truth: np.ndarray,
    target: float,
) -> float | None:
    """Print the judgments each allocation needed for mean accuracy ``target``, the saving,
    the interval widths and coverage there; return the saving (None: not reached)."""
    pairs = len(truth) * (len(truth) - 1) // 2
    top = min(args.max_per_pair * pairs, args.items * args.redundancy * pairs)
    u = _needed(mean["uniform"], budgets, target)
    a = _needed(mean["adaptive"], budgets, target)
    if u is None or a is None:
        print(f"accuracy {target:.3f}: uniform {u}, adaptive {a}: not reached within {top}")
        return None
    saving = 1 - a / u
    print(f"accuracy {target:.3f}: uniform {u} judgments, adaptive {a} (saving {saving:.1%})")
    bt_u, wr_u, hard_u = _widths(runs["uniform"], u, closest, args)
    bt_a, wr_a, hard_a = _widths(runs["adaptive"], a, closest, args)
    print(
        f"  mean 95% CI widths there, uniform/adaptive: BT strengths {bt_u:.3f}/{bt_a:.3f}; "
        f"win rates, all pairs {wr_u:.3f}/{wr_a:.3f}, closest pairs {hard_u:.3f}/{hard_a:.3f}"
    )
    cover_u, cover_a = _coverage(runs["uniform"], u, truth), _coverage(runs["adaptive"], a, truth)
    print(
        f"  coverage of the true strengths by BT's 95% CIs there, uniform/adaptive: "
        f"{cover_u:.1%}/{cover_a:.1%} ({len(runs['uniform'])} crowds x {len(truth)} models)"
    )
    both = next(
        (
            n
            for n in range(a, top + 1, args.step)
            if _widths(runs["adaptive"], n, closest, args, hard_only=True)[2] <= hard_u
        ),
        None,
    )
    if both is None:
        print(f"  adaptive never reaches uniform's closest-pair width within {top}")
    else:
        print(
            f"  adaptive reaches this accuracy and uniform's closest-pair win-rate width "
            f"({hard_u:.3f}) at {both} judgments (saving {1 - both / u:.1%})"
        )
    return saving


def _truth(crowd: adaptive.Crowd) -> np.ndarray:
    """Return the strengths (mean 0) Bradley–Terry converges to in ``crowd``: the fit to the
    expected scores of the decided judgments, "both" (half each way) at its share and the
    item shift N(0, sd_item) averaged out by Gauss–Hermite quadrature, every pair equally
    often. Ties and item shifts make the model only nearly Bradley–Terry, so the limit
    depends a little on how often each pair is judged: at most 0.008 between equal numbers
    and numbers falling as exp(-5 x the true gap), against intervals about 0.3 wide."""
    s = np.asarray(crowd.strengths, dtype=float)
    nodes, weights = np.polynomial.hermite_e.hermegauss(40)
    won = expit(s[:, None, None] - s[None, :, None] + crowd.sd_item * nodes) @ weights
    decided = 1.0 - crowd.neither
    expected = (crowd.both / 2 + (decided - crowd.both) * won / weights.sum()) / decided
    np.fill_diagonal(expected, 0.0)
    return ranking._fit(1e6 * expected)


def _coverage(runs: list[adaptive.Run], budget: int, truth: np.ndarray) -> float:
    """Return the share of true strengths inside the report's 95% intervals at ``budget``
    (``ranking.bradley_terry`` with its defaults), over all crowds and models."""
    models = [f"m{i}" for i in range(len(truth))]
    hits = 0
    for run in runs:
        table = ranking.bradley_terry(_frame(*run.arrays(budget))).set_index("model").loc[models]
        hits += int(((table["ci_low"] <= truth) & (truth <= table["ci_high"])).sum())
    return hits / (len(runs) * len(truth))


def _closest(strengths: tuple[float, ...]) -> set[tuple[str, str]]:
    """Return the model pairs with the smallest true gap (the hardest to order)."""
    s = np.asarray(strengths)
    gap = {
        (f"m{i}", f"m{j}"): abs(s[i] - s[j]) for i in range(len(s)) for j in range(i + 1, len(s))
    }
    return {p for p, g in gap.items() if g <= min(gap.values()) + 1e-9}


def _widths(
    runs: list[adaptive.Run],
    budget: int,
    closest: set[tuple[str, str]],
    args: argparse.Namespace,
    *,
    hard_only: bool = False,
) -> tuple[float, float, float]:
    """Return the mean widths of the report's 95% intervals over ``--width-crowds`` crowds:
    BT strengths, win rates of all pairs, win rates of the ``closest`` pairs (only that
    one, NaN for the others, with ``hard_only``)."""
    bt, wr, hard = [], [], []
    for run in runs[: args.width_crowds]:
        data = _frame(*run.arrays(budget))
        near = pd.Series(list(zip(data["a"], data["b"], strict=True))).isin(closest).to_numpy()
        rates = ranking.win_rates(data[near])
        hard.append(float((rates["ci_high"] - rates["ci_low"]).mean()))
        if hard_only:
            continue
        table = ranking.bradley_terry(data)  # the report's intervals, its defaults
        bt.append(float((table["ci_high"] - table["ci_low"]).mean()))
        rates = ranking.win_rates(data)
        wr.append(float((rates["ci_high"] - rates["ci_low"]).mean()))
    nan = float("nan")
    return (
        float(np.mean(bt)) if bt else nan,
        float(np.mean(wr)) if wr else nan,
        float(np.mean(hard)),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--crowds", type=int, default=100, help="simulated crowds per case")
    parser.add_argument("--seed", type=int, default=0, help="random seed of the crowds")
    parser.add_argument("--items", type=int, default=100, help="items per model pair")
    parser.add_argument("--redundancy", type=int, default=3, help="judgments per item at most")
    parser.add_argument("--sd-item", type=float, default=0.3, help="items' logit spread")
    parser.add_argument(
        "--floor", type=int, default=10, help="adaptive_min_per_pair: judgments every pair gets"
    )
    parser.add_argument("--step", type=int, default=50, help="budget grid step (judgments)")
    parser.add_argument(
        "--max-per-pair", type=int, default=120, help="largest budget, in judgments per pair"
    )
    parser.add_argument(
        "--targets",
        type=float,
        nargs="+",
        default=[0.97, 0.95, 0.98],
        help="mean ranking accuracies to reach (the first is the headline saving)",
    )
    parser.add_argument(
        "--width-crowds", type=int, default=30, help="crowds whose interval widths are measured"
    )
    args = parser.parse_args()
    if args.crowds < 1 or args.step < 1 or args.items < 2 or args.redundancy < 1:
        parser.error("need --crowds >= 1, --step >= 1, --items >= 2 and --redundancy >= 1")
    if not all(0 < t <= 1 for t in args.targets):
        parser.error("targets are accuracies in (0, 1]")
    eight = tuple(round(0.2 * i, 1) for i in range(8))
    main_saving = scenario(args, eight, "8 models, evenly spaced (0.2 apart)")
    scenario(args, (0.0, 0.3, 0.6, 0.9), "4 models, evenly spaced (0.3 apart)")
    if main_saving is not None:
        verdict = "met" if main_saving >= 0.30 else "NOT met"
        print(
            f"\n8 models: adaptive allocation needs {main_saving:.1%} fewer judgments for mean "
            f"ranking accuracy {args.targets[0]:g} (target >= 30%: {verdict})"
        )


if __name__ == "__main__":
    main()
