"""Bradley–Terry with ties as a model of their own: Davidson (1970).

``ranking.bradley_terry`` counts a "both" judgment as half a win each way. That is a
convention, not a model of ties: when ties are frequent it pulls the strengths together
(the strengths it estimates are those of the half-win data, not those of a process in which
close models tie more often). Davidson's model gives a tie its own probability::

    P(i beats j) = pi_i / D,   P(tie) = nu sqrt(pi_i pi_j) / D,
    D = pi_i + pi_j + nu sqrt(pi_i pi_j),

with strengths pi_i = exp(theta_i) (log-strengths of mean 0, as in ``ranking``) and a
tie parameter nu > 0. In the parameters (theta, log nu) it is a conditional logit: each
judgment picks one of three outcomes with linear predictors theta_i, theta_j and
log nu + (theta_i + theta_j) / 2, so the log-likelihood is concave and the observed
information equals the expected one. ``davidson_fit`` maximises it by Newton steps.
Intervals are Wald intervals from the information, widened like ``ranking``'s by the design
effect of items and raters (Cameron, Gelbach & Miller's two-way sandwich over the
independent one, floored at 1). Pure numpy/pandas; no ORM.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from evalstats import ranking
from evalstats.options import report_options
from evalstats.sandwich import design_effect

TIE_CONVENTIONS = ("half", "davidson")


class NoFiniteEstimate(ValueError):
    """The Davidson likelihood has no finite maximum (e.g. a model never lost nor tied)."""


@dataclass(frozen=True)
class DavidsonFit:
    """Log-strengths (mean 0), log nu (-inf without ties) and each contrast's variance."""

    strength: np.ndarray
    log_nu: float
    variances: np.ndarray
    log_nu_variance: float


def _pairs(ia: np.ndarray, ib: np.ndarray, outcome: np.ndarray, k: int) -> tuple[np.ndarray, ...]:
    """Return the distinct pairs (i, j), their outcome counts (a won, b won, tie) and each
    judgment's pair index."""
    key = ia.astype(np.int64) * k + ib
    keys, where = np.unique(key, return_inverse=True)
    counts = np.zeros((len(keys), 3))
    np.add.at(counts, (where, outcome), 1.0)
    return keys // k, keys % k, counts, where


def _design(first: np.ndarray, second: np.ndarray, k: int, ties: bool) -> np.ndarray:
    """Return each pair's three outcomes' predictor rows (pairs x 3 x parameters)."""
    rows = np.zeros((len(first), 3, k + ties))
    at = np.arange(len(first))
    rows[at, 0, first] = 1.0
    rows[at, 1, second] = 1.0
    rows[at, 2, first] = 0.5
    rows[at, 2, second] += 0.5
    if ties:
        rows[:, 2, k] = 1.0
    return rows


def _probabilities(rows: np.ndarray, beta: np.ndarray, ties: bool) -> np.ndarray:
    """Return each pair's outcome probabilities (pairs x 3); without ties nu is 0."""
    eta = rows @ beta
    if not ties:
        eta[:, 2] = -np.inf
    eta -= eta.max(axis=1, keepdims=True)
    p = np.exp(eta)
    return p / p.sum(axis=1, keepdims=True)


