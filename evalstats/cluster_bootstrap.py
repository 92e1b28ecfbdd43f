"""Bootstraps that draw whole clusters: a chat's turns, a dialogue's utterances.

Pure numpy/pandas, no ORM. The turns of a chat share the chat and its worker, and the
utterances of a dialogue share its context and its workers, so a resample draws each cluster
whole with its counts (Davison & Hinkley, 1997, section 3.8; docs/statistics.md,
"Design-aware intervals"):

- ``cluster_ratio_ci``: a share of turns (interactive SSA) by a bootstrap over conversations.
- ``cluster_bootstrap_means``: several such shares resampled jointly (SSA = their mean).
- ``fleiss_kappa_cluster_ci``: Fleiss' kappa by a bootstrap over dialogues (EmotionLines).
- ``chat_clusters``: conversations or workers, whichever the design makes the cluster;
  ``chat_shares_ci`` the shares' intervals over them.
- ``cluster_bootstrap_groups``, ``bootstrap_contrast``, ``bootstrap_t_contrast``: several
  models' shares resampled together (apart when clusters are nested in models, one joint
  draw when workers cross them) and a difference's interval and p-value: percentile over
  conversations, t on the clusters' degrees of freedom over (few) workers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
from scipy import stats

from evalstats.agreement.bootstrap import _compress, _percentile, _resampled_sums
from evalstats.agreement.kappa import _fleiss_from_sums, _fleiss_table
from evalstats.options import report_options
from evalstats.uncertainty import Contrast, Interval

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


def chat_shares_ci(
    values: np.ndarray,
    chats: np.ndarray,
    workers: np.ndarray | None,
    *,
    n_boot: int,
    seed: int | None,
    level: float = 0.95,
    interval: str | None = None,
    mean: bool = False,
) -> tuple[list[tuple[float, float]], str]:
    """Return each column's share of turns (0/1 values, NaN: not counted) with its interval
    — with ``mean`` also the mean of the shares' (SSA's) — and the interval's name, the
    clusters as ``chat_clusters`` chooses them.

    Over conversations (many) the percentile interval of ``cluster_bootstrap_means``; over
    workers (often 10-40) value ± t · se with the bootstrap variance scaled by G / (G - 1)
    on G - 1 degrees of freedom, as ``bootstrap_t_contrast`` does for a difference, clipped
    to [0, 1]: with 10 workers x 10 chats the percentile interval covered 85.3%
    (docs/statistics.md).
    """
    x = np.asarray(values, dtype=float)
    clusters, method = chat_clusters(chats, workers, interval)
    draws = cluster_bootstrap_means(x, clusters, n_boot=n_boot, seed=seed)
    with np.errstate(divide="ignore", invalid="ignore"):
        value = np.nansum(x, axis=0) / (~np.isnan(x)).sum(axis=0)
    if mean:
        draws = np.column_stack([draws, draws.mean(axis=1)])
        value = np.append(value, value.mean())
    if method == CLUSTER:
        tail = 50.0 * (1.0 - level)
        low, high = np.nanpercentile(draws, [tail, 100.0 - tail], axis=0)
        return list(zip(low.tolist(), high.tolist(), strict=True)), method
    g = len(pd.unique(np.asarray(clusters, dtype=object)))
    out = []
    for k in range(draws.shape[1]):
        est = bootstrap_t_contrast(float(value[k]), [(draws[:, k], g)], level=level)
        out.append((max(est.low, 0.0), min(est.high, 1.0)))
    return out, method


class GroupDraws(NamedTuple):
    """Per group (sorted) n_boot x k resampled means, how many clusters each group's draw
    took, and whether one draw served every group (clusters crossing the groups)."""

    draws: dict[Any, np.ndarray]
    clusters: dict[Any, int]
    joint: bool


def cluster_bootstrap_groups(
    values: np.ndarray,
    clusters: Sequence[object] | np.ndarray,
    groups: Sequence[object] | np.ndarray,
    *,
    n_boot: int = 1000,
    seed: int | None = 0,
) -> GroupDraws:
    """Resample several groups' (models') shares of per-turn values (NaN: not counted).

    Clusters nested in the groups (a conversation belongs to one model) are resampled per
    group, independently: group g (g-th in sorted order) gets ``cluster_bootstrap_means`` of
    its rows with the g-th seed of ``SeedSequence(seed)``, so with two groups the draws are
    those of ``planner.chat_difference``. Clusters that cross the groups (a worker who chatted
    with several models) are drawn once for all groups, each resample's share per group the
    ratio of the drawn clusters' sums and counts in that group: what a worker adds to every
    model is drawn with it, so it cancels from their difference as it does in the data.
    """
    x = np.asarray(values, dtype=float)
    cluster, _ = pd.factorize(np.asarray(clusters, dtype=object))
    group, names = pd.factorize(np.asarray(groups, dtype=object), sort=True)
    per_cluster = pd.Series(group).groupby(cluster).nunique()
    if (per_cluster <= 1).all():
        seeds = np.random.SeedSequence(seed).generate_state(len(names))
        draws = {
            name: cluster_bootstrap_means(
                x[group == g], cluster[group == g], n_boot=n_boot, seed=int(seeds[g])
            )
            for g, name in enumerate(names)
        }
        sizes = {name: len(np.unique(cluster[group == g])) for g, name in enumerate(names)}
        return GroupDraws(draws, sizes, False)
    n_clusters, k = int(cluster.max()) + 1, x.shape[1]
    sums = np.zeros((len(names), n_clusters, k))
    counts = np.zeros((len(names), n_clusters, k))
    np.add.at(sums, (group, cluster), np.nan_to_num(x))
    np.add.at(counts, (group, cluster), ~np.isnan(x))
    rng = np.random.default_rng(seed)
    weights = rng.multinomial(n_clusters, np.full(n_clusters, 1.0 / n_clusters), size=n_boot)
    with np.errstate(divide="ignore", invalid="ignore"):
        draws = {name: (weights @ sums[g]) / (weights @ counts[g]) for g, name in enumerate(names)}
    return GroupDraws(draws, dict.fromkeys(names, n_clusters), True)


def bootstrap_contrast(value: float, draws: np.ndarray, *, level: float = 0.95) -> Contrast:
    """Return a difference with the percentile interval of its bootstrap ``draws`` (NaN draws,
    a resample without labelled turns, left out) and the bootstrap p-value.

    The p-value inverts the percentile interval: (1 + 2 min(#{d <= 0}, #{d >= 0})) / (B + 1),
    the smallest two-sided level at which the interval would exclude 0, counted as a Monte
    Carlo test counts (Davison & Hinkley, 1997, chapter 4), so it is never 0.
    """
    d = np.asarray(draws, dtype=float)
    d = d[np.isfinite(d)]
    nan = float("nan")
    if len(d) < 2:
        return Contrast(value, nan, nan, nan, nan, CLUSTER)
    low, high = np.percentile(d, [50 * (1 - level), 100 - 50 * (1 - level)])
    tail = min(int((d <= 0).sum()), int((d >= 0).sum()))
    p = min(1.0, (1.0 + 2.0 * tail) / (len(d) + 1.0))
    return Contrast(value, float(low), float(high), float(np.std(d, ddof=1)), p, CLUSTER)


def bootstrap_t_contrast(
    value: float, parts: Sequence[tuple[np.ndarray, int]], *, level: float = 0.95
) -> Contrast:
    """Return a difference with a t interval from bootstrap variances over few clusters.

    ``parts``: (draws, clusters) per independently resampled part — the difference's draws
    from one joint draw of G clusters, or each model's draws when drawn apart. Each part's
    bootstrap variance is scaled by G / (G - 1) (the bootstrap's plug-in variance over G
    clusters is that much too small) and the interval is value ± t · se on Satterthwaite's
    (1946) degrees of freedom, G - 1 per part, as ``agreement.twoway`` does: with 10 workers
    the percentile interval of a contrast rejected a true zero in 11% of studies, this one
    in 5.5% (docs/statistics.md).
    """
    nan = float("nan")
    variances, dfs = [], []
    for draws, g in parts:
        d = np.asarray(draws, dtype=float)
        d = d[np.isfinite(d)]
        if len(d) < 2 or g < 2:
            return Contrast(value, nan, nan, nan, nan, WORKERS)
        variances.append(float(np.var(d, ddof=1)) * g / (g - 1.0))
        dfs.append(g - 1.0)
    var = sum(variances)
    terms = sum(v * v / df for v, df in zip(variances, dfs, strict=True))
    df = var * var / terms if terms > 0 else float("inf")
    se = float(np.sqrt(var))
    half = float(stats.t.ppf(0.5 + level / 2.0, df)) * se
    p = float(2.0 * stats.t.sf(abs(value) / se, df)) if se > 0 else nan
    return Contrast(value, value - half, value + half, se, p, WORKERS)


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
