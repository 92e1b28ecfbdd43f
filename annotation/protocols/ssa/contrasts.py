"""Model-vs-model contrasts of sensibleness, specificity and SSA (issue #33).

A report that prints one interval per model invites reading non-overlap as a difference,
which has little power and no error control. ``ssa_contrasts`` gives every pair of models,
per metric, the difference in percentage points with the interval of the design the per-model
scores use — static SSA: crossed items x raters (``uncertainty.crossed_contrast``, the
planner's test); interactive SSA: the bootstrap over conversations, or over workers when they
hold several chats (``cluster_bootstrap.cluster_bootstrap_groups``) — its p-value, Holm's
adjusted p over the pairs of each metric, and the verdict (``evalstats.contrasts``' words).
SSA has no reference model: every pair is compared.
"""

from __future__ import annotations

import warnings
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from evalstats import cluster_bootstrap, uncertainty
from evalstats.contrasts import A_HIGHER, B_HIGHER, CONTRAST_COLUMNS, no_difference
from evalstats.options import report_options

QUESTIONS = ("sensible", "specific")
METRICS = ("sensibleness", "specificity", "ssa")
COLUMNS = ["metric", *CONTRAST_COLUMNS, "ci_method"]


class CrossedDesign(NamedTuple):
    """The raters' effects on the sensible and specific votes and, per metric (``METRICS``),
    how each vote moves its response's majority label (columns ``s`` and ``p``)."""

    effects: uncertainty.RaterEffects
    slopes: list[pd.DataFrame]


def crossed_design(judgments: pd.DataFrame) -> CrossedDesign:
    """Return the crossed items x raters design of static SSA's votes.

    The raters' leniency (a 2 x 2 covariance over the sensible and specific votes) comes from
    the votes of every model; a vote counts through whether it was pivotal for its response's
    majority (docs/statistics.md, "Design-aware intervals"); SSA's slope is half of each.
    """
    answers = judgments[judgments["question"].isin(QUESTIONS)]
    votes = (
        answers.pivot_table(
            index=["item", "rater"], columns="question", values="value", aggfunc="first"
        )
        .reindex(columns=list(QUESTIONS))
        .reset_index()
    )
    votes.columns.name = None
    for question in QUESTIONS:
        votes[question] = votes[question].map({"yes": 1.0, "no": 0.0})
    votes = votes.dropna(subset=list(QUESTIONS))
    votes["ws"] = uncertainty.pivotal_weights(votes, "sensible")
    votes["wp"] = uncertainty.pivotal_weights(votes, "specific")
    effects = uncertainty.rater_effects(votes, list(QUESTIONS), weights=["ws", "wp"])
    ds = uncertainty.majority_slopes(votes, "sensible")
    dp = uncertainty.majority_slopes(votes, "specific")
    slopes = [
        votes.assign(s=ds, p=0.0),
        votes.assign(s=0.0, p=dp),
        votes.assign(s=ds / 2, p=dp / 2),
    ]
    return CrossedDesign(effects, slopes)


def ssa_contrasts(
    labels: pd.DataFrame,
    *,
    judgments: pd.DataFrame | None = None,
    conversations: pd.Series | None = None,
    workers: pd.Series | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    level: float | None = None,
) -> pd.DataFrame:
    """Return every pair of models per metric: a - b in points, its interval, p, Holm, verdict.

    ``labels`` as ``ssa_labels`` gives them; the other arguments as ``ssa_scores``'s, whose
    interval each contrast follows: with the workers' ``judgments`` the crossed items x raters
    t interval and t test of the difference (a rater who judged both models shifts both alike);
    with each item's conversation (and ``workers``) a bootstrap of the difference over
    conversations (percentile), or over workers when they hold several chats (drawn once for
    all models when they chat with several; t on their degrees of freedom); otherwise (and
    with the report options' method "independent") over responses (percentile).
    ``low``/``high`` are at ``level`` for the pair alone; ``p_holm`` is Holm's adjustment over
    the pairs of one metric, and the verdict names the higher model when it is below
    1 - ``level``. Columns: ``COLUMNS``.
    """
    options = report_options()
    level = options.level if level is None else level
    n_boot = options.n_boot or n_boot
    seed = options.seed if options.seed else seed
    independent = options.method == "independent"
    if independent:
        judgments = conversations = None
    labels = labels.dropna(subset=["model"])
    models = sorted(labels["model"].unique())
    if len(models) < 2:
        return pd.DataFrame(columns=COLUMNS)
    if judgments is not None and not judgments.empty:
        rows = _crossed_rows(labels, models, crossed_design(judgments), level)
    elif n_boot:
        chats = None if conversations is None else conversations.reindex(labels["item"])
        who = None if workers is None else workers.reindex(labels["item"])
        rows = _bootstrap_rows(labels, chats, who, n_boot=n_boot, seed=seed, level=level)
        if independent:
            for row in rows:
                row["ci_method"] += " (independent: comparison only)"
    else:
        return pd.DataFrame(columns=COLUMNS)
    return _verdicts(pd.DataFrame(rows), level)


def _pairs(models: list[Any]) -> list[tuple[Any, Any]]:
    """Every pair (a, b) of the models, a before b in their (sorted) order."""
    return [(a, b) for i, a in enumerate(models) for b in models[i + 1 :]]


