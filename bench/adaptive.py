"""Adaptive vs uniform pair allocation on simulated A/B crowds with known strengths.

Every crowd is a campaign of all pairs of the models, ``--items`` items per pair judged at
most ``--redundancy`` times (``evalstats.adaptive.Crowd``: ties and item effects as the
planner's Bradley–Terry design). Both allocations draw from the same simulated judgments
(each pair's stream, in the order allocation hands items out), so the comparison is paired.
Uniform takes the pairs in turn; adaptive draws each judgment's pair from
``adaptive.pair_weights`` refreshed every ``adaptive.refresh_interval`` judgments: the
functions the campaign's allocation runs (``annotation.steering``).

Order accuracy is the share of model pairs that Bradley–Terry point estimates
(``adaptive.fit``: Hunter's MM with 0.5 virtual wins each way per pair that met) order as the
true strengths do (the share of correctly ordered pairs, not a rank correlation; Kendall's
tau is 2 x it - 1), averaged over the crowds at each budget. For each target accuracy the
script prints the judgments each allocation needed to reach it and the saving, with its
spread (median and 10–90% range of the saving over ``--boot`` resamples of the crowds); at
those two budgets, the mean width of the report's 95% intervals of the strengths
(``ranking.bradley_terry`` with its defaults) and of the win rates, so the price in interval
width is visible, and the share of true strengths those Bradley–Terry intervals cover over
all crowds (adaptive allocation chooses pairs from the data; the intervals treat the numbers
per pair as fixed). Then the win rates' bias (``adaptive_rates``: raw shares against the
corrected, model-based ones from each pair's first ``--floor`` judgments) at one budget under
both allocations, and the stopping rule (``adaptive.stop_at``): the judgments to stop and
the order accuracy at stop, per crowd, with the paired saving's median and 10–90% range.

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

from evalstats import adaptive, adaptive_rates, ranking  # noqa: E402

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
    print("order accuracy (share of correctly ordered pairs), mean over the crowds:")
    print("budget  " + "  ".join(f"{b:>6}" for b in budgets[:: max(1, len(budgets) // 12)]))
    for allocation in ALLOCATIONS:
        shown = mean[allocation][:: max(1, len(budgets) // 12)]
        print(f"{allocation:<8}" + "  ".join(f"{v:6.3f}" for v in shown))
    closest, truth = _closest(strengths), _truth(crowd)
    savings = [_target(args, runs, mean, budgets, closest, truth, t) for t in args.targets]
    _spread(args, accuracy, budgets)
    at = _needed(mean["adaptive"], budgets, args.targets[0]) or budgets[len(budgets) // 2]
    _rates(runs, crowd, at if args.rates_budget is None else args.rates_budget, args.floor)
    _stopping(args, crowd)
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
    print(
        f"accuracy {target:.3f} (Kendall's tau {2 * target - 1:.3f}): uniform {u} judgments, "
        f"adaptive {a} (saving {saving:.1%})"
    )
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


def _spread(args: argparse.Namespace, accuracy: dict[str, np.ndarray], budgets: list[int]) -> None:
    """Print each target's saving over ``--boot`` resamples of the crowds: median and 10–90%
    range (how much the headline moves with the crowds drawn), and how often it was reached."""
    rng = np.random.default_rng([args.seed, 99])
    crowds = len(accuracy["uniform"])
    for target in args.targets:
        savings = []
        for _ in range(args.boot):
            pick = rng.integers(crowds, size=crowds)
            u = _needed(accuracy["uniform"][pick].mean(axis=0), budgets, target)
            a = _needed(accuracy["adaptive"][pick].mean(axis=0), budgets, target)
            if u is not None and a is not None:
                savings.append(1 - a / u)
        if not savings:
            print(f"  saving at {target:.3f}: not reached in the resamples")
            continue
        low, mid, high = np.percentile(savings, [10, 50, 90])
        print(
            f"  saving at accuracy {target:.3f} over {args.boot} resamples of the crowds: "
            f"median {mid:.1%}, 10–90% {low:.1%} to {high:.1%} "
            f"(reached in {len(savings) / args.boot:.0%})"
        )


def _rate_truth(crowd: adaptive.Crowd) -> tuple[np.ndarray, np.ndarray]:
    """Return the true decisive share of i over j (k x k) and each model's true uniform-
    allocation pooled rate ("both" half, "neither" out): the mean over its opponents."""
    s = np.asarray(crowd.strengths, dtype=float)
    nodes, weights = np.polynomial.hermite_e.hermegauss(40)
    won = expit(s[:, None, None] - s[None, :, None] + crowd.sd_item * nodes) @ weights
    won /= weights.sum()
    decided = 1.0 - crowd.neither
    share = (crowd.both / 2 + (decided - crowd.both) * won) / decided
    np.fill_diagonal(share, np.nan)
    return won, np.nanmean(share, axis=1)


def _rates(runs: dict[str, list[adaptive.Run]], crowd: adaptive.Crowd, budget: int, floor: int):
    """Print the win rates' bias toward the winner at ``budget``, raw and corrected
    (``adaptive_rates``; adaptive uses each pair's first ``floor`` judgments), per pair and
    per model, with the RMSE and the Monte-Carlo standard error of the adjacent pairs'."""
    won, pooled = _rate_truth(crowd)
    k = crowd.models
    pairs = [(i, j) for i in range(k) for j in range(i + 1, k)]
    adjacent = np.array([j == i + 1 for i, j in pairs])
    print(f"  win rates at {budget} judgments, bias toward the better model (mean over crowds):")
    for allocation in ALLOCATIONS:
        first = floor if allocation == "adaptive" else None
        bias: dict[str, list[np.ndarray]] = {n: [] for n in ("raw", "cor", "mraw", "mcor")}
        for run in runs[allocation]:
            data = _frame(*run.arrays(budget))
            rates = adaptive_rates.pair_rates(data, first=first).set_index(["model_a", "model_b"])
            at = [(f"m{i}", f"m{j}") for i, j in pairs]
            truth = np.array([won[i, j] for i, j in pairs])  # m_i is the weaker model
            bias["raw"].append(truth - rates.loc[at, "win_rate"].to_numpy(float))
            bias["cor"].append(truth - rates.loc[at, "corrected"].to_numpy(float))
            models = adaptive_rates.model_rates(data, first=first).set_index("model")
            names = [f"m{i}" for i in range(k)]
            bias["mraw"].append(models.loc[names, "win_rate"].to_numpy(float) - pooled)
            bias["mcor"].append(models.loc[names, "corrected"].to_numpy(float) - pooled)
        for kind, label in (("raw", "raw share"), ("cor", "corrected")):
            b = np.array(bias[kind])
            near = b[:, adjacent].mean(axis=1)
            m = np.array(bias["m" + kind])
            print(
                f"    {allocation:<8} {label:<10} pairs: adjacent {near.mean():+.4f} "
                f"(MC se {near.std(ddof=1) / np.sqrt(len(near)):.4f}), all pairs "
                f"{b.mean(axis=0).min():+.4f} to {b.mean(axis=0).max():+.4f}, RMSE "
                f"{np.sqrt(np.nanmean(b**2)):.3f}; models' pooled rate: largest |bias| "
                f"{np.abs(m.mean(axis=0)).max():.4f}, RMSE {np.sqrt(np.nanmean(m**2)):.3f}"
            )


def _stopping(args: argparse.Namespace, crowd: adaptive.Crowd) -> None:
    """Print, per allocation, the judgments to stop by ``adaptive.stop_at`` (the rule, or a
    budget of ``--stop-per-pair`` judgments per pair) and the order accuracy at stop over
    ``--stop-crowds`` crowds (the first ones, drawn again to that budget); then the paired
    per-crowd saving."""
    k = crowd.models
    budget = min(args.stop_per_pair, crowd.items_per_pair * crowd.redundancy) * k * (k - 1) // 2
    stops: dict[str, np.ndarray] = {}
    print(
        f"  stopping rule: every adjacent pair's P(wrong order) < {args.settle:g}, or "
        f"{budget} judgments; {args.stop_crowds} crowds"
    )
    for allocation in ALLOCATIONS:
        n, right, by_rule = [], [], []
        for c in range(args.stop_crowds):
            streams = adaptive.crowd_streams(crowd, np.random.default_rng([args.seed, c]))
            run = adaptive.simulate(
                crowd,
                streams,
                allocation=allocation,
                budget=budget,
                floor=args.floor,
                rng=np.random.default_rng([args.seed, c, 1]),
            )
            at = adaptive.stop_at(run, k, threshold=args.settle)
            a, b, _, score = run.arrays(at)
            n.append(at)
            right.append(adaptive.order_accuracy(crowd.strengths, adaptive.fit(a, b, score, k)))
            by_rule.append(at < len(run.a))
        stops[allocation] = np.array(n, dtype=float)
        low, mid, high = np.percentile(n, [10, 50, 90])
        acc = np.array(right)
        print(
            f"    {allocation:<8} stopped by the rule in {np.mean(by_rule):.0%} of crowds; "
            f"judgments median {mid:.0f} (10–90% {low:.0f}–{high:.0f}); order accuracy at "
            f"stop {acc.mean():.3f} (Kendall's tau {2 * acc.mean() - 1:.3f}), whole ranking "
            f"right {np.mean(acc == 1):.0%}"
        )
    saving = 1 - stops["adaptive"] / stops["uniform"]
    low, mid, high = np.percentile(saving, [10, 50, 90])
    print(f"    saving per crowd (paired): median {mid:.1%}, 10–90% {low:.1%} to {high:.1%}")


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
    parser.add_argument(
        "--boot", type=int, default=500, help="resamples of the crowds for the saving's spread"
    )
    parser.add_argument(
        "--rates-budget",
        type=int,
        default=None,
        help="budget at which the win rates' bias is measured (default: where adaptive "
        "reaches the first target)",
    )
    parser.add_argument(
        "--settle",
        type=float,
        default=adaptive.SETTLED,
        help="stopping rule: every adjacent pair's P(wrong order) below this",
    )
    parser.add_argument(
        "--stop-per-pair", type=int, default=300, help="stopping rule's budget, per pair"
    )
    parser.add_argument(
        "--stop-crowds", type=int, default=30, help="crowds the stopping rule is measured on"
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
