"""The raters' variance components of crowd ratings, by moments (no ORM).

``rater_effects``: the covariance of the raters' additive effects on their votes in a crossed
items x raters random-effects model (Henderson, 1953; docs/statistics.md, "Design-aware
intervals"). ``evalstats.uncertainty`` turns it into intervals; ``evalstats.taste`` adds the
rater x model interaction on top of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import pandas as pd
from scipy import sparse


class RaterEffects(NamedTuple):
    """Covariance of the raters' additive effects on their votes, and its degrees of freedom.

    ``tau`` is d x d for votes with d components (one for a rating, two for SSA's sensible
    and specific votes); ``df`` is Satterthwaite's degrees of freedom of its diagonal.
    """

    tau: np.ndarray
    df: float


def _codes(votes: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, int, int]:
    """Return item and rater codes of the votes and the numbers of items and raters."""
    item, items = pd.factorize(votes["item"])
    rater, raters = pd.factorize(votes["rater"])
    return item, rater, len(items), len(raters)


def rater_effects(
    votes: pd.DataFrame,
    columns: Sequence[str] = ("value",),
    *,
    weights: Sequence[str] | None = None,
    group: str | None = None,
) -> RaterEffects:
    """Estimate the covariance of rater effects on votes from items judged several times.

    The model is y_ir = a_i + b_ir + e_ir with item effects a (which absorb the models' means),
    rater effects b with covariance tau, and noise e ~ (0, s2); items crossed with raters, any
    unbalanced design. Within-item residuals z_ir = y_ir - mean_i remove the items. Their sum
    of squares W and the between-rater sum of squares Q_b = sum_r n_r g_r g_r', g_r rater
    r's weighted mean residual, have expectations linear in (tau, s2) with coefficients from
    the design alone (Henderson, 1953, method 3 in spirit; docs/statistics.md):
    E W = (sum_i (m_i - 1)) (tau + s2), E Q_b = K tau + L s2. ``weights`` (one column per
    vote component) weigh each rater's votes in g_r: a majority label depends on a rater
    through the votes where the rater is pivotal, so its rater effect is the effect on those
    votes. With one rating per item, raters are compared through their items' residuals from
    their ``group``'s mean (the model's: ``_between_raters``); without ``group``, tau = 0.
    """
    columns = list(columns)
    d = len(columns)
    zero = RaterEffects(np.zeros((d, d)), float("inf"))
    data = votes.dropna(subset=columns)
    m = data.groupby("item")["rater"].transform("size").to_numpy(dtype=float)
    if not (m >= 2).any():
        return _between_raters(data, columns, group) if group else zero
    data, m = data[m >= 2], m[m >= 2]
    y = data[columns].to_numpy(dtype=float)
    w = np.ones_like(y) if weights is None else data[list(weights)].to_numpy(dtype=float)
    item, rater, n_items, n_raters = _codes(data)
    sums = np.zeros((n_items, d))
    np.add.at(sums, item, y)
    z = y - sums[item] / m[:, None]
    n_r = np.bincount(rater, minlength=n_raters).astype(float)
    if (n_r >= 2).sum() < 2:
        return zero
    w_total = float((np.bincount(item)[np.bincount(item) > 0] - 1.0).sum())
    q_w = z.T @ z
    w_r = np.zeros((n_raters, d))
    np.add.at(w_r, rater, w)
    v = np.divide(w, w_r[rater], out=np.zeros_like(w), where=w_r[rater] > 0)
    g = np.zeros((n_raters, d))
    np.add.at(g, rater, v * z)
    q_b = (g * n_r[:, None]).T @ g
    design = _design_moments(item, rater, v, m, n_r, n_items)
    spread = np.diag(design.big_k) - np.diag(design.big_l)
    if (spread <= 0).any():
        return zero
    tau = _covariance_nearest((q_b - design.big_l * q_w / w_total) / (design.big_k - design.big_l))
    noise = np.clip(np.diag(q_w) / w_total - np.diag(tau), 0.0, None)
    # Satterthwaite: n_r g_r^2 is about its expectation times chi2_1.
    expect = design.k_r * np.diag(tau) + n_r[:, None] * design.l_r * noise
    var_tau = 2.0 * (expect * expect).sum(axis=0) / spread**2
    with np.errstate(divide="ignore", invalid="ignore"):
        df = np.where(var_tau > 0, 2.0 * np.diag(tau) ** 2 / var_tau, np.inf)
    return RaterEffects(tau, float(min(np.min(df), n_raters - 1.0)))


def _covariance_nearest(estimate: np.ndarray) -> np.ndarray:
    """Return the covariance matrix nearest a moment estimate: its symmetric part with the
    negative eigenvalues set to 0 (a variance estimated below 0 is 0)."""
    values, vectors = np.linalg.eigh((estimate + estimate.T) / 2.0)
    return (vectors * np.clip(values, 0.0, None)) @ vectors.T


class _DesignMoments(NamedTuple):
    """The coefficients of E Q_b = K tau + L s2, which depend on the design alone.

    ``k_r`` holds each rater's share of K's diagonal and ``l_r`` each rater's weighted
    count behind L's (before the factor n_r): the expectation of n_r g_r^2 that
    Satterthwaite's degrees of freedom need.
    """

    big_k: np.ndarray
    big_l: np.ndarray
    k_r: np.ndarray
    l_r: np.ndarray


def _design_moments(
    item: np.ndarray, rater: np.ndarray, v: np.ndarray, m: np.ndarray, n_r: np.ndarray, n_items: int
) -> _DesignMoments:
    """Return K and L of ``rater_effects`` for votes weighted v within their rater."""
    n_raters, d = len(n_r), v.shape[1]
    h = np.zeros((n_raters, d))
    np.add.at(h, rater, v * (1.0 - 1.0 / m)[:, None])
    u = sparse.csr_matrix((1.0 / m, (item, rater)), shape=(n_items, n_raters))
    cs = []
    for k in range(d):
        vk = sparse.csr_matrix((v[:, k], (item, rater)), shape=(n_items, n_raters))
        ck = sparse.csr_matrix(vk.T @ u)  # raters x raters, sparse: pools can be large
        ck.setdiag(0.0)
        cs.append(ck)
    big_k, big_l = np.zeros((d, d)), np.zeros((d, d))
    k_r = np.zeros((n_raters, d))
    for k in range(d):
        for l_ in range(d):
            shared = np.asarray(cs[k].multiply(cs[l_]).sum(axis=1)).ravel()
            per_rater = n_r * (h[:, k] * h[:, l_] + shared)
            big_k[k, l_] = per_rater.sum()
            cross = np.bincount(rater, weights=v[:, k] * v[:, l_] * (1.0 - 1.0 / m))
            big_l[k, l_] = float((n_r[: len(cross)] * cross).sum())
            if k == l_:
                k_r[:, k] = per_rater
    l_r = np.zeros((n_raters, d))
    np.add.at(l_r, rater, v * v * (1.0 - 1.0 / m)[:, None])
    return _DesignMoments(big_k, big_l, k_r, l_r)


def _between_raters(data: pd.DataFrame, columns: list[str], group: str) -> RaterEffects:
    """One-way random-effects ANOVA of the raters on residuals from each group's mean.

    With a single rating per item, an item's rating is mu_g + b_r + (item and noise), so the
    raters' mean residuals estimate tau by the unbalanced one-way moment estimator
    (MS_b - MS_w) / n0 (Searle, Casella & McCulloch, 1992, section 3.5), with
    Satterthwaite's degrees of freedom.
    """
    d = len(columns)
    y = data[columns].to_numpy(dtype=float)
    z = y - data.groupby(group)[columns].transform("mean").to_numpy(dtype=float)
    rater, raters = pd.factorize(data["rater"])
    n_r = np.bincount(rater).astype(float)
    big_n, n_raters = float(len(z)), len(raters)
    if n_raters < 2 or big_n <= n_raters:
        return RaterEffects(np.zeros((d, d)), float("inf"))
    g = np.zeros((n_raters, d))
    np.add.at(g, rater, z)
    g /= n_r[:, None]
    within = z - g[rater]
    ms_w = (within.T @ within) / (big_n - n_raters)
    centred = g - (n_r @ g) / big_n
    ms_b = ((centred * n_r[:, None]).T @ centred) / (n_raters - 1.0)
    n0 = (big_n - (n_r * n_r).sum() / big_n) / (n_raters - 1.0)
    tau = _covariance_nearest((ms_b - ms_w) / n0)
    top = (n0 * np.diag(tau)) ** 2
    bottom = np.diag(ms_b) ** 2 / (n_raters - 1.0) + np.diag(ms_w) ** 2 / (big_n - n_raters)
    with np.errstate(divide="ignore", invalid="ignore"):
        df = np.where(top > 0, top / bottom, np.inf)
    return RaterEffects(tau, float(min(np.min(df), n_raters - 1.0)))
