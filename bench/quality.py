"""The quality rule on simulated studies: good workers blocked, spammers passed.

Simulates many studies of several sizes (``annotation.simulation.study_simulate``: yes/no
questions as in the demo's SSA study, hidden gold checks, workers taking turns) and applies
the real rule (``evalstats.quality_rule.worker_decisions``) at ``--looks`` points of each
study, as the platform does after each gold answer: a worker counts as blocked when any
look blocks them. Worker kinds (``annotation.simulation.WORKER_KINDS``): good (right 90%,
9 s per item), fast-good (right 90%, 1.5 s), noisy (right 70%, 6 s), and in the one
"spammer" slot, in turn: fast-60 (right 60%, 1.3 s: the demo's spammer as the issue saw
it), fast-random (ignores the item, 1.3 s) and fast-biased ("yes" 9 times in 10, 1.3 s).

Prints, per size, the share of good, fast-good and noisy workers blocked and, per spammer
kind, the share of studies in which the spammer passed. The "demo" size is the demo's SSA
study (``evalsite/demo``): 120 items, 5 simulated judgments each, 10 gold items at a
gold rate of 0.25, 8 good (one of them fast), 3 noisy and 1 spammer; the rule's settings
are the demo's (``gold_min_accuracy`` 0.7, ``gold_min_answered`` 6).

Run from the repository root: ``.venv/bin/python bench/quality.py``. No database.
Target (issue 29): 0 good workers blocked, the fast-60 spammer caught in at least 90% of
the demo-size studies.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
os.environ.setdefault("EVALSITE_TASKS_INLINE", "1")

import django  # noqa: E402

django.setup()

import numpy as np  # noqa: E402

from annotation.simulation import StudyShape, study_decisions, study_simulate  # noqa: E402
from evalstats.quality_rule import BLOCK_ODDS, FAST_BLOCK_ODDS, Rule  # noqa: E402

SPAMMERS = ("fast-60", "fast-random", "fast-biased")


@dataclass(frozen=True)
class Size:
    """A study size and its crowd, apart from the spammer slot."""

    name: str
    shape: StudyShape
    good: int
    fast_good: int
    noisy: int
    spammers: int


SIZES = (
    Size("small", StudyShape(items=30, redundancy=3, gold_items=5, gold_rate=0.2), 3, 1, 1, 1),
    Size("demo", StudyShape(items=120, redundancy=5, gold_items=10, gold_rate=0.25), 7, 1, 3, 1),
    Size("large", StudyShape(items=400, redundancy=3, gold_items=20, gold_rate=0.1), 18, 2, 6, 2),
)


def blocked_ever(size: Size, spammer: str, rule: Rule, seed: int, looks: int) -> dict[str, int]:
    """Simulate one study; return, per worker kind, how many of its workers were blocked."""
    crowd = (
        {f"good-{i}": "good" for i in range(size.good)}
        | {f"fast-good-{i}": "fast-good" for i in range(size.fast_good)}
        | {f"noisy-{i}": "noisy" for i in range(size.noisy)}
        | {f"spammer-{i}": spammer for i in range(size.spammers)}
    )
    study = study_simulate(size.shape, crowd, np.random.default_rng(seed))
    last = int(study.answers["turn"].max())
    blocked: set[str] = set()
    for until in np.linspace(last / looks, last, looks).round().astype(int):
        decisions = study_decisions(study, rule, until=int(until))
        blocked |= set(decisions.loc[decisions["block"], "worker"])
    counts: dict[str, int] = {}
    for worker, kind in crowd.items():
        counts[kind] = counts.get(kind, 0) + (worker in blocked)
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--studies",
        type=int,
        default=100,
        help="simulated studies per size and spammer kind (default 100)",
    )
    parser.add_argument(
        "--looks", type=int, default=10, help="points of each study the rule is applied at"
    )
    parser.add_argument(
        "--sizes",
        default=",".join(s.name for s in SIZES),
        help="comma-separated sizes to run (default: all: small, demo, large)",
    )
    parser.add_argument("--seed", type=int, default=0, help="first seed (default 0)")
    args = parser.parse_args(argv)
    names = {s.name: s for s in SIZES}
    chosen = [n.strip() for n in args.sizes.split(",") if n.strip()]
    unknown = [n for n in chosen if n not in names]
    if unknown or args.studies < 1 or args.looks < 1:
        parser.error(f"unknown sizes {unknown}" if unknown else "--studies and --looks >= 1")
    rule = Rule(min_accuracy=0.7, fast_seconds=2.0, min_evidence=6)
    print(
        f"rule: blocks at {BLOCK_ODDS:,.0f} to 1 ({FAST_BLOCK_ODDS:g} to 1 when fast), "
        f"gold_min_accuracy {rule.min_accuracy}; {args.studies} studies per size and spammer "
        f"kind, the rule applied at {args.looks} points of each"
    )
    header = (
        f"{'size':<6} {'items':>5} {'raters':>6} {'workers':>7} {'good blocked':>13} "
        f"{'fast-good blocked':>17} {'noisy blocked':>13} "
        + " ".join(f"{k + ' passed':>18}" for k in SPAMMERS)
        + f" {'seconds':>7}"
    )
    print(header)
    for size in (names[n] for n in chosen):
        started = time.perf_counter()
        totals: dict[str, int] = {}
        for k, spammer in enumerate(SPAMMERS):
            for i in range(args.studies):
                seed = args.seed + 100_000 * k + i
                for kind, n in blocked_ever(size, spammer, rule, seed, args.looks).items():
                    totals[kind] = totals.get(kind, 0) + n
        per_kind = args.studies * size.spammers  # spammers of each kind, over its studies
        passed = {spammer: per_kind - totals.get(spammer, 0) for spammer in SPAMMERS}
        good_n = args.studies * len(SPAMMERS) * size.good
        fast_n = args.studies * len(SPAMMERS) * size.fast_good
        noisy_n = args.studies * len(SPAMMERS) * size.noisy
        workers = size.good + size.fast_good + size.noisy + size.spammers
        print(
            f"{size.name:<6} {size.shape.items:>5} {size.shape.redundancy:>6} {workers:>7} "
            f"{_share(totals.get('good', 0), good_n):>13} "
            f"{_share(totals.get('fast-good', 0), fast_n):>17} "
            f"{_share(totals.get('noisy', 0), noisy_n):>13} "
            + " ".join(f"{_share(passed[k], per_kind):>18}" for k in SPAMMERS)
            + f" {time.perf_counter() - started:>7.0f}"
        )
    return 0


def _share(n: int, of: int) -> str:
    return f"{n}/{of} {n / of:.1%}" if of else "–"


if __name__ == "__main__":
    sys.exit(main())