def _information(rows: np.ndarray, counts: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Return the information: sum over pairs of n (sum_o p_o a_o a_o' - abar abar')."""
    n = counts.sum(axis=1)
    mean = np.einsum("po,pod->pd", p, rows)
    second = np.einsum("p,po,pod,poe->de", n, p, rows, rows)
    return second - np.einsum("p,pd,pe->de", n, mean, mean)


def _newton(
    rows: np.ndarray, counts: np.ndarray, k: int, ties: bool, *, tol: float, max_iter: int
) -> tuple[np.ndarray, np.ndarray]:
    """Return the maximum-likelihood parameters and the inverse information on mean-0 strengths."""
    d = rows.shape[2]
    centre = np.zeros((d, d))
    centre[:k, :k] = 1.0 / k
    beta, step = np.zeros(d), np.full(d, np.inf)
    n = counts.sum(axis=1)
    for _ in range(max_iter):
        p = _probabilities(rows, beta, ties)
        gradient = np.einsum("po,pod->d", counts - n[:, None] * p, rows)
        try:
            step = np.linalg.solve(_information(rows, counts, p) + centre, gradient)
        except np.linalg.LinAlgError:
            break  # the information vanished: some parameter went off to infinity
        beta = beta + np.clip(step, -2.0, 2.0)
        beta[:k] -= beta[:k].mean()
        if np.max(np.abs(step)) < tol and np.max(np.abs(beta)) < 30:
            break
    if not np.max(np.abs(step)) < tol or not np.max(np.abs(beta)) < 30:
        raise NoFiniteEstimate(
            "the Davidson likelihood has no finite maximum (a model that never lost, or only "
            "ties); add virtual wins (bt_prior) or more comparisons"
        )
    p = _probabilities(rows, beta, ties)
    inverse = np.linalg.inv(_information(rows, counts, p) + centre) - centre
    return beta, inverse


def davidson_fit(
    ia: np.ndarray,
    ib: np.ndarray,
    score: np.ndarray,
    *,
    k: int,
    prior: float = 0.0,
    clusters: list[np.ndarray] | None = None,
    contrasts: np.ndarray | None = None,
    tol: float = 1e-10,
    max_iter: int = 100,
) -> DavidsonFit:
    """Fit Davidson's ties model to ``k`` connected models; return a ``DavidsonFit``.

    ``ia``, ``ib`` index each decided judgment's models, ``score`` is 1 (a won), 0 (b won)
    or 0.5 (a tie, "both"); ``prior`` virtual wins each way per pair that met are added to
    the counts. ``contrasts`` (rows over the k log-strengths; identity by default) get the
    model's variance widened by the design effect of ``clusters`` (codes per judgment:
    items, raters; none: the model's variance alone). Without any tie nu is 0 (log_nu
    -inf) and the fit is plain Bradley–Terry by maximum likelihood. Raises
    ``NoFiniteEstimate`` when the likelihood has no finite maximum.
    """
    score = np.asarray(score, dtype=float)
    outcome = np.where(score == 1.0, 0, np.where(score == 0.0, 1, 2))
    ties = bool((outcome == 2).any())
    first, second, counts, where = _pairs(np.asarray(ia), np.asarray(ib), outcome, k)
    counts[:, :2] += prior
    rows = _design(first, second, k, ties)
    beta, inverse = _newton(rows, counts, k, ties, tol=tol, max_iter=max_iter)
    contrasts = np.eye(k) if contrasts is None else np.asarray(contrasts, dtype=float)
    full = np.zeros((len(contrasts), rows.shape[2]))
    full[:, :k] = contrasts
    model = np.einsum("ci,ij,cj->c", full, inverse, full)
    # Each judgment's score is its outcome's row minus the expected row; through I+ it is
    # the judgment's influence on each contrast (built per pair and outcome, then taken).
    p = _probabilities(rows, beta, ties)
    centred = rows - np.einsum("po,pod->pd", p, rows)[:, None, :]
    influence = centred @ (full @ inverse).T
    effect = design_effect(influence[where, outcome], clusters or [])
    log_nu = float(beta[k]) if ties else -np.inf
    return DavidsonFit(
        strength=beta[:k],
        log_nu=log_nu,
        variances=model * effect,
        log_nu_variance=float(inverse[k, k]) if ties else np.nan,
    )


def judged(
    outcomes: pd.DataFrame, models: list[str]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[np.ndarray]]:
    """Return the decided judgments among ``models`` as model indices, scores (1, 0, 0.5)
    and the cluster codes (items, raters) the report options ask for."""
    inside = outcomes["a"].isin(models) & outcomes["b"].isin(models)
    decided = outcomes[inside & outcomes["outcome"].isin(["a", "b", "both"])]
    index = pd.Index(models)
    ia = index.get_indexer(decided["a"]).astype(np.int64)
    ib = index.get_indexer(decided["b"]).astype(np.int64)
    score = decided["outcome"].map({"a": 1.0, "b": 0.0, "both": 0.5}).to_numpy(float)
    clusters = []
    if report_options().method == "design":
        clusters = [
            pd.factorize(decided[c].astype(str))[0] for c in ("item", "rater") if c in decided
        ]
    return ia, ib, score, clusters


def pair_contrast_matrix(k: int) -> np.ndarray:
    """Return the identity (k rows) stacked on every pair's difference e_i - e_j (i < j)."""
    first, second = np.triu_indices(k, 1)
    differences = np.zeros((len(first), k))
    differences[np.arange(len(first)), first] = 1.0
    differences[np.arange(len(first)), second] = -1.0
    return np.vstack([np.eye(k), differences])


