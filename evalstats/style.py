"""Style control for arena rankings: Bradley–Terry strengths net of the replies' style.

Arena voters prefer longer, more formatted replies (LMSYS, "Does style matter?", 2024), so a
model that writes more wins more without being better. ``style_features`` measures a reply's
style; ``bradley_terry_style`` fits Bradley–Terry with the style differences as covariates.
``arena_simulate`` and ``arena_marginal`` simulate arenas with known truth for
``bench/coverage.py`` and the tests. Pure numpy/pandas/scipy; no ORM.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import pandas as pd
from scipy import stats
from scipy.special import expit

from evalstats import ranking
from evalstats.options import report_options
from evalstats.sandwich import design_effect

STYLE_KEYS = ("chars", "headers", "lists", "bold")

_HEADER = re.compile(r"^#{1,6}[ \t]", re.MULTILINE)
_LIST_ITEM = re.compile(r"^[ \t]*(?:[-*+]|\d+\.)[ \t]", re.MULTILINE)
_BOLD = re.compile(r"\*\*[^*\n]+\*\*|__[^_\n]+__")
COEFFICIENT_COLUMNS = ["feature", "coefficient", "ci_low", "ci_high", "scale"]


def style_features(text: str) -> dict[str, int]:
    """Return the style of ``text``: its characters, Markdown headers, list items and bold spans.

    Keys are ``STYLE_KEYS``. A header is a line starting with 1–6 '#' and a space; a list item
    a line starting with optional spaces, then '-', '*', '+' or a number and '.', then a space;
    a bold span ``**x**`` or ``__x__`` within one line (as LMSYS's style control counts them).
    """
    return {
        "chars": len(text),
        "headers": len(_HEADER.findall(text)),
        "lists": len(_LIST_ITEM.findall(text)),
        "bold": len(_BOLD.findall(text)),
    }


@dataclass
class StyleFit:
    """A style-controlled Bradley–Terry fit.

    ``table`` has ``ranking.BT_COLUMNS``, best first: the strengths net of style.
    ``coefficients`` has one row per feature kept: ``feature``, ``coefficient`` (the change in
    the log-odds of winning per standard deviation of the normalised style difference),
    ``ci_low``, ``ci_high`` and ``scale`` (that standard deviation: a coefficient per unit of
    the normalised difference itself is ``coefficient / scale``). ``notes`` says which
    features were dropped and why.
    """

    table: pd.DataFrame
    coefficients: pd.DataFrame
    notes: list[str] = field(default_factory=list)


class _Votes(NamedTuple):
    """Decided judgments as arrays: model indices, standardised style differences, score
    (1 a won, 0 b won, 0.5 both) and weight (1 for a vote, 2 x prior for a virtual tie)."""

    ia: np.ndarray
    ib: np.ndarray
    z: np.ndarray
    score: np.ndarray
    weight: np.ndarray
    k: int


def bradley_terry_style(
    outcomes: pd.DataFrame, *, features: Sequence[str] = STYLE_KEYS, prior: float = 0.0
) -> StyleFit:
    """Rank models by Bradley–Terry log-strength (mean 0) controlled for the replies' style.

    ``outcomes`` is ``ranking.bradley_terry``'s frame plus numeric columns ``<f>_a`` and
    ``<f>_b`` for each feature f (each side's style, e.g. cumulative ``style_features`` of its
    replies). Model: logit P(a beats b) = s_a - s_b + Σ γ_f x_f, x_f the normalised difference
    (f_a - f_b) / (f_a + f_b) (0 when both are 0) divided by its root mean square over the
    decided votes: the standard deviation of the votes counted both ways, so the fit does not
    depend on which side a model was shown (LMSYS centre x instead, which ties γ to a bias for
    side a). "Both" is half a win each way, "neither" is left out; Firth's penalty, as in
    ``ranking.bradley_terry``, and ``prior`` virtual ties (no style difference) per pair that
    met. CIs are Wald at the report's level from the information, widened by the design effect
    of items (conversations) and raters (none under ``method="independent"``). A feature that
    never differs, or is collinear with the models and the features before it, is dropped
    and named in ``notes``. With no features this is ``ranking.bradley_terry``. Raises
    ``ranking.DisconnectedComparisons`` when the comparison graph has several components.
    """
    if prior < 0:
        raise ValueError("the prior must be >= 0")
    missing = [f"{f}_{s}" for f in features for s in "ab" if f"{f}_{s}" not in outcomes]
    if missing:
        raise ValueError(f"outcomes lack the style column(s) {missing}")
    if outcomes.empty:
        empty = pd.DataFrame(columns=COEFFICIENT_COLUMNS)
        return StyleFit(pd.DataFrame(columns=ranking.BT_COLUMNS), empty)
    components = ranking.comparison_components(outcomes)
    if len(components) > 1:
        raise ranking.DisconnectedComparisons(components)
    models = components[0]
    decided = outcomes[outcomes["outcome"] != "neither"]
    index = pd.Index(models)
    ia = index.get_indexer(decided["a"]).astype(np.int64)
    ib = index.get_indexer(decided["b"]).astype(np.int64)
    score = decided["outcome"].map({"a": 1.0, "b": 0.0, "both": 0.5}).to_numpy(float)
    z, kept, scales, notes = _covariates(decided, list(features), ia, ib, len(models))
    votes = _with_prior(_Votes(ia, ib, z, score, np.ones(len(score)), len(models)), prior)
    theta = _fit(votes)
    options = report_options()
    clusters = [
        pd.factorize(decided[c].astype(str))[0]
        for c in ("item", "rater")
        if c in decided and options.method == "design"
    ]
    variance = _variances(votes, theta, len(score), clusters)
    half = float(stats.norm.ppf(0.5 + options.level / 2)) * np.sqrt(variance)
    low, high = theta - half, theta + half
    k = len(models)
    columns = (kept, theta[k:], low[k:], high[k:], scales)
    coefficients = pd.DataFrame(dict(zip(COEFFICIENT_COLUMNS, columns, strict=True)))
    table = _table(outcomes, models, (theta[:k], low[:k], high[:k]), (ia, ib, score))
    return StyleFit(table, coefficients, notes)


def _covariates(
    decided: pd.DataFrame, features: list[str], ia: np.ndarray, ib: np.ndarray, k: int
) -> tuple[np.ndarray, list[str], list[float], list[str]]:
    """Return the standardised style differences (votes x features kept), the features kept,
    their scales and notes on those dropped (no variance, or collinear)."""
    columns: list[np.ndarray] = []
    kept: list[str] = []
    scales: list[float] = []
    notes: list[str] = []
    for name in features:
        fa = decided[f"{name}_a"].to_numpy(float)
        fb = decided[f"{name}_b"].to_numpy(float)
        if (
            not (np.isfinite(fa).all() and np.isfinite(fb).all())
            or (fa < 0).any()
            or (fb < 0).any()
        ):
            raise ValueError(f"the style feature {name!r} must be finite and >= 0 on both sides")
        total = fa + fb
        x = np.divide(fa - fb, total, out=np.zeros(len(fa)), where=total > 0)
        scale = float(np.sqrt(np.mean(x**2))) if len(x) else 0.0
        if scale == 0.0:
            notes.append(f"style feature {name!r} dropped: it never differs between the sides")
            continue
        if not _identified(ia, ib, np.column_stack([*columns, x / scale]), k):
            with_ = f" and {', '.join(kept)}" if kept else ""
            notes.append(f"style feature {name!r} dropped: collinear with the models{with_}")
            continue
        columns.append(x / scale)
        kept.append(name)
        scales.append(scale)
    z = np.column_stack(columns) if columns else np.zeros((len(ia), 0))
    return z, kept, scales, notes


def _identified(ia: np.ndarray, ib: np.ndarray, z: np.ndarray, k: int) -> bool:
    """Whether the strengths (mean 0) and the coefficients of ``z`` are identified: the
    information at equal strengths and no style effect is not singular."""
    ones = np.ones(len(ia))
    eigen = np.linalg.eigvalsh(
        _hessian(_Votes(ia, ib, z, ones, ones, k), ones / 4) + _centre(k, z.shape[1])
    )
    return bool(eigen[0] > 1e-9 * eigen[-1])


def _with_prior(votes: _Votes, prior: float) -> _Votes:
    """Append ``prior`` virtual wins each way per pair that met: a tie of weight 2 x prior
    with no style difference (``ranking.bt_estimate``'s prior)."""
    if not prior:
        return votes
    k = votes.k
    pairs = np.unique(np.minimum(votes.ia, votes.ib) * k + np.maximum(votes.ia, votes.ib))
    n = len(pairs)
    return _Votes(
        np.concatenate([votes.ia, pairs // k]),
        np.concatenate([votes.ib, pairs % k]),
        np.vstack([votes.z, np.zeros((n, votes.z.shape[1]))]),
        np.concatenate([votes.score, np.full(n, 0.5)]),
        np.concatenate([votes.weight, np.full(n, 2.0 * prior)]),
        k,
    )


def _centre(k: int, p: int) -> np.ndarray:
    """The outer product of the unit vector along a common shift of all strengths: added to
    the information, it makes it invertible; subtracted from the inverse, it leaves the
    pseudo-inverse, the covariance of strengths with mean 0 (as ``ranking._information``)."""
    centre = np.zeros((k + p, k + p))
    centre[:k, :k] = 1.0 / k
    return centre


def _eta(votes: _Votes, theta: np.ndarray) -> np.ndarray:
    k = votes.k
    return theta[votes.ia] - theta[votes.ib] + votes.z @ theta[k:]


def _hessian(votes: _Votes, w: np.ndarray) -> np.ndarray:
    """Return Σ w x x' over the votes, x = (e_a - e_b, z): the information when w = p q."""
    k, p = votes.k, votes.z.shape[1]
    pair = np.bincount(votes.ia * k + votes.ib, weights=w, minlength=k * k).reshape(k, k)
    pair = pair + pair.T
    out = np.empty((k + p, k + p))
    out[:k, :k] = np.diag(pair.sum(axis=1)) - pair
    wz = w[:, None] * votes.z
    cross = np.zeros((k, p))
    for j in range(p):
        cross[:, j] = np.bincount(votes.ia, wz[:, j], k) - np.bincount(votes.ib, wz[:, j], k)
    out[:k, k:] = cross
    out[k:, :k] = cross.T
    out[k:, k:] = votes.z.T @ wz
    return out


def _gradient(votes: _Votes, residual: np.ndarray) -> np.ndarray:
    k = votes.k
    by_model = np.bincount(votes.ia, residual, k) - np.bincount(votes.ib, residual, k)
    return np.concatenate([by_model, votes.z.T @ residual])


def _quadratic(votes: _Votes, matrix: np.ndarray) -> np.ndarray:
    """Return x' M x for each vote's x = (e_a - e_b, z)."""
    k, ia, ib, z = votes.k, votes.ia, votes.ib, votes.z
    diagonal = np.diag(matrix)[:k]
    out = diagonal[ia] + diagonal[ib] - 2 * matrix[ia, ib]
    if z.shape[1]:
        cross = matrix[:k, k:]
        out += 2 * np.einsum("ij,ij->i", cross[ia] - cross[ib], z)
        out += np.einsum("ij,ij->i", z @ matrix[k:, k:], z)
    return out


def _fit(votes: _Votes, *, tol: float = 1e-10, max_iter: int = 200) -> np.ndarray:
    """Return Firth's penalised estimates: k strengths (mean 0), then the coefficients.

    ``ranking._fit_firth`` vote by vote: each vote gains half its leverage h = w p q x' I⁺ x
    as a win each way, and Newton steps on that augmented likelihood reach the penalised
    maximum (Heinze & Schemper 2002). Without covariates the leverages of a pair's votes sum
    to the pair's leverage there, so the two fits agree.
    """
    k, p = votes.k, votes.z.shape[1]
    centre = _centre(k, p)
    theta = np.zeros(k + p)
    for _ in range(max_iter):
        prob = expit(_eta(votes, theta))
        base = votes.weight * prob * (1 - prob)
        inverse = np.linalg.inv(_hessian(votes, base) + centre) - centre
        leverage = base * _quadratic(votes, inverse)
        augmented = votes.weight + leverage
        residual = votes.weight * votes.score + leverage / 2 - augmented * prob
        hessian = _hessian(votes, augmented * prob * (1 - prob)) + centre
        step = np.clip(np.linalg.solve(hessian, _gradient(votes, residual)), -2.0, 2.0)
        theta = theta + step
        theta[:k] -= theta[:k].mean()
        if np.max(np.abs(step)) < tol:
            break
    return theta


def _variances(votes: _Votes, theta: np.ndarray, n: int, clusters: list[np.ndarray]) -> np.ndarray:
    """Return the variance of each strength and coefficient: the inverse information (on
    mean-0 strengths) times the design effect of ``clusters`` (codes for the first ``n``
    votes, the real ones), floored at 1, as ``ranking._variances``: the two-way
    Cameron–Gelbach–Miller sandwich over the one that takes every vote as independent."""
    k, p = votes.k, votes.z.shape[1]
    centre = _centre(k, p)
    prob = expit(_eta(votes, theta))
    weight = votes.weight * prob * (1 - prob)
    inverse = np.linalg.inv(_hessian(votes, weight) + centre) - centre
    model = np.diag(inverse).copy()
    if not clusters:
        return model
    ia, ib, z = votes.ia[:n], votes.ib[:n], votes.z[:n]
    # Each vote's score (y - p) x pushed through I⁺: its influence on every parameter.
    own = inverse[ia] - inverse[ib] + z @ inverse[k:]
    own *= (votes.score[:n] - prob[:n])[:, None]
    return model * design_effect(own, clusters)


def _table(
    outcomes: pd.DataFrame,
    models: list[str],
    estimate: tuple[np.ndarray, np.ndarray, np.ndarray],
    decided: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> pd.DataFrame:
    """Return ``ranking.BT_COLUMNS`` (best first) with the rates as ``ranking`` counts them."""
    k = len(models)
    ia, ib, score = decided
    n = pd.concat([outcomes["a"], outcomes["b"]]).value_counts()
    none = outcomes[outcomes["outcome"] == "neither"]
    neither = pd.concat([none["a"], none["b"]]).value_counts()
    won = np.bincount(ia, score, k) + np.bincount(ib, 1 - score, k)
    played = np.bincount(ia, minlength=k) + np.bincount(ib, minlength=k)
    point, low, high = estimate
    table = pd.DataFrame(
        {
            "model": models,
            "strength": point,
            "ci_low": low,
            "ci_high": high,
            "n": [int(n.get(m, 0)) for m in models],
            "win_rate": won / played,
            "neither_rate": [neither.get(m, 0) / n.get(m, 1) for m in models],
        }
    )
    table = table.sort_values("strength", ascending=False, ignore_index=True)
    table.insert(0, "rank", pd.array(np.arange(1, k + 1), dtype="Int64"))
    return table[ranking.BT_COLUMNS]


# --- simulated arenas (bench/coverage.py, the tests) -----------------------------------------


@dataclass(frozen=True)
class ArenaDesign:
    """A simulated arena: every conversation pits two models (a random pair, random sides)
    over 1–4 turns, judged turn by turn by one of ``workers``. A reply's length is
    300 exp(N(log_length of its model, sd_reply)); a vote's logit is s_a - s_b + gamma x, x the
    normalised difference of the sides' cumulative characters, plus the conversation's
    effect N(0, sd_conversation) and the worker's taste t_a - t_b, t ~ N(0, sd_taste) per model.
    """

    strengths: tuple[float, ...]
    log_length: tuple[float, ...] | None = None
    gamma: float = 0.0
    sd_conversation: float = 0.0
    workers: int = 40
    sd_taste: float = 0.0
    sd_reply: float = 0.6


def _arena_votes(
    design: ArenaDesign, rng: np.random.Generator, conversations: int
) -> tuple[np.ndarray, ...]:
    """Return per vote: conversation, worker, models a and b, chars of a and b, x."""
    k = len(design.strengths)
    mu = np.zeros(k) if design.log_length is None else np.asarray(design.log_length)
    first = rng.integers(k, size=conversations)
    second = (first + rng.integers(1, k, size=conversations)) % k
    turns = rng.integers(1, 5, size=conversations)
    conv = np.repeat(np.arange(conversations), turns)
    worker = rng.integers(design.workers, size=conversations)[conv]
    ia, ib = first[conv], second[conv]
    total = np.cumsum(300 * np.exp(rng.normal(mu[np.stack([ia, ib])], design.sd_reply)), axis=1)
    start = np.repeat(np.cumsum(turns) - turns, turns)
    chars = total - np.where(start > 0, total[:, start - 1], 0.0)
    x = (chars[0] - chars[1]) / chars.sum(axis=0)
    return conv, worker, ia, ib, chars[0], chars[1], x


def arena_simulate(
    design: ArenaDesign, rng: np.random.Generator, *, conversations: int
) -> pd.DataFrame:
    """Return one simulated arena's votes: ``bradley_terry_style``'s outcomes with ``item``
    the conversation, ``rater`` the worker, models ``m0``, ``m1``, … and ``chars_a/b``."""
    conv, worker, ia, ib, chars_a, chars_b, x = _arena_votes(design, rng, conversations)
    s = np.asarray(design.strengths)
    taste = rng.normal(0.0, design.sd_taste, (design.workers, len(s)))
    effect = rng.normal(0.0, design.sd_conversation, conversations)[conv]
    eta = s[ia] - s[ib] + design.gamma * x + effect + taste[worker, ia] - taste[worker, ib]
    won = rng.random(len(conv)) < expit(eta)
    names = np.array([f"m{i}" for i in range(len(s))])
    return pd.DataFrame(
        {
            "item": conv,
            "rater": worker,
            "a": names[ia],
            "b": names[ib],
            "outcome": np.where(won, "a", "b"),
            "chars_a": chars_a,
            "chars_b": chars_b,
        }
    )


def arena_marginal(
    design: ArenaDesign, *, conversations: int = 400_000, seed: int = 0
) -> tuple[np.ndarray, float]:
    """Return the strengths (mean 0) and the coefficient of the normalised length difference
    (per unit, not standardised) that ``bradley_terry_style`` converges to in ``design``.

    With conversation effects and tastes the model that fits is the marginal one, whose
    parameters have no closed form: they are the fit to one very large simulated arena
    (``conversations``) in which every vote counts its expected outcome, the vote's win
    probability averaged over the shift N(0, sd_conversation² + 2 sd_taste²) by Gauss–Hermite
    quadrature (so only the sampling of the pairs and lengths is left).
    """
    rng = np.random.default_rng(seed)
    _, _, ia, ib, _, _, x = _arena_votes(design, rng, conversations)
    s = np.asarray(design.strengths)
    sd = float(np.hypot(design.sd_conversation, design.sd_taste * np.sqrt(2.0)))
    nodes, weights = np.polynomial.hermite_e.hermegauss(40)
    eta = s[ia] - s[ib] + design.gamma * x
    expected = expit(eta[:, None] + sd * nodes) @ (weights / weights.sum())
    theta = _fit(_Votes(ia, ib, x[:, None], expected, np.ones(len(x)), len(s)), tol=1e-9)
    return theta[: len(s)], float(theta[-1])
