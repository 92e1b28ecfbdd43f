"""Benchmark annotation.agreement against the ``krippendorff`` package, in one run.

Run from the repository root: ``.venv/bin/python bench/agreement.py``. Prints one table of
Krippendorff's alpha timings at 10^4, 10^5 and 10^6 judgments (nominal and interval), ours vs
the package, with the ratio and the largest difference between the two values, then the time
of 1000-resample bootstrap CIs at 10^5 judgments. Targets (issue 9): at least 3x faster than
the package at 10^6 judgments with identical values; a bootstrap CI under 3 s at 10^5.
"""

from __future__ import annotations

import os
import platform
import sys
import time
from collections.abc import Callable
from functools import partial
from importlib.metadata import version
from pathlib import Path
from typing import TypeVar

import krippendorff
import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from annotation.agreement import krippendorff_alpha, krippendorff_alpha_ci  # noqa: E402

N_RATERS = 5
JUDGMENTS_PER_ITEM = 4  # each item misses one of the 5 raters: missing data on every item
SCALES = {"nominal": 5, "interval": 7}  # 5 labels; a 7-point rating scale
T = TypeVar("T")


def make_data(n_judgments: int, n_values: int, seed: int = 0) -> np.ndarray:
    """Simulate raters x items ratings: 60% copy an item's true value, the rest are random."""
    rng = np.random.default_rng(seed)
    n_items = n_judgments // JUDGMENTS_PER_ITEM
    truth = rng.integers(1, n_values + 1, n_items)
    noise = rng.integers(1, n_values + 1, (N_RATERS, n_items))
    data = np.where(rng.random((N_RATERS, n_items)) < 0.6, truth, noise).astype(float)
    data[rng.integers(0, N_RATERS, n_items), np.arange(n_items)] = np.nan
    return data


def best_time(func: Callable[[], T], repeats: int) -> tuple[float, T]:
    """Return the fastest of ``repeats`` runs in seconds, and the value computed."""
    best = float("inf")
    value = func()  # a warm-up run: first-touch page faults are not what we measure
    for _ in range(repeats):
        start = time.perf_counter()
        value = func()
        best = min(best, time.perf_counter() - start)
    return best, value


def main() -> None:
    """Time every case and print the table."""
    print(
        f"annotation.agreement vs krippendorff {version('krippendorff')} | numpy "
        f"{np.__version__} | Python {platform.python_version()} | {os.cpu_count()} CPU(s)"
    )
    print(f"{N_RATERS} raters, {JUDGMENTS_PER_ITEM} judgments per item; best of 3-7 timed runs\n")
    print(f"| {'judgments':>9} | {'level':<8} | {'ours ms':>8} | {'package ms':>10} | "
          f"{'speed-up':>8} | {'|difference|':>12} |")  # fmt: skip
    print(f"|{'-' * 11}|{'-' * 10}|{'-' * 10}|{'-' * 12}|{'-' * 10}|{'-' * 14}|")
    for exponent in (4, 5, 6):
        for level, n_values in SCALES.items():
            data = make_data(10**exponent, n_values)
            repeats = 7 if exponent < 6 else 3
            ours, ours_value = best_time(partial(krippendorff_alpha, data, level), repeats)
            theirs, their_value = best_time(
                partial(krippendorff.alpha, reliability_data=data, level_of_measurement=level),
                repeats,
            )
            print(
                f"| {f'10^{exponent}':>9} | {level:<8} | {ours * 1e3:8.2f} | {theirs * 1e3:10.2f}"
                f" | {theirs / ours:7.1f}x | {abs(ours_value - their_value):12.1e} |"
            )
    data = make_data(10**6, SCALES["nominal"])
    items, raters = np.nonzero(~np.isnan(data.T))
    long = pd.DataFrame({"item": items, "rater": raters, "value": data[raters, items]})
    seconds, _ = best_time(partial(krippendorff_alpha, long, "nominal"), 3)
    print(f"\nlong DataFrame input (item, rater, value), 10^6 judgments, nominal: "
          f"{seconds * 1e3:.1f} ms (includes the duplicate-judgment check)")  # fmt: skip
    print("\nbootstrap CI, 1000 resamples of items, 10^5 judgments:")
    for level in ("nominal", "ordinal", "interval", "ratio"):
        data = make_data(10**5, SCALES.get(level, 7), seed=1)
        seconds, estimate = best_time(partial(krippendorff_alpha_ci, data, level, n_boot=1000), 1)
        print(
            f"  {level:<8} {seconds:6.3f} s   alpha {estimate.value:.4f} "
            f"[{estimate.low:.4f}, {estimate.high:.4f}]"
        )


if __name__ == "__main__":
    main()