def implied_covariance(variances: np.ndarray, k: int) -> np.ndarray:
    """Return the covariance whose strengths and pairwise differences have ``variances``
    (ordered as ``pair_contrast_matrix``): Cov(i, j) = (V_i + V_j - V_{i-j}) / 2.

    Each variance carries its own design effect, so no single widened covariance exists;
    this one reproduces every variance a pairwise contrast needs exactly. Without a design
    effect it is the model's covariance itself.
    """
    covariance = np.diag(variances[:k]).astype(float)
    first, second = np.triu_indices(k, 1)
    cross = (variances[first] + variances[second] - variances[k:]) / 2
    covariance[first, second] = covariance[second, first] = cross
    return covariance


def strengths(
    outcomes: pd.DataFrame, models: list[str], *, ties: str, prior: float
) -> tuple[np.ndarray, np.ndarray, float]:
    """Return the log-strengths of the connected ``models``, their (design-widened)
    covariance and log nu (NaN under the half-win convention ``ties="half"``)."""
    if ties not in TIE_CONVENTIONS:
        raise ValueError(f"ties must be one of {TIE_CONVENTIONS}, not {ties!r}")
    k = len(models)
    ia, ib, score, clusters = judged(outcomes, models)
    contrasts = pair_contrast_matrix(k)
    if ties == "half":
        point, variances = ranking.bt_estimate(
            ia, ib, score, k=k, prior=prior, clusters=clusters, contrasts=contrasts
        )
        return point, implied_covariance(variances, k), np.nan
    fit = davidson_fit(ia, ib, score, k=k, prior=prior, clusters=clusters, contrasts=contrasts)
    return fit.strength, implied_covariance(fit.variances, k), fit.log_nu


def davidson_components(
    outcomes: pd.DataFrame, *, prior: float = 0.0
) -> list[tuple[pd.DataFrame, float]]:
    """Return per component of the comparison graph (largest first) the Bradley–Terry table
    (``ranking.BT_COLUMNS``) with Davidson's strengths and Wald CIs, and its nu.

    ``n``, ``win_rate`` and ``neither_rate`` are ``ranking.bradley_terry_components``'s.
    A component without decided judgments keeps NaN strengths and nu.
    """
    tables = ranking.bradley_terry_components(outcomes, prior=prior)
    z = float(stats.norm.ppf(0.5 + report_options().level / 2))
    result = []
    for table in tables:
        models = sorted(table["model"])
        table = table.set_index("model").loc[models].reset_index()
        nu = np.nan
        if table["strength"].notna().any():
            ia, ib, score, clusters = judged(outcomes, models)
            fit = davidson_fit(ia, ib, score, k=len(models), prior=prior, clusters=clusters)
            se = np.sqrt(fit.variances)
            table["strength"] = fit.strength
            table["ci_low"], table["ci_high"] = fit.strength - z * se, fit.strength + z * se
            nu = float(np.exp(fit.log_nu))
        table = table.sort_values("strength", ascending=False, ignore_index=True)
        ranked = table["strength"].notna()
        table["rank"] = pd.array([pd.NA] * len(table), dtype="Int64")
        table.loc[ranked, "rank"] = np.arange(1, int(ranked.sum()) + 1)
        result.append((table[ranking.BT_COLUMNS], nu))
    return result
