"""The design effect of clustered judgments on Wald variances (pure numpy, no ORM).

Bradley–Terry (``ranking``), its ties model (``ties``) and the style-controlled arena fit
(``style``) widen their model variances by the same ratio: the cluster-robust sandwich variance
(Liang & Zeger, 1986) over the sandwich that takes every judgment as independent, with two
clusterings (items and workers) combined as Cameron, Gelbach & Miller (2011) do.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def _sandwich(own: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Return per column the sum over clusters of the squared summed influence, times the
    usual small-sample factor G / (G - 1) of a sandwich over G clusters."""
    groups = int(codes.max()) + 1
    summed = np.zeros((groups, own.shape[1]))
    np.add.at(summed, codes, own)
    return np.einsum("ij,ij->j", summed, summed) * groups / max(groups - 1, 1)


def design_effect(own: np.ndarray, clusters: list[np.ndarray]) -> np.ndarray:
    """Return per column of ``own`` (judgments x contrasts: each judgment's influence, its score
    pushed through the inverse information) the cluster-robust over the independent sandwich,
    floored at 1; ``clusters`` holds one or two integer codings of the judgments (none: 1)."""
    if not clusters or not len(own):
        return np.ones(own.shape[1])
    n = len(own)
    # Every judgment its own cluster: the sums are the judgments' own scores.
    independent = np.einsum("ij,ij->j", own, own) * n / max(n - 1, 1)
    if len(clusters) == 1:
        robust = _sandwich(own, clusters[0])
    else:
        first, second = clusters
        both, _ = pd.factorize(pd.Series(first.astype(np.int64) * (int(second.max()) + 1) + second))
        one, two = _sandwich(own, first), _sandwich(own, second)
        robust = np.maximum(one + two - _sandwich(own, both), np.maximum(one, two))
    with np.errstate(divide="ignore", invalid="ignore"):
        effect = np.where(independent > 0, robust / independent, 1.0)
    return np.maximum(effect, 1.0)
