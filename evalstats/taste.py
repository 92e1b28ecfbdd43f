"""The raters' taste per model: a rater x model variance component, by moments (no ORM).

A rater's effect on the ratings of one model is b_r + u_rm: a leniency b_r the rater brings to
every model (variance tau, ``evalstats.raters.rater_effects``) and a taste u_rm for that model
(variance omega, independent across models). In a difference of two models' means the
leniency of a rater who judged both cancels; the taste difference u_rA - u_rB does not. So the
raters' effects covary by V = tau + omega within a model and by tau across models, and
``rater_model_effects`` estimates omega = V - tau from the raters who rated several models
(docs/statistics.md, "Design-aware intervals"): V by ``rater_effects`` with every (rater,
model) pair as a rater of its own, tau from the cross-products of a rater's mean residuals in
two models, whose expectation is tau times a coefficient of the design alone (the noise and the
items of two models are independent). Both are unbiased; omega below 0 is 0.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd
from scipy import sparse

from evalstats.raters import RaterEffects, rater_effects


class Cross(NamedTuple):
    """Every two (rater, model) pairs of one rater in two models, and their design.

    ``g_a``, ``g_b``: the rater's mean residual in each model; ``weight``: 1 / (1/n_a + 1/n_b)
    for n ratings in each; ``coef``: E[g_a g_b] / tau, from the design alone.
    """

    rater: np.ndarray  # the rater's label
    g_a: np.ndarray
    g_b: np.ndarray
    weight: np.ndarray
    coef: np.ndarray


def _residuals(data: pd.DataFrame, column: str, group: str) -> tuple[pd.DataFrame, np.ndarray]:
    """Return the votes used and their residuals from their cell's mean, as rater_effects does.

    A cell is an item where items have several ratings (the items and the models' means drop
    out), else the model (one rating per item: the item and the noise stay in the residual).
    """
    m = data.groupby("item")["rater"].transform("size").to_numpy()
    if (m >= 2).any():
        data = data[m >= 2]
        cell = data["item"]
    else:
        cell = data[group]
    data = data.assign(_cell=pd.factorize(cell)[0])
    y = data[column].to_numpy(dtype=float)
    return data, y - data.groupby("_cell")[column].transform("mean").to_numpy(dtype=float)


def _pairs(data: pd.DataFrame, group: str) -> tuple[np.ndarray, np.ndarray]:
    """Return each vote's rater code and (rater, group) pair code."""
    rater, _ = pd.factorize(data["rater"])
    code, groups = pd.factorize(data[group])
    return rater, pd.factorize(rater * len(groups) + code)[0]


def cross_products(votes: pd.DataFrame, *, group: str = "model", column: str = "value") -> Cross:
    """Return the cross-products' parts of every rater who rated two of the groups.

    A pair p = (rater r, model m) has mean residual g_p = sum_s alpha_ps beta_sm + noise, with
    alpha_ps = [s = r] - C_ps, C_ps = sum over r's cells in m of (r's share of its ratings in
    m there) x (s's share of the cell's ratings). As effects covary by tau across models and
    noise does not, E[g_p g_q] = tau alpha_p . alpha_q for two models of one rater.
    """
    data, z = _residuals(votes.dropna(subset=[column]), column, group)
    rater, pair = _pairs(data, group)
    cell = data["_cell"].to_numpy()
    n_pairs, n_raters, n_cells = int(pair.max()) + 1, int(rater.max()) + 1, int(cell.max()) + 1
    n_p = np.bincount(pair, minlength=n_pairs).astype(float)
    g = np.bincount(pair, weights=z, minlength=n_pairs) / n_p
    share = sparse.csr_matrix((1.0 / n_p[pair], (pair, cell)), shape=(n_pairs, n_cells))
    m_c = np.bincount(cell, minlength=n_cells).astype(float)
    fill = sparse.csr_matrix((1.0 / m_c[cell], (cell, rater)), shape=(n_cells, n_raters))
    c = sparse.csr_matrix(share @ fill)  # pairs x raters
    table = pd.DataFrame({"p": np.arange(n_pairs), "rater": np.zeros(n_pairs, dtype=int)})
    table.loc[pair, "rater"] = rater
    both = table.merge(table, on="rater", suffixes=("_a", "_b"))
    both = both[both["p_a"] < both["p_b"]]
    p, q, r = (both[k].to_numpy() for k in ("p_a", "p_b", "rater"))
    if not len(p):
        empty = np.zeros(0)
        return Cross(np.zeros(0, dtype=object), empty, empty, empty, empty)
    own = np.asarray(c[p, r]).ravel() + np.asarray(c[q, r]).ravel()
    shared = np.asarray(c[p].multiply(c[q]).sum(axis=1)).ravel()
    weight = 1.0 / (1.0 / n_p[p] + 1.0 / n_p[q])
    labels = pd.unique(data["rater"])  # in factorize's order
    return Cross(np.asarray(labels)[r], g[p], g[q], weight, 1.0 - own + shared)


def within_model_effects(
    votes: pd.DataFrame, *, group: str = "model", column: str = "value"
) -> RaterEffects:
    """Estimate V = tau + omega, the raters' variance within a ``group`` (a 1 x 1 RaterEffects).

    ``rater_effects`` with every (rater, group) pair as a rater of its own, pooled over the
    groups: a rater's leniency and taste for a model move all of its ratings of that model
    alike, so a mean of one model's ratings has this rater variance, not tau. Where no rater
    rated two groups, the pairs are the raters and this is ``rater_effects`` itself.
    """
    data = votes.dropna(subset=[column])
    return rater_effects(data.assign(rater=_pairs(data, group)[1]), [column], group=group)


def rater_model_effects(
    votes: pd.DataFrame, *, group: str = "model", column: str = "value"
) -> RaterEffects:
    """Estimate omega, the variance of the raters' taste per ``group`` (a 1 x 1 RaterEffects).

    ``votes`` has ``item``, ``rater``, ``group`` and ``column``; items are nested in groups.
    omega = V - tau: V the raters' variance within a group (``rater_effects`` of (rater,
    group) pairs), tau = sum w g_a g_b / sum w alpha_a . alpha_b over the raters' pairs of
    groups (``cross_products``), truncated at 0. Its degrees of freedom are Satterthwaite's
    from the raters' differences d = g_a - g_b, whose expectation is about 2 omega alpha_a .
    alpha_b plus noise: Var(sum w d^2) ~ (2/3) sum (w d^2)^2 (a normal d has E d^4 =
    3 (E d^2)^2), at most the number of raters in two groups minus 1. Without such raters,
    omega is 0 (nothing in a difference depends on it).
    """
    zero = RaterEffects(np.zeros((1, 1)), float("inf"))
    data = votes.dropna(subset=[column])
    cross = cross_products(data, group=group, column=column)
    n_both = len(np.unique(cross.rater))
    if n_both < 2 or not (cross.weight * cross.coef).sum() > 0:
        return zero
    within = within_model_effects(data, group=group, column=column)
    denominator = float((cross.weight * cross.coef).sum())
    tau = float((cross.weight * cross.g_a * cross.g_b).sum()) / denominator
    omega = max(float(within.tau[0, 0]) - tau, 0.0)
    if omega == 0.0:
        return zero
    d2 = cross.weight * (cross.g_a - cross.g_b) ** 2
    var = (2.0 / 3.0) * float((d2 * d2).sum()) / (2.0 * denominator) ** 2
    df = 2.0 * omega * omega / var if var > 0 else float("inf")
    return RaterEffects(np.array([[omega]]), float(min(df, n_both - 1.0)))
