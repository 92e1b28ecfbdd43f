"""Coverage of the reports' 95% intervals in simulated crowd studies with known truth.

Run from the repository root: ``.venv/bin/python bench/coverage.py [--studies N] [--seed S]
[--only TEXT] [--jobs J]``.
For every statistic and design of issue #19 it simulates ``--studies`` studies, computes the
report's default interval (evalstats.uncertainty, evalstats.ranking) and, where the report
used to give another one, that older interval ("naive"), and prints the share of studies whose
interval covers the true value, with its Monte-Carlo standard error. Target: every default
interval covers 93-97%; a default interval outside that band is marked, and the exit status
is 1 when an exact binomial test says it is outside beyond Monte-Carlo error. The true values
are computed from the generating model (exactly by Gauss-Hermite quadrature, or from one very
large simulated study for Fleiss' kappa). Issue #33's worker pools (kappa, alpha, % agreement,
interactive SSA) are ``coverage_raters``'s designs, whose docstring states their truths. The
default 100 studies take about 5 minutes of CPU; 1000 ten times (``--jobs 2`` halves the wall
time on two cores). Each design draws its random numbers from the seed and its own name, so it
prints the same numbers alone (``--only``), in parallel or in the whole suite.
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import time
import warnings
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from functools import cache, partial
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats
from scipy.special import expit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import coverage_contrasts  # noqa: E402
import coverage_raters  # noqa: E402
import coverage_ssa  # noqa: E402
import coverage_taste  # noqa: E402
import coverage_ties  # noqa: E402
from coverage_ssa import _pool, ssa_chat_studies, ssa_static_studies  # noqa: E402

from evalstats import agreement, cluster_bootstrap, options, ranking, style, uncertainty  # noqa: E402

Z = 1.959963984540054
ROW = "{:<24} {:<37} {:<17} {:>8} {:>7} {:>6}{}"
# Target bands other than 93-97%: a one-sided decision's "coverage" is 1 - its false-positive
# rate, at least 97.5% (coverage_taste: a model equal to the reference called better).
BANDS = {"not falsely better": (0.975, 1.0)}
Result = tuple[str, str, float, float, float]  # statistic, method, truth, low, high


@dataclass
class Tally:
    """Covered / total per method for one statistic and design."""

    hits: dict[str, int] = field(default_factory=dict)
    total: dict[str, int] = field(default_factory=dict)
    width: dict[str, list[float]] = field(default_factory=dict)

    def add(self, method: str, truth: float, low: float, high: float) -> None:
        self.hits[method] = self.hits.get(method, 0) + int(low <= truth <= high)
        self.total[method] = self.total.get(method, 0) + 1
        self.width.setdefault(method, []).append(high - low)


# --- Likert ----------------------------------------------------------------------------------


def _clipped_mean(mu: float, sd: float) -> float:
    """E[clip(round(X), 1, 5)] for X ~ N(mu, sd)."""
    cuts = np.arange(1.5, 5.0, 1.0)
    above = stats.norm.sf(cuts, mu, sd)
    return 1.0 + float(above.sum())


def likert_studies(
    rng: np.random.Generator, n: int, *, k: int, pool: int | None, sd_rater: float
) -> Iterator[Result]:
    """Yield (statistic, method, truth, low, high) for a model's mean and its difference."""
    sd_item, sd_noise, n_items = 0.6, 0.8, 100
    mus = {"model": 3.3, "reference": 3.1}
    total_sd = float(np.sqrt(sd_item**2 + sd_rater**2 + sd_noise**2))
    truth = {m: _clipped_mean(mu, total_sd) for m, mu in mus.items()}
    for _ in range(n):
        frames, lenient = [], rng.normal(0, sd_rater, (pool or 1) if pool else 0)
        for model, mu in mus.items():
            raters = _pool(rng, n_items, k, pool)
            b = lenient[raters] if pool else rng.normal(0, sd_rater, raters.shape)
            a = rng.normal(0, sd_item, (n_items, 1))
            x = np.clip(np.rint(mu + a + b + rng.normal(0, sd_noise, raters.shape)), 1, 5)
            frames.append(
                pd.DataFrame(
                    {
                        "item": np.repeat([f"{model}{i}" for i in range(n_items)], k),
                        "rater": raters.ravel(),
                        "value": x.ravel(),
                        "model": model,
                    }
                )
            )
        data = pd.concat(frames, ignore_index=True)
        items = data.groupby("item").agg(
            score=("value", "mean"), n=("value", "size"), model=("model", "first")
        )
        by = {m: items[items["model"] == m] for m in mus}
        effects = uncertainty.rater_effects(data, group="model")
        slopes = uncertainty.mean_slopes(data)
        est = uncertainty.crossed_mean(
            by["model"]["score"], slopes, effects, weights=by["model"]["n"]
        )
        yield "Likert mean", "crossed", truth["model"], est.low, est.high
        x = data.loc[data["model"] == "model", "value"]
        sem = x.std() / np.sqrt(len(x))
        yield (
            "Likert mean",
            "naive ±1.96 SEM",
            truth["model"],
            x.mean() - Z * sem,
            x.mean() + Z * sem,
        )
        diff = uncertainty.crossed_contrast(
            by["model"]["score"],
            by["reference"]["score"],
            slopes,
            effects,
            weights_a=by["model"]["n"],
            weights_b=by["reference"]["n"],
        )
        true_diff = truth["model"] - truth["reference"]
        yield "Likert difference", "crossed", true_diff, diff.low, diff.high
        y = data.loc[data["model"] == "reference", "value"]
        se = np.sqrt(x.var() / len(x) + y.var() / len(y))
        d = x.mean() - y.mean()
        yield "Likert difference", "naive ±1.96 SE", true_diff, d - Z * se, d + Z * se


