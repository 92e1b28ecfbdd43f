"""Model-vs-model contrasts of the SSA reports (issue #33): coverage, and power vs the planner.

Run from the repository root: ``.venv/bin/python bench/coverage_contrasts.py [--studies N]``.
``designs()`` gives (name, studies function) pairs in bench/coverage.py's form (Result tuples
(statistic, method, truth, low, high)); every study is analysed by the report's own
``ssa_contrasts``. Static SSA: two models, 100 responses each, 5 workers per response from a
pool of 20 (leniency sd 1.0 on the logit of a vote, sensible and specific), the truth the
difference of the majority shares of the population (Gauss-Hermite quadrature over responses
and workers, as bench/coverage.py's SSA designs). Interactive SSA: two models, a pool of
10-40 workers each chatting several times with both (worker sd 0.5, chat 0.5, turn 1.0), the
truth the difference of E expit(mu + sd Z). "naive" rows are the older interval (responses
taken as independent; conversations drawn as if workers did not repeat).

``power_lines`` simulates the planner's default static and interactive SSA designs at a
difference, analyses each study with ``ssa_contrasts`` and prints the share found beside the
planner's promise (``ssa_plan``, ``chat_plan``) for the same design.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats
from scipy.special import expit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
os.environ.setdefault("EVALSITE_TASKS_INLINE", "1")

import django  # noqa: E402

django.setup()

from annotation.protocols.ssa.contrasts import ssa_contrasts  # noqa: E402
from evalstats import planner  # noqa: E402
from evalstats.options import report_options_set  # noqa: E402
from evalstats.planner.ssa import _vote_logit  # noqa: E402

Result = tuple[str, str, float, float, float]  # statistic, method, truth, low, high
Studies = Callable[[np.random.Generator, int], Iterator[Result]]
N_BOOT = 400
NODES, WEIGHTS = np.polynomial.hermite_e.hermegauss(80)
WEIGHTS = WEIGHTS / WEIGHTS.sum()
METRIC = {"sensibleness": "sensible", "specificity": "specific", "ssa": "SSA"}


def _static_truth(mu: tuple[float, float], sd_item: float, sd_rater: float, k: int) -> dict:
    """Population majority shares of one model (sensible, specific, SSA) by quadrature."""
    q_s = (expit((mu[0] + sd_item * NODES)[:, None] + sd_rater * NODES) * WEIGHTS).sum(axis=1)
    q_p = (expit((mu[1] + sd_item * NODES)[:, None] + sd_rater * NODES) * WEIGHTS).sum(axis=1)
    sens = float(WEIGHTS @ stats.binom.sf(k // 2, k, q_s))
    spec = float(WEIGHTS @ stats.binom.sf(k // 2, k, q_s[:, None] * q_p[None, :]) @ WEIGHTS)
    return {"sensible": sens, "specific": spec, "SSA": (sens + spec) / 2}


def static_votes(
    rng: np.random.Generator,
    means: dict[str, tuple[float, float]],
    *,
    items: int,
    pool: int,
    k: int = 5,
    sd_item: float = 1.5,
    sd_rater: float = 1.0,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One static SSA study: ``labels`` (majority per response) and the workers' judgments."""
    lenient = rng.normal(0.0, sd_rater, (2, pool))
    labels, judgments = [], []
    for model, (mu_s, mu_p) in means.items():
        raters = np.argsort(rng.random((items, pool)), axis=1)[:, :k]
        theta = rng.normal(mu_s, sd_item, (items, 1))
        phi = rng.normal(mu_p, sd_item, (items, 1))
        sens = rng.random((items, k)) < expit(theta + lenient[0][raters])
        spec = sens & (rng.random((items, k)) < expit(phi + lenient[1][raters]))
        ids = np.array([f"{model}{i}" for i in range(items)])
        labels.append(
            pd.DataFrame(
                {
                    "item": ids,
                    "model": model,
                    "sensible": sens.sum(axis=1) > k // 2,
                    "specific": spec.sum(axis=1) > k // 2,
                }
            )
        )
        for question, yes in (("sensible", sens), ("specific", spec)):
            judgments.append(
                pd.DataFrame(
                    {
                        "item": np.repeat(ids, k),
                        "rater": raters.ravel(),
                        "question": question,
                        "value": np.where(yes.ravel(), "yes", "no"),
                    }
                )
            )
    return pd.concat(labels, ignore_index=True), pd.concat(judgments, ignore_index=True)


