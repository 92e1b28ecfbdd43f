"""Automatic metrics reported beside the human ones (PROTOCOLS.md §7). Pure: plain lists and
arrays in, numbers and figures out; no ORM.

- ``perplexity``: exp of the mean negative log-likelihood per token over all gold responses
  (tokens pooled across responses, as language-model perplexity is reported).
- ``bleu``: corpus BLEU-1, -2, -3, -4 by sacrebleu (cumulative n-gram orders, sacrebleu's
  default 13a tokenisation and exponential smoothing) and their average, on sacrebleu's 0–100
  scale, as ED reports "average of BLEU-1..4".
- ``distinct_n``: distinct n-grams / all n-grams over all responses (Li et al. 2016).
- ``precision_at_1``: P@1,N, how often the gold candidate scores highest (ED's P@1,100).
- ``correlation``: Pearson, Spearman and R² of an automatic metric against a human score across
  models (Meena: perplexity vs SSA, R² = 0.93), and ``correlation_figure`` draws the scatter.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from modelhub.decoding import words


def perplexity(token_logprobs: Iterable[Sequence[float]]) -> float:
    """Return exp(−mean log-likelihood per token) over all responses' tokens (natural logs)."""
    values = [lp for response in token_logprobs for lp in response]
    if not values:
        raise ValueError("perplexity needs at least one scored token")
    return math.exp(-math.fsum(values) / len(values))


@dataclass(frozen=True)
class Bleu:
    """Corpus BLEU-1..4 and their average, 0–100."""

    bleu1: float
    bleu2: float
    bleu3: float
    bleu4: float
    n: int

    @property
    def average(self) -> float:
        return (self.bleu1 + self.bleu2 + self.bleu3 + self.bleu4) / 4


def bleu(hypotheses: Sequence[str], references: Sequence[str]) -> Bleu:
    """Return corpus BLEU-1..4 of the hypotheses against one reference each (sacrebleu)."""
    from sacrebleu.metrics import BLEU

    if len(hypotheses) != len(references) or not hypotheses:
        raise ValueError("BLEU needs one reference per hypothesis, and at least one of each")
    scores = [
        BLEU(max_ngram_order=n).corpus_score(list(hypotheses), [list(references)]).score
        for n in (1, 2, 3, 4)
    ]
    return Bleu(
        bleu1=scores[0], bleu2=scores[1], bleu3=scores[2], bleu4=scores[3], n=len(hypotheses)
    )


def distinct_n(texts: Sequence[str], n: int) -> float:
    """Return the number of distinct n-grams divided by the number of n-grams (0 if none)."""
    if n < 1:
        raise ValueError("n must be at least 1")
    grams = [
        tuple(tokens[i : i + n]) for tokens in map(words, texts) for i in range(len(tokens) - n + 1)
    ]
    return len(set(grams)) / len(grams) if grams else 0.0


def precision_at_1(scores: Any, gold: int | Sequence[int] = 0) -> float:
    """Return the share of rows whose highest score is the gold column.

    ``scores`` is (examples × candidates), e.g. 100 candidates for P@1,100; ``gold`` is the gold
    column, one for all rows or one per row. Ties count against the model (a tie is not a pick).
    """
    matrix = np.asarray(scores, dtype=float)
    if matrix.ndim != 2 or matrix.shape[0] == 0 or matrix.shape[1] < 2:
        raise ValueError("scores must be a non-empty (examples × candidates) matrix, ≥ 2 columns")
    gold_index = np.broadcast_to(np.asarray(gold), (matrix.shape[0],))
    gold_scores = matrix[np.arange(matrix.shape[0]), gold_index]
    others = matrix.copy()
    others[np.arange(matrix.shape[0]), gold_index] = -np.inf
    return float(np.mean(gold_scores > others.max(axis=1)))


def distractor_sets(
    references: Sequence[str], *, size: int = 100, seed: int = 0
) -> list[list[str]]:
    """Return, per reference, a candidate set of ``size``: the reference first, then others
    drawn at random from the other references (ED's P@1,100 set-up)."""
    distinct = list(dict.fromkeys(references))
    if len(distinct) < size:
        raise ValueError(f"need at least {size} distinct references, got {len(distinct)}")
    rng = np.random.default_rng(seed)
    sets = []
    for reference in references:
        pool = [r for r in distinct if r != reference]
        picks = rng.choice(len(pool), size=size - 1, replace=False)
        sets.append([reference, *(pool[i] for i in picks)])
    return sets


@dataclass(frozen=True)
class Correlation:
    """How an automatic metric tracks a human score across models."""

    pearson: float
    pearson_p: float
    spearman: float
    spearman_p: float
    r2: float  # of the least-squares line human ≈ slope · metric + intercept
    slope: float
    intercept: float
    n: int


def correlation(metric: Sequence[float], human: Sequence[float]) -> Correlation:
    """Return Pearson's r, Spearman's ρ (with p-values) and the R² of a linear fit."""
    from scipy import stats

    x, y = np.asarray(metric, dtype=float), np.asarray(human, dtype=float)
    if x.shape != y.shape or x.ndim != 1 or len(x) < 3:
        raise ValueError("correlation needs two equally long lists of at least 3 models")
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        raise ValueError("correlation is undefined when every model has the same value")
    pearson = stats.pearsonr(x, y)
    spearman = stats.spearmanr(x, y)
    fit = stats.linregress(x, y)
    return Correlation(
        pearson=float(pearson.statistic),
        pearson_p=float(pearson.pvalue),
        spearman=float(spearman.statistic),
        spearman_p=float(spearman.pvalue),
        r2=float(fit.rvalue**2),
        slope=float(fit.slope),
        intercept=float(fit.intercept),
        n=len(x),
    )


def correlation_figure(
    names: Sequence[str],
    metric: Sequence[float],
    human: Sequence[float],
    *,
    metric_label: str = "perplexity",
    human_label: str = "SSA (%)",
) -> Any:
    """Return a matplotlib Figure (Agg, no pyplot state): one point per model, the fitted line
    and R² in the title, as Meena's perplexity–SSA plot. Save it with ``fig.savefig(path)``."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fit = correlation(metric, human)
    if len(names) != fit.n:
        raise ValueError("one name per model, please")
    figure = Figure(figsize=(5, 4), layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    axes.scatter(metric, human, color="tab:blue", zorder=3)
    for name, x, y in zip(names, metric, human, strict=True):
        axes.annotate(name, (x, y), textcoords="offset points", xytext=(4, 4), fontsize=8)
    xs = np.linspace(min(metric), max(metric), 50)
    axes.plot(xs, fit.slope * xs + fit.intercept, color="tab:gray", linestyle="--")
    axes.set_xlabel(metric_label)
    axes.set_ylabel(human_label)
    axes.set_title(f"{human_label} vs {metric_label}: R² = {fit.r2:.2f} (n = {fit.n} models)")
    axes.grid(alpha=0.3)
    return figure