# --- EmotionLines ----------------------------------------------------------------------------

_BASE = np.array([0.45, 0.15, 0.08, 0.05, 0.1, 0.12, 0.05])


def _emotion_votes(rng: np.random.Generator, dialogues: int) -> tuple[np.ndarray, np.ndarray]:
    lengths = rng.integers(5, 25, dialogues)
    dialogue = np.repeat(np.arange(dialogues), lengths)
    mood = rng.dirichlet(_BASE * 3.0, dialogues)
    accuracy = rng.beta(6, 4, dialogues)
    cum = np.cumsum(mood[dialogue], axis=1)
    truth = (rng.random((len(dialogue), 1)) > cum).sum(axis=1).clip(0, 6)
    right = rng.random((len(dialogue), 5)) < accuracy[dialogue][:, None]
    noise = rng.integers(0, 7, (len(dialogue), 5))
    votes = np.where(right, truth[:, None], noise)
    table = np.zeros((len(dialogue), 7))
    for r in range(5):
        np.add.at(table, (np.arange(len(dialogue)), votes[:, r]), 1)
    return table, dialogue


@cache
def _kappa_truth() -> float:
    """Fleiss' kappa has no closed form here: its truth is that of one very large study."""
    table, _ = _emotion_votes(np.random.default_rng(12345), 40_000)
    return agreement.fleiss_kappa(table)


def emotion_studies(rng: np.random.Generator, n: int, *, dialogues: int) -> Iterator[Result]:
    truth = _kappa_truth()
    for _ in range(n):
        table, dialogue = _emotion_votes(rng, dialogues)
        est = cluster_bootstrap.fleiss_kappa_cluster_ci(table, dialogue, n_boot=500, seed=None)
        yield "EmotionLines kappa", "dialogues", truth, est.low, est.high
        old = agreement.fleiss_kappa_ci(table, n_boot=500, seed=None)
        yield "EmotionLines kappa", "naive utterances", truth, old.low, old.high


# --- A/B and Bradley–Terry -------------------------------------------------------------------


def _bt_marginal(strengths: tuple[float, ...], sd: float) -> np.ndarray:
    """The log-strengths (mean 0) a fit converges to when each judgment's logit is shifted by
    N(0, sd), an item's context or a worker's taste: Bradley–Terry of the averaged wins."""
    s = np.array(strengths)
    if not sd:
        return s - s.mean()
    shift = np.random.default_rng(99).normal(0.0, sd, 200_000)
    expected = 1e6 * expit(s[:, None, None] - s[None, :, None] + shift).mean(axis=2)
    np.fill_diagonal(expected, 0.0)
    return ranking._fit(expected)