def static_studies(
    rng: np.random.Generator, n: int, *, means: dict[str, tuple[float, float]], pool: int
) -> Iterator[Result]:
    """Static SSA: the crossed contrast of two models' majority shares (a - b)."""
    a, b = (_static_truth(mu, 1.5, 1.0, 5) for mu in means.values())
    for _ in range(n):
        labels, judgments = static_votes(rng, means, items=100, pool=pool)
        table = ssa_contrasts(labels, judgments=judgments)
        with report_options_set(method="independent"):
            naive = ssa_contrasts(labels, judgments=judgments, n_boot=N_BOOT, seed=_seed(rng))
        for method, rows in (("crossed", table), ("naive responses", naive)):
            for _, row in rows.iterrows():
                name = METRIC[row["metric"]]
                truth = 100 * (a[name] - b[name])
                yield f"SSA contrast {name}", method, truth, row["low"], row["high"]


def chat_labels(
    rng: np.random.Generator, shifts: dict[str, float], *, workers: int, chats_each: int
) -> pd.DataFrame:
    """One interactive study: each worker of the pool chats ``chats_each`` times with every
    model; a turn is sensible with expit(mu + worker + chat + turn), specific likewise."""
    habit = rng.normal(0.0, 0.5, (2, workers))
    frames = []
    for model, mu in shifts.items():
        chats = workers * chats_each
        worker = np.repeat(np.arange(workers), chats_each)
        turns = rng.integers(7, 15, chats)
        chat = np.repeat(np.arange(chats), turns)
        columns = {}
        for j, (name, base) in enumerate((("sensible", mu), ("specific", mu - 1.0))):
            shift = rng.normal(0.0, 0.5, chats) + habit[j][worker]
            p = expit(base + shift[chat] + rng.normal(0.0, 1.0, len(chat)))
            columns[name] = rng.random(len(chat)) < p
        frames.append(
            pd.DataFrame(
                {
                    "item": [f"{model}-{c}-{t}" for t, c in enumerate(chat)],
                    "model": model,
                    "chat": [f"{model}-{c}" for c in chat],
                    "worker": worker[chat],
                    **columns,
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def chat_studies(
    rng: np.random.Generator, n: int, *, shifts: dict[str, float], workers: int, chats_each: int
) -> Iterator[Result]:
    """Interactive SSA: the contrast of two models' shares of sensible (specific) turns."""
    total = np.sqrt(0.5**2 + 0.5**2 + 1.0**2)
    share = {
        m: {
            q: float(WEIGHTS @ expit(mu - off + total * NODES))
            for q, off in (("sensible", 0.0), ("specific", 1.0))
        }
        for m, mu in shifts.items()
    }
    a, b = (dict(s, SSA=(s["sensible"] + s["specific"]) / 2) for s in share.values())
    for _ in range(n):
        labels = chat_labels(rng, shifts, workers=workers, chats_each=chats_each)
        by_item = labels.set_index("item")
        seed = _seed(rng)
        for interval, method in (("auto", "workers"), ("units", "naive conversations")):
            with report_options_set(interval=interval):
                table = ssa_contrasts(
                    labels,
                    conversations=by_item["chat"],
                    workers=by_item["worker"],
                    n_boot=N_BOOT,
                    seed=seed,
                )
            for _, row in table.iterrows():
                name = METRIC[row["metric"]]
                truth = 100 * (a[name] - b[name])
                yield f"SSA chat contrast {name}", method, truth, row["low"], row["high"]


def _seed(rng: np.random.Generator) -> int:
    return int(rng.integers(1 << 31))


def designs() -> list[tuple[str, Studies]]:
    """Return (name, studies function of (rng, n)) for coverage.py's suite."""
    out: list[tuple[str, Studies]] = []
    for label, means in (
        ("equal", {"a": (1.2, 0.3), "b": (1.2, 0.3)}),
        ("a +0.6 logit", {"a": (1.2, 0.3), "b": (0.6, -0.3)}),
    ):
        out.append(
            (f"SSA contrast pool 20, {label}", partial(static_studies, means=means, pool=20))
        )
    for workers, each in ((10, 10), (20, 5), (40, 3)):
        shifts = {"a": 1.0, "b": 0.7}
        out.append(
            (
                f"SSA chat contrast {workers} workers x {each}",
                partial(chat_studies, shifts=shifts, workers=workers, chats_each=each),
            )
        )
    return out


def power_lines(studies: int, rng: np.random.Generator) -> list[str]:
    """Return promised vs achieved power of the report's contrast for the planner's default
    static and interactive SSA designs (the model 10, resp. 6, points more sensible)."""
    lines = []
    design = planner.SSADesign()
    difference = 0.10
    promise = planner.ssa_plan(design, difference, studies=200, seed=0)
    means = {
        "model": (_vote_logit(design, design.sensible + difference), 0.0),
        "reference": (_vote_logit(design, design.sensible), 0.0),
    }
    found = 0
    for _ in range(studies):
        labels, judgments = static_votes(
            rng, means, items=design.responses_per_model, pool=design.pool or 20
        )
        row = ssa_contrasts(labels, judgments=judgments).iloc[0]  # sensibleness
        found += bool(row["p_holm"] < 0.05 and row["difference"] > 0)
    lines.append(
        _power_line("ssa (200 responses x 5, pool 20)", difference, promise, found, studies)
    )
    chat = planner.ChatDesign()
    difference = 0.06
    promise = planner.chat_plan(chat, difference, studies=200, seed=0)
    found = 0
    for _ in range(studies):
        frames = []
        for model, share in (("model", chat.sensible + difference), ("reference", chat.sensible)):
            y, conv = planner.chats.chat_labels(rng, chat, share)
            frames.append(
                pd.DataFrame(
                    {
                        "item": [f"{model}-{i}" for i in range(len(y))],
                        "model": model,
                        "sensible": y.astype(bool),
                        "specific": y.astype(bool) & (rng.random(len(y)) < 0.6),
                        "chat": [f"{model}-{c}" for c in conv],
                    }
                )
            )
        labels = pd.concat(frames, ignore_index=True)
        chats = labels.set_index("item")["chat"]
        table = ssa_contrasts(
            labels, conversations=chats, workers=chats, n_boot=chat.n_boot, seed=_seed(rng)
        )
        row = table.iloc[0]
        found += bool(row["p_holm"] < 0.05 and row["difference"] > 0)
    lines.append(_power_line("ssa_interactive (100 chats)", difference, promise, found, studies))
    return lines


def _power_line(name: str, difference: float, promise: planner.Plan, found: int, n: int) -> str:
    power = found / n
    se = np.sqrt(power * (1 - power) / n)
    return (
        f"{name:<34} at {difference:.2f}: promised {promise.power:.1%} "
        f"± {1.96 * promise.power_se:.1%} (planner, 200 studies), "
        f"report's contrast {power:.1%} ± {1.96 * se:.1%}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--studies", type=int, default=200, help="studies per design (200)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument(
        "--only", default="", help="run only the designs whose name contains this text"
    )
    parser.add_argument("--no-power", action="store_true", help="skip the power check")
    parser.add_argument("--power-only", action="store_true", help="run only the power check")
    args = parser.parse_args(argv)
    if args.studies < 1:
        parser.error("--studies must be at least 1")
    rng = np.random.default_rng(args.seed)
    started = time.process_time()
    row = "{:<34} {:<36} {:<20} {:>8} {:>7} {:>7}{}"
    print(row.format("statistic", "design", "method", "coverage", "± MC se", "width", ""))
    failures = 0
    for design, run in designs():
        if args.power_only or args.only not in design:
            continue
        hits: dict[tuple[str, str], list[float]] = {}
        for statistic, method, truth, low, high in run(rng, args.studies):
            hits.setdefault((statistic, method), []).extend([low <= truth <= high, high - low])
        for (statistic, method), values in hits.items():
            covered, widths = np.array(values[0::2]), np.array(values[1::2])
            cover, total = float(covered.mean()), len(covered)
            flag = ""
            if not method.startswith("naive") and not 0.93 <= cover <= 0.97:
                beyond = (
                    stats.binom.sf(covered.sum() - 1, total, 0.97) < 0.025
                    or stats.binom.cdf(covered.sum(), total, 0.93) < 0.025
                )
                flag = "  <- outside 93-97%" + (" (beyond MC error)" if beyond else "")
                failures += beyond
            se = np.sqrt(cover * (1 - cover) / total)
            width = f"{np.nanmean(widths):.2f}"
            print(row.format(statistic, design, method, f"{cover:.1%}", f"{se:.1%}", width, flag))
        sys.stdout.flush()
    if not args.no_power:
        print("\n".join(power_lines(args.studies, rng)))
    seconds = time.process_time() - started
    print(f"{args.studies} studies per design, seed {args.seed}, {seconds:.0f} s of CPU")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
