"""Benchmark evalstats.agreement against the ``krippendorff`` package, and Bradley–Terry's
bootstrap, in one run.

Run from the repository root: ``.venv/bin/python bench/agreement.py``. Prints one table of
Krippendorff's alpha timings at 10^4, 10^5 and 10^6 judgments, ours vs the package, on data
shaped like a crowd's: a pool of raters who differ (a bias and a noise level each), 4 of them
on each item, so most of the raters x items matrix is missing. Cases: Likert ratings 1–5
(ordinal, interval), the same ratings as nominal codes, and string labels: A/B outcomes
(a, b, both, neither) and emotion names (EmotionLines' seven). Both sides get the same ratings
in the form each takes (a float array with NaN; for strings, a string array with "nan", the
only missing value the package knows), made before timing.
String labels are timed twice: both sides given the very same string array ("strings"), and
ours given an object array with None instead ("objects", what Python lists of labels make).
Each timing is the median of alternating runs, ours then the package's, after a warm-up of
each. Then the time of 1000-resample bootstrap CIs at 10^5 judgments, and of Bradley–Terry's
1000-resample bootstrap at 10^6 A/B judgments (item patterns, batched fits) next to the
per-item reweighting it replaced (timed on 10 resamples and scaled to 1000).
Targets: at least 3x the package's speed at 10^6 judgments, string labels included, with
identical values (issues 9 and 15); a bootstrap CI under 3 s at 10^5; Bradley–Terry with 1000
resamples at 10^6 judgments under 5 s.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from functools import partial
from importlib.metadata import version
from pathlib import Path
from typing import Any

import krippendorff
import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalstats.agreement import krippendorff_alpha, krippendorff_alpha_ci  # noqa: E402
from evalstats.ranking import _canonical, _fit, _wins, bradley_terry  # noqa: E402

POOL = 20  # raters in the crowd
PER_ITEM = 4  # raters on each item
AB = np.array(["a", "b", "both", "neither"])
EMOTIONS = np.array(["neutral", "joy", "sadness", "fear", "anger", "surprise", "disgust"])
MODELS = ["gold", "retrieval", "generic-bot", "tiny-gpt2", "blender-90m"]


def crowd(n_judgments: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return (raters x items mask of who judged, each rater's bias, each rater's noise)."""
    rng = np.random.default_rng(seed)
    n_items = n_judgments // PER_ITEM
    judged = np.zeros((POOL, n_items), dtype=bool)
    raters = np.argsort(rng.random((n_items, POOL)), axis=1)[:, :PER_ITEM]
    judged[raters.T, np.arange(n_items)] = True
    return judged, rng.normal(0, 0.5, POOL), rng.uniform(0.3, 1.5, POOL)


def likert(n_judgments: int, seed: int = 0) -> np.ndarray:
    """Raters x items Likert ratings 1–5 (NaN where a rater did not judge the item)."""
    judged, bias, noise = crowd(n_judgments, seed)
    rng = np.random.default_rng(seed + 1)
    truth = rng.normal(3.2, 0.9, judged.shape[1])
    drawn = truth + bias[:, None] + noise[:, None] * rng.normal(size=judged.shape)
    ratings = np.clip(np.rint(drawn), 1, 5)
    return np.where(judged, ratings, np.nan)


def labels(n_judgments: int, names: np.ndarray, seed: int = 0) -> np.ndarray:
    """Raters x items label codes (float, NaN missing): raters copy the item's label more or
    less often (their noise), and lean to their favourite label (their bias)."""
    judged, bias, noise = crowd(n_judgments, seed)
    rng = np.random.default_rng(seed + 2)
    k = len(names)
    truth = rng.choice(k, judged.shape[1], p=np.linspace(2, 1, k) / np.linspace(2, 1, k).sum())
    favourite = rng.integers(0, k, POOL)
    u = rng.random(judged.shape)
    copied = u < 1.0 - 0.4 * noise[:, None]
    leaning = u > 1.0 - 0.15 * np.abs(bias[:, None])
    codes = np.where(copied, truth, rng.integers(0, k, judged.shape))
    codes = np.where(leaning, favourite[:, None], codes).astype(float)
    return np.where(judged, codes, np.nan)