def bt_studies(
    rng: np.random.Generator,
    n: int,
    *,
    strengths: dict[str, float],
    per_pair: int,
    per_item: int = 1,
    sd_item: float = 0.0,
    raters: int = 0,
    sd_rater: float = 0.0,
) -> Iterator[Result]:
    """Every pair on ``per_pair`` judgments, ``per_item`` per item (context N(0, sd_item) on
    the logit); with ``raters``, each judgment by one of a pool whose taste for each model is
    N(0, sd_rater), else by a fresh worker. The truth is the marginal strengths."""
    models = list(strengths)
    s = np.array([strengths[m] for m in models])
    true = _bt_marginal(tuple(s), float(np.hypot(sd_item, sd_rater * np.sqrt(2))))
    pairs = [(i, j) for i in range(len(models)) for j in range(i + 1, len(models))]
    for _ in range(n):
        taste = rng.normal(0.0, sd_rater, (max(raters, 1), len(models)))
        rows = []
        for i, j in pairs:
            for item in range(per_pair // per_item):
                context = rng.normal(0.0, sd_item) if sd_item else 0.0
                for _ in range(per_item):
                    r = int(rng.integers(raters)) if raters else len(rows)
                    t = taste[r % len(taste)]
                    won = rng.random() < expit(s[i] - s[j] + context + t[i] - t[j])
                    rows.append((f"{i}-{j}-{item}", r, models[i], models[j], "a" if won else "b"))
        data = pd.DataFrame(rows, columns=["item", "rater", "a", "b", "outcome"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            table = ranking.bradley_terry(data)
        table = table.set_index("model")
        for m, t in zip(models, true, strict=True):
            yield (
                "BT strength",
                "Firth Wald x deff",
                t,
                table.loc[m, "ci_low"],
                table.loc[m, "ci_high"],
            )
        if per_item > 1 or raters:
            continue  # the win rate below is checked on the simple designs
        first = data[(data["a"] == models[0]) & (data["b"] == models[1])]
        win = pd.Series((first["outcome"] == "a").astype(float).to_numpy(), index=first["item"])
        votes = first.assign(value=win.to_numpy())
        est = uncertainty.crossed_mean(
            win, uncertainty.mean_slopes(votes), uncertainty.rater_effects(votes), proportion=True
        )
        yield "A/B win rate", "crossed", float(expit(s[0] - s[1])), est.low, est.high


# --- arena (style control) ------------------------------------------------------------------

ARENA = style.ArenaDesign(
    strengths=(0.8, 0.5, 0.3, 0.1, 0.0, -0.2, -0.6, -0.9),
    log_length=(-0.4, 0.5, 0.0, 0.6, -0.3, 0.2, 0.9, -0.5),
    sd_conversation=0.5,
    workers=40,
    sd_taste=0.3,
)


def arena_studies(rng: np.random.Generator, n: int, *, gamma: float) -> Iterator[Result]:
    """8 models, 600 conversations of 1-4 votes by 40 workers (``style.ArenaDesign``). A
    neutral crowd (gamma 0): plain Bradley–Terry, conversations as items; the truth is the
    marginal strengths (``_bt_marginal``). A length-biased one: style control, whose marginal
    truth has no closed form and comes from one very large simulated arena with expected
    outcomes (``style.arena_marginal``); plain BT's intervals of it are the naive ones."""
    design = replace(ARENA, gamma=gamma)
    sd = float(np.hypot(design.sd_conversation, design.sd_taste * np.sqrt(2)))
    true, coefficient = _arena_truth(design) if gamma else (_bt_marginal(ARENA.strengths, sd), 0)
    models = [f"m{i}" for i in range(len(true))]
    fit = partial(style.bradley_terry_style, features=("chars",))
    for _ in range(n):
        data = style.arena_simulate(design, rng, conversations=600)
        fits = {"Firth Wald x deff": ranking.bradley_terry(data)}
        if gamma:
            styled = fit(data)
            fits = {"style Wald x deff": styled.table, "naive plain BT": fits["Firth Wald x deff"]}
            row = styled.coefficients.iloc[0]
            truth = coefficient * row["scale"]
            yield "Arena γ chars", "style Wald x deff", truth, row["ci_low"], row["ci_high"]
        with options.report_options_set(method="independent"):
            fits["naive independent"] = fit(data).table if gamma else ranking.bradley_terry(data)
        for method, table in fits.items():
            table = table.set_index("model").loc[models]
            for t, low, high in zip(true, table["ci_low"], table["ci_high"], strict=True):
                yield "Arena strength", method, t, low, high


_arena_truth = cache(style.arena_marginal)


# --- the suite -------------------------------------------------------------------------------


def suite() -> list[tuple[str, Callable[[np.random.Generator, int], Iterator[Result]]]]:
    """Return (design, run(rng, studies)) for every design of issues #19 and #33."""
    designs: list[tuple[str, Callable[[np.random.Generator, int], Iterator[Result]]]] = []
    for k in (1, 3):
        fresh = partial(likert_studies, k=k, pool=None, sd_rater=0.5)
        designs.append((f"Likert fresh raters, {k}/item", fresh))
        for sd in (0.5, 1.0):
            pooled = partial(likert_studies, k=k, pool=10, sd_rater=sd)
            designs.append((f"Likert pool 10, sd {sd}, {k}/item", pooled))
    for items in (100, 400):
        for pool in (None, 20):
            name = "fresh raters" if pool is None else "pool 20, sd 1.0"
            designs.append(
                (
                    f"SSA {name}, {items} resp.",
                    partial(ssa_static_studies, items=items, pool=pool, sd_rater=1.0),
                )
            )
    for sd in (0.5, 1.0):
        designs.append(
            (f"SSA chats 7-14 turns, worker sd {sd}", partial(ssa_chat_studies, sd_worker=sd))
        )
    designs += coverage_ssa.generic_bot_designs()
    designs.append(("EmotionLines 150 dialogues of 5-24", partial(emotion_studies, dialogues=150)))
    designs.append(
        (
            "BT equal, 4 models, 50/pair",
            partial(bt_studies, strengths=dict.fromkeys("ABCD", 0.0), per_pair=50),
        )
    )
    unequal = {"gold": 2.5, "B": 0.3, "C": 0.0, "D": -0.3}
    designs.append(
        ("BT unequal (gold +2.5), 50/pair", partial(bt_studies, strengths=unequal, per_pair=50))
    )
    # Gold responses against bots (issue #19's "very unequal" models): gold wins about 98%
    # of its judgments, so a bootstrap resample often has it (almost) never losing.
    gold = {"gold": 4.0, "B": 0.3, "C": 0.0, "D": -0.3}
    designs.append(
        ("BT very unequal (gold +4), 50/pair", partial(bt_studies, strengths=gold, per_pair=50))
    )
    clustered = partial(bt_studies, strengths=unequal, per_pair=50, per_item=5, sd_item=1.0)
    designs.append(("BT unequal, 5 judgments/item, item sd 1", clustered))
    tastes = partial(bt_studies, strengths=unequal, per_pair=60, raters=30, sd_rater=0.6)
    designs.append(("BT unequal, 30 workers, taste sd 0.6", tastes))
    designs.append(("Arena neutral, 8 models, 600 convs", partial(arena_studies, gamma=0.0)))
    designs.append(("Arena length-biased, 8 models", partial(arena_studies, gamma=1.0)))
    # Issue #33: worker pools, ties, contrasts, raters' taste per model.
    extra = (coverage_raters, coverage_ties, coverage_contrasts, coverage_taste)
    return designs + [d for module in extra for d in module.designs()]


def _design_rows(design: str, studies: int, seed: int) -> tuple[list[str], int]:
    """Return one design's printed rows and its failures (default intervals outside their band
    beyond Monte-Carlo error). Its random numbers come from (seed, the design's name) alone, so
    a design prints the same with ``--only``, ``--jobs`` or the whole suite."""
    run = dict(suite())[design]
    rng = np.random.default_rng([seed, zlib.crc32(design.encode())])
    tallies: dict[str, Tally] = {}
    for statistic, method, truth, low, high in run(rng, studies):
        tallies.setdefault(statistic, Tally()).add(method, truth, low, high)
    rows, failures = [], 0
    for statistic, tally in tallies.items():
        for method in tally.hits:
            cover = tally.hits[method] / tally.total[method]
            se = np.sqrt(cover * (1 - cover) / tally.total[method])
            default = not method.startswith("naive")
            low, high = BANDS.get(statistic, (0.93, 0.97))
            flag, beyond = "", False
            if default and not low <= cover <= high:
                # A failure only if an exact binomial test (2.5% each side) rejects the
                # target band: with few studies most excursions are Monte-Carlo noise.
                hits, total = tally.hits[method], tally.total[method]
                beyond = bool(
                    stats.binom.sf(hits - 1, total, high) < 0.025
                    or stats.binom.cdf(hits, total, low) < 0.025
                )
                flag = f"  <- outside {low:.1%}-{high:.1%}" + " (beyond MC error)" * beyond
                failures += beyond
            width = f"{np.nanmean(tally.width[method]):.3f}"
            rows.append(
                ROW.format(statistic, design, method, f"{cover:.1%}", f"{se:.1%}", width, flag)
            )
    return rows, failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--studies",
        type=int,
        default=100,
        help="simulated studies per design (default 100, about 5 minutes of CPU; 1000 for the "
        "issue's table, ten times that)",
    )
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument(
        "--only",
        default="",
        help="run only the designs whose name contains this text (e.g. Likert, SSA, BT)",
    )
    parser.add_argument(
        "--jobs", type=int, default=1, help="designs run in this many processes (default 1)"
    )
    args = parser.parse_args(argv)
    if args.studies < 1:
        parser.error("--studies must be at least 1")
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    started = time.perf_counter()
    print(ROW.format("statistic", "design", "method", "coverage", "± MC se", "width", ""))
    designs = [name for name, _ in suite() if args.only in name]
    work = partial(_design_rows, studies=args.studies, seed=args.seed)
    failures = 0
    with multiprocessing.get_context("fork").Pool(args.jobs) as pool:
        for rows, failed in pool.imap(work, designs):  # in the suite's order, as they finish
            print("\n".join(rows), flush=True)
            failures += failed
    seconds = time.perf_counter() - started
    print(f"{args.studies} studies per design, seed {args.seed}, {args.jobs} jobs, {seconds:.0f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