def _crossed_rows(
    labels: pd.DataFrame, models: list[Any], design: CrossedDesign, level: float
) -> list[dict[str, Any]]:
    """Return the pairs' crossed contrasts (in points) per metric, unadjusted."""
    sens = pd.Series(labels["sensible"].astype(float).to_numpy(), index=labels["item"])
    spec = pd.Series(labels["specific"].astype(float).to_numpy(), index=labels["item"])
    model = labels.set_index("item")["model"]
    rows = []
    for metric, score, slopes in zip(
        METRICS, (sens, spec, (sens + spec) / 2), design.slopes, strict=True
    ):
        by_model = {m: score[model == m] for m in models}
        for a, b in _pairs(models):
            diff = uncertainty.crossed_contrast(
                by_model[a], by_model[b], slopes, design.effects, columns=["s", "p"], level=level
            )
            rows.append(_row(metric, a, b, diff, uncertainty.CROSSED))
    return rows


def _bootstrap_rows(
    labels: pd.DataFrame,
    chats: pd.Series | None,
    workers: pd.Series | None,
    *,
    n_boot: int,
    seed: int,
    level: float,
) -> list[dict[str, Any]]:
    """Return the pairs' bootstrap contrasts (in points) per metric, unadjusted: clusters as
    the per-model intervals take them (conversations, workers, or the responses alone).

    Conversations and responses (many clusters; the planner's test): the percentile interval
    of the difference's draws. Workers (often few): the t interval on their degrees of freedom
    (``cluster_bootstrap.bootstrap_t_contrast``), where the percentile one is too narrow.
    """
    if chats is None:
        clusters, method = labels["item"].to_numpy(), "bootstrap over responses"
    else:
        who = None if workers is None else workers.to_numpy()
        clusters, method = cluster_bootstrap.chat_clusters(chats.fillna("").to_numpy(), who)
    values = np.column_stack(
        [labels["sensible"].astype(float).to_numpy(), labels["specific"].astype(float).to_numpy()]
    )
    boot = cluster_bootstrap.cluster_bootstrap_groups(
        values, clusters, labels["model"].to_numpy(), n_boot=n_boot, seed=seed
    )
    by_workers = method == cluster_bootstrap.WORKERS
    method += "; one draw for all models" if boot.joint else "; each model drawn apart"
    if by_workers:
        method += ", t on the workers' degrees of freedom"
    triples = {m: np.column_stack([d, d.mean(axis=1)]) for m, d in boot.draws.items()}
    rows = []
    for k, metric in enumerate(METRICS):
        for a, b in _pairs(sorted(boot.draws)):
            value = float(_shares(labels, values, a)[k] - _shares(labels, values, b)[k])
            da, db = triples[a][:, k], triples[b][:, k]
            if not by_workers:
                diff = cluster_bootstrap.bootstrap_contrast(value, da - db, level=level)
            elif boot.joint:
                parts = [(da - db, boot.clusters[a])]
                diff = cluster_bootstrap.bootstrap_t_contrast(value, parts, level=level)
            else:
                parts = [(da, boot.clusters[a]), (db, boot.clusters[b])]
                diff = cluster_bootstrap.bootstrap_t_contrast(value, parts, level=level)
            rows.append(_row(metric, a, b, diff, method))
    return rows


def _shares(labels: pd.DataFrame, values: np.ndarray, model: Any) -> tuple[float, float, float]:
    """Return the model's sensibleness, specificity and SSA as shares (ties left out)."""
    mine = values[(labels["model"] == model).to_numpy()]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # only tied labels on a question
        s, p = np.nanmean(mine, axis=0)
    return float(s), float(p), float((s + p) / 2)


def _row(metric: str, a: Any, b: Any, diff: uncertainty.Contrast, method: str) -> dict[str, Any]:
    """Return one pair's row with the difference and its interval in percentage points."""
    scale = 100.0
    return {
        "metric": metric,
        "model_a": a,
        "model_b": b,
        "difference": diff.value * scale,
        "se": diff.se * scale,
        "low": diff.low * scale,
        "high": diff.high * scale,
        "p": diff.p,
        "ci_method": method,
    }


def _verdicts(table: pd.DataFrame, level: float) -> pd.DataFrame:
    """Add Holm's adjusted p over the pairs of each metric and the verdict it implies."""
    table["p_holm"] = np.nan
    for _, part in table.groupby("metric", sort=False):
        table.loc[part.index, "p_holm"] = uncertainty.holm(part["p"].to_numpy(dtype=float))
    found = table["p_holm"] < 1 - level
    table["verdict"] = np.where(
        found & (table["difference"] > 0),
        A_HIGHER,
        np.where(found & (table["difference"] < 0), B_HIGHER, no_difference(level)),
    )
    return table.reindex(columns=COLUMNS)


def contrasts_note(level: float | None = None) -> str:
    """Return the report's note on the ``ssa_contrasts`` table."""
    level = report_options().level if level is None else level
    return (
        f"ssa_contrasts: every pair of models (SSA has no reference model) on each metric, "
        f"the difference A − B in points with its {100 * level:g}% CI for that pair alone, by "
        "the same design as the scores' CIs (ci_method), its p-value, and Holm's p over the "
        f"pairs of that metric (p_holm); the verdict names the higher model when p_holm < "
        f"{1 - level:g}. Read differences here: overlapping per-model CIs do not show that "
        "two models are alike, nor do separate ones give the error rate of a test."
    )
