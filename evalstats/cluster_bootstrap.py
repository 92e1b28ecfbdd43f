"""Bootstraps that draw whole clusters: a chat's turns, a dialogue's utterances.

Pure numpy/pandas, no ORM. The turns of a chat share the chat and its worker, and the
utterances of a dialogue share its context and its workers, so a resample draws each cluster
whole with its counts (Davison & Hinkley, 1997, section 3.8; docs/statistics.md,
"Design-aware intervals"):

- ``cluster_ratio_ci``: a share of turns (interactive SSA) by a bootstrap over conversations.
- ``cluster_bootstrap_means``: several such shares resampled jointly (SSA = their mean).
- ``fleiss_kappa_cluster_ci``: Fleiss' kappa by a bootstrap over dialogues (EmotionLines).
- ``chat_clusters``: conversations or workers, whichever the design makes the cluster.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from evalstats.agreement.bootstrap import _compress, _percentile, _resampled_sums
from evalstats.agreement.kappa import _fleiss_from_sums, _fleiss_table
from evalstats.options import report_options
from evalstats.uncertainty import Interval

CLUSTER = "bootstrap over conversations"
WORKERS = "bootstrap over workers (their conversations whole)"
# Conversations per worker above which workers, not conversations, are the resampled clusters.
REPEAT_RULE = 1.5
DIALOGUES = "bootstrap over dialogues"


def cluster_ratio_ci(
    numerators: np.ndarray,
    denominators: np.ndarray,
    *,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int | None = 0,
) -> Interval:
    """Return sum(num) / sum(den) with a percentile bootstrap over clusters (conversations).

    Each cluster (a chat) is drawn whole with its counts (labelled turns, sensible turns),
    as in the cluster bootstrap of Davison & Hinkley (1997, section 3.8).
    """
    num = np.asarray(numerators, dtype=float)
    den = np.asarray(denominators, dtype=float)
    nan = float("nan")
    if den.sum() <= 0:
        return Interval(nan, nan, nan, nan, CLUSTER)
    value = float(num.sum() / den.sum())
    if len(num) < 2 or n_boot < 1:
        return Interval(value, nan, nan, nan, CLUSTER)
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(len(num), np.full(len(num), 1.0 / len(num)), size=n_boot)
    with np.errstate(divide="ignore", invalid="ignore"):
        boot = (draws @ num) / (draws @ den)
    boot = boot[np.isfinite(boot)]
    low, high = np.quantile(boot, [0.5 - level / 2.0, 0.5 + level / 2.0])
    return Interval(value, float(low), float(high), float(np.std(boot, ddof=1)), CLUSTER)


def cluster_bootstrap_means(
    values: np.ndarray,
    clusters: Sequence[object] | np.ndarray,
    *,
    n_boot: int = 1000,
    seed: int | None = 0,
) -> np.ndarray:
    """Return n_boot x k resampled means of k columns of per-turn values (NaN: not counted).

    Whole clusters (conversations) are drawn with replacement, one draw shared by all columns
    so that functions of them (SSA = the mean of two shares) are resampled jointly; each mean
    is a ratio of the drawn clusters' sums and counts, as in ``cluster_ratio_ci``.
    """
    x = np.asarray(values, dtype=float)
    cluster, _ = pd.factorize(np.asarray(clusters, dtype=object))
    n_clusters = int(cluster.max()) + 1 if len(cluster) else 0
    sums, counts = np.zeros((n_clusters, x.shape[1])), np.zeros((n_clusters, x.shape[1]))
    np.add.at(sums, cluster, np.nan_to_num(x))
    np.add.at(counts, cluster, ~np.isnan(x))
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(n_clusters, np.full(n_clusters, 1.0 / n_clusters), size=n_boot)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (draws @ sums) / (draws @ counts)


def chat_clusters(
    chats: np.ndarray, workers: np.ndarray | None, interval: str | None = None
) -> tuple[np.ndarray, str]:
    """Return each turn's resampled cluster and the interval's name: its worker when workers
    hold more than ``REPEAT_RULE`` conversations each on average, else its conversation.

    A conversation has one worker, so conversations are nested in workers: the two-way
    (conversations x workers) bootstrap then reduces to drawing workers with all their
    conversations (Field & Welsh, 2007; drawing the conversations again as well would count
    their variance twice). ``interval`` (None: the report options') "units" keeps the
    conversations, "two-way" always takes the workers.
    """
    choice = report_options().interval if interval is None else interval
    if workers is None or choice == "units" or pd.isna(workers).any():
        return chats, CLUSTER
    per_worker = pd.Series(chats).groupby(workers).nunique().mean()
    if choice == "two-way" or per_worker > REPEAT_RULE:
        return np.asarray(workers, dtype=object), WORKERS
    return chats, CLUSTER


def _fleiss_varying(sum_sq: np.ndarray, cat: np.ndarray, units: np.ndarray, n: float) -> np.ndarray:
    """Fleiss' kappa of resamples whose number of utterances differs from one to the next."""
    p_bar = (sum_sq - units * n) / (units * n * (n - 1.0))
    p = cat / (units * n)[:, None]
    p_e = (p * p).sum(axis=1)
    return np.where(p_e < 1.0, (p_bar - p_e) / (1.0 - p_e), np.nan)


def fleiss_kappa_cluster_ci(
    counts: np.ndarray,
    clusters: Sequence[object] | np.ndarray,
    *,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int | None = 0,
) -> Interval:
    """Return Fleiss' kappa with a percentile bootstrap that draws whole dialogues.

    ``counts`` is the utterances x categories vote table, ``clusters`` each utterance's
    dialogue. A dialogue's utterances share its context and its workers, so they are drawn
    together; the statistic is a function of per-dialogue sums (sum of squared counts, counts
    per category, utterances), which makes a resample one matrix product.
    """
    table = _fleiss_table(counts)
    nan = float("nan")
    if len(table) == 0:
        return Interval(nan, nan, nan, nan, DIALOGUES)
    n = float(table[0].sum())
    dialogue, _ = pd.factorize(np.asarray(clusters, dtype=object))
    per_utterance = np.column_stack([(table * table).sum(axis=1), np.ones(len(table)), table])
    features = np.zeros((int(dialogue.max()) + 1, per_utterance.shape[1]))
    np.add.at(features, dialogue, per_utterance)
    value = float(
        _fleiss_from_sums(features[:, 0].sum(), features[:, 2:].sum(axis=0), len(table), n)
    )
    if n < 2 or len(features) < 2 or n_boot < 1:
        return Interval(value, nan, nan, nan, DIALOGUES)
    patterns, pattern_of = _compress(features)
    parts = []
    with np.errstate(divide="ignore", invalid="ignore"):
        for s in _resampled_sums(patterns, pattern_of, n_boot, seed):
            parts.append(_fleiss_varying(s[:, 0], s[:, 2:], s[:, 1], n))
    boot = np.concatenate(parts)
    boot[~np.isfinite(boot)] = np.nan
    est = _percentile(boot, value, level)
    return Interval(value, est.low, est.high, float(np.nanstd(boot, ddof=1)), DIALOGUES)