def as_strings(codes: np.ndarray, names: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return the labels for ours (object array, None missing) and for the package ("nan")."""
    present = ~np.isnan(codes)
    ours = np.full(codes.shape, None, dtype=object)
    ours[present] = names[codes[present].astype(int)]
    theirs = np.full(codes.shape, "nan", dtype=names.dtype)
    theirs[present] = names[codes[present].astype(int)]
    return ours, theirs


def alternating(ours: Callable[[], Any], theirs: Callable[[], Any], runs: int) -> tuple:
    """Time ``runs`` alternating runs (ours, then theirs) after a warm-up of each; return the
    median seconds of each and the values computed."""
    value, their_value = ours(), theirs()
    mine, package = [], []
    for _ in range(runs):
        for func, times in ((ours, mine), (theirs, package)):
            start = time.perf_counter()
            func()
            times.append(time.perf_counter() - start)
    return statistics.median(mine), statistics.median(package), value, their_value


def cases(n: int) -> list[tuple[str, str, Any, Any]]:
    """(data, level, our input, the package's input) for ``n`` judgments."""
    ratings, codes = likert(n), labels(n, EMOTIONS, seed=3)
    ab_ours, ab_theirs = as_strings(labels(n, AB), AB)
    emo_ours, emo_theirs = as_strings(labels(n, EMOTIONS, seed=3), EMOTIONS)
    return [
        ("Likert 1-5", "ordinal", ratings, ratings),
        ("Likert 1-5", "interval", ratings, ratings),
        ("label codes", "nominal", codes, codes),
        ("A/B strings", "nominal", ab_theirs, ab_theirs),
        ("emotion strings", "nominal", emo_theirs, emo_theirs),
        ("A/B objects", "nominal", ab_ours, ab_theirs),
        ("emotion objects", "nominal", emo_ours, emo_theirs),
    ]


def bt_by_items(data: pd.DataFrame, n_boot: int, seed: int = 0) -> np.ndarray:
    """A Bradley–Terry bootstrap over items, the report's interval before Firth's fit: each
    judgment reweighed by its item's draw (two np.add.at per resample), one fit at a time."""
    data = _canonical(data)
    models = sorted(set(data["a"].unique()) | set(data["b"].unique()))
    decided = data[data["outcome"] != "neither"]
    ia = pd.Index(models).get_indexer(decided["a"])
    ib = pd.Index(models).get_indexer(decided["b"])
    score = decided["outcome"].map({"a": 1.0, "b": 0.0, "both": 0.5}).to_numpy(dtype=float)
    k = len(models)
    met = _wins(ia, ib, np.ones(len(score)), k) > 0
    virtual = 0.5 * (met | met.T)
    items, codes = np.unique(decided["item"].astype(str).to_numpy(), return_inverse=True)
    rng = np.random.default_rng(seed)
    draws = np.empty((n_boot, k))
    for r in range(n_boot):
        weight = np.bincount(rng.integers(0, len(items), len(items)), minlength=len(items))
        draws[r] = _fit(_wins(ia, ib, score, k, weight[codes].astype(float)) + virtual)
    return draws


def ab_outcomes(n_judgments: int, seed: int = 0) -> pd.DataFrame:
    """A/B judgments: each item one model pair, 5 raters who differ in how noisy they are."""
    rng = np.random.default_rng(seed)
    quality = np.array([1.0, 0.1, -0.7, -0.3, 0.4])
    pairs = [(i, j) for i in range(len(MODELS)) for j in range(i + 1, len(MODELS))]
    n_items = n_judgments // 5
    which = np.repeat(rng.integers(0, len(pairs), n_items), 5)
    a = np.array([p[0] for p in pairs])[which]
    b = np.array([p[1] for p in pairs])[which]
    noise = rng.uniform(0.3, 1.5, POOL)[rng.integers(0, POOL, len(a))]
    diff = quality[a] - quality[b] + noise * rng.normal(size=len(a))
    outcome = np.where(diff > 0.25, "a", np.where(diff < -0.25, "b", "both")).astype("U7")
    outcome[rng.random(len(a)) < 0.05] = "neither"
    return pd.DataFrame(
        {
            "item": np.repeat(np.arange(n_items), 5).astype(str),
            "a": np.array(MODELS)[a],
            "b": np.array(MODELS)[b],
            "outcome": outcome,
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=[4, 5, 6], help="Powers of ten (default 4 5 6)."
    )
    parser.add_argument(
        "--runs", type=int, default=5, help="Alternating timed runs per case (default 5)."
    )
    parser.add_argument("--no-bt", action="store_true", help="Skip the Bradley–Terry timing.")
    options = parser.parse_args()
    print(
        f"evalstats.agreement vs krippendorff {version('krippendorff')} | numpy "
        f"{np.__version__} | Python {platform.python_version()} | {os.cpu_count()} CPU(s)"
    )
    print(f"a pool of {POOL} raters who differ, {PER_ITEM} on each item; median of "
          f"{options.runs} alternating runs (ours, package) after a warm-up\n")  # fmt: skip
    print(f"| {'judgments':>9} | {'data':<15} | {'level':<8} | {'ours ms':>8} | "
          f"{'package ms':>10} | {'speed-up':>8} | {'|difference|':>12} |")  # fmt: skip
    print(f"|{'-' * 11}|{'-' * 17}|{'-' * 10}|{'-' * 10}|{'-' * 12}|{'-' * 10}|{'-' * 14}|")
    speedups: dict[tuple[int, str], float] = {}
    for exponent in options.sizes:
        for name, level, ours_in, theirs_in in cases(10**exponent):
            ours, theirs, value, their_value = alternating(
                partial(krippendorff_alpha, ours_in, level),
                partial(krippendorff.alpha, reliability_data=theirs_in, level_of_measurement=level),
                options.runs if exponent < 6 else max(3, options.runs // 2),
            )
            speedups[(exponent, name)] = theirs / ours
            gap = abs(value - their_value)
            print(
                f"| {f'10^{exponent}':>9} | {name:<15} | {level:<8} | {ours * 1e3:8.2f} | "
                f"{theirs * 1e3:10.2f} | {theirs / ours:7.1f}x | {gap:12.1e} |",
                flush=True,
            )
    top = max(options.sizes)
    ab, emotions = (speedups[(top, n)] for n in ("A/B strings", "emotion strings"))
    print(f"\nstring labels at 10^{top}: A/B {ab:.1f}x, emotions {emotions:.1f}x the package "
          f"(target 3x each: {'met' if min(ab, emotions) >= 3 else 'NOT MET'})")  # fmt: skip

    codes = labels(10**6, EMOTIONS, seed=3)
    raters, items = np.nonzero(~np.isnan(codes))
    long = pd.DataFrame(
        {"item": items, "rater": raters, "value": EMOTIONS[codes[raters, items].astype(int)]}
    )
    seconds, _, _, _ = alternating(partial(krippendorff_alpha, long, "nominal"), lambda: 0, 3)
    print(f"long DataFrame input (item, rater, value), 10^6 emotion labels, nominal: "
          f"{seconds * 1e3:.1f} ms (includes the duplicate-judgment check)")  # fmt: skip

    print("\nbootstrap CI, 1000 resamples of items, 10^5 judgments:")
    for level in ("nominal", "ordinal", "interval", "ratio"):
        data = labels(10**5, EMOTIONS, seed=1) if level == "nominal" else likert(10**5, seed=1)
        start = time.perf_counter()
        estimate = krippendorff_alpha_ci(data, level, n_boot=1000)
        seconds = time.perf_counter() - start
        print(
            f"  {level:<8} {seconds:6.3f} s   alpha {estimate.value:.4f} "
            f"[{estimate.low:.4f}, {estimate.high:.4f}]"
        )
    if options.no_bt:
        return
    data = ab_outcomes(10**6)
    start = time.perf_counter()
    table = bradley_terry(data)
    ours = time.perf_counter() - start
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        bt_by_items(data, 10)
    old = (time.perf_counter() - start) * 100
    print(f"\nBradley–Terry, 10^6 A/B judgments: {ours:.2f} s (whole ranking, Firth's fit and "
          f"design-aware Wald intervals; target 5 s); a bootstrap of 1000 resamples by per-item "
          f"reweighting: {old:.1f} s (10 resamples x 100), {old / ours:.0f}x")  # fmt: skip
    print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))


if __name__ == "__main__":
    main()
