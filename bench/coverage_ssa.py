"""Coverage of static and interactive SSA's intervals (bench/coverage.py's designs of them),
with the degenerate shares of a generic bot (issue #33: sensible nearly always, specific
nearly never), whose SSA interval is MOVER's from the two shares' (``uncertainty.
mover_average``). Truths by Gauss-Hermite quadrature of the generating model.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial

import numpy as np
import pandas as pd
from scipy import stats
from scipy.special import expit

from evalstats import cluster_bootstrap, uncertainty

Result = tuple[str, str, float, float, float]  # statistic, method, truth, low, high
NODES, WEIGHTS = np.polynomial.hermite_e.hermegauss(80)
WEIGHTS = WEIGHTS / WEIGHTS.sum()  # E f(X), X ~ N(0, 1) = sum w f(node)


def _pool(rng: np.random.Generator, n_items: int, k: int, pool: int | None) -> np.ndarray:
    """Return n_items x k rater ids: fresh ids, or k distinct raters of a pool per item."""
    if pool is None:
        return (np.arange(n_items * k) + rng.integers(1 << 40)).reshape(n_items, k)
    return np.argsort(rng.random((n_items, pool)), axis=1)[:, :k]


# --- static SSA ------------------------------------------------------------------------------


def _q(theta: np.ndarray, sd: float) -> np.ndarray:
    """P(a random rater says yes | item logit theta), rater bias ~ N(0, sd)."""
    return (expit(theta[..., None] + sd * NODES) * WEIGHTS).sum(axis=-1)


def _majority(p: np.ndarray, k: int) -> np.ndarray:
    return stats.binom.sf(k // 2, k, p)


def ssa_static_studies(
    rng: np.random.Generator,
    n: int,
    *,
    items: int,
    pool: int | None,
    sd_rater: float,
    means: tuple[tuple[float, float], ...] = ((1.2, 1.5), (0.3, 1.5)),
) -> Iterator[Result]:
    k, (mu_s, sd_s), (mu_p, sd_p) = 5, *means
    ts, tp = mu_s + sd_s * NODES, mu_p + sd_p * NODES
    qs, qp = _q(ts, sd_rater), _q(tp, sd_rater)
    sens_truth = float(WEIGHTS @ _majority(qs, k))
    spec_truth = float(WEIGHTS @ _majority(qs[:, None] * qp[None, :], k) @ WEIGHTS)
    truths = {"sensible": sens_truth, "specific": spec_truth}
    truths["SSA"] = (sens_truth + spec_truth) / 2
    for _ in range(n):
        raters = _pool(rng, items, k, pool)
        if pool:
            bs, bp = rng.normal(0, sd_rater, (2, pool))
            bs, bp = bs[raters], bp[raters]
        else:
            bs, bp = rng.normal(0, sd_rater, (2, items, k))
        theta = rng.normal(mu_s, sd_s, (items, 1))
        phi = rng.normal(mu_p, sd_p, (items, 1))
        sensible = rng.random((items, k)) < expit(theta + bs)
        specific = sensible & (rng.random((items, k)) < expit(phi + bp))
        labels = {
            "sensible": (sensible.sum(axis=1) > k // 2).astype(float),
            "specific": (specific.sum(axis=1) > k // 2).astype(float),
        }
        labels["SSA"] = (labels["sensible"] + labels["specific"]) / 2
        ids = [f"r{i}" for i in range(items)]
        votes = pd.DataFrame(
            {
                "item": np.repeat(ids, k),
                "rater": raters.ravel(),
                "sensible": sensible.ravel().astype(float),
                "specific": specific.ravel().astype(float),
            }
        )
        votes["ws"] = uncertainty.pivotal_weights(votes, "sensible")
        votes["wp"] = uncertainty.pivotal_weights(votes, "specific")
        effects = uncertainty.rater_effects(votes, ["sensible", "specific"], weights=["ws", "wp"])
        ds = uncertainty.majority_slopes(votes, "sensible")
        dp = uncertainty.majority_slopes(votes, "specific")
        slopes = {
            "sensible": votes.assign(s=ds, p=0.0),
            "specific": votes.assign(s=0.0, p=dp),
            "SSA": votes.assign(s=ds / 2, p=dp / 2),
        }
        ests = {}
        for name, score in labels.items():
            ests[name] = est = uncertainty.crossed_mean(
                pd.Series(score, index=ids),
                slopes[name],
                effects,
                columns=["s", "p"],
                proportion=True,
            )
            if name == "SSA":  # the report's: MOVER from the two shares' intervals
                mover = uncertainty.mover_average(ests["sensible"], ests["specific"], est.se)
                yield "SSA static SSA", "crossed, MOVER", truths[name], *mover
                yield "SSA static SSA", "naive crossed, one", truths[name], est.low, est.high
            else:
                yield f"SSA static {name}", "crossed", truths[name], est.low, est.high
            draws = score[rng.integers(0, items, (500, items))].mean(axis=1)
            low, high = np.quantile(draws, [0.025, 0.975])
            yield f"SSA static {name}", "naive bootstrap", truths[name], low, high


# --- interactive SSA -------------------------------------------------------------------------


def ssa_chat_studies(
    rng: np.random.Generator, n: int, *, sd_worker: float, mus: tuple[float, float] = (1.0, 0.0)
) -> Iterator[Result]:
    chats, sd_chat, sd_turn = 100, 0.5, 1.0
    params = dict(zip(("sensible", "specific"), mus, strict=True))
    total = np.sqrt(sd_chat**2 + sd_turn**2 + sd_worker**2)
    truths = {k: float(WEIGHTS @ expit(mu + total * NODES)) for k, mu in params.items()}
    truths["SSA"] = (truths["sensible"] + truths["specific"]) / 2
    for _ in range(n):
        turns = rng.integers(7, 15, chats)
        chat = np.repeat(np.arange(chats), turns)
        shared = rng.normal(0, sd_chat, (2, chats)) + rng.normal(0, sd_worker, (2, chats))
        labels = {}
        for j, (name, mu) in enumerate(params.items()):
            p = expit(mu + shared[j][chat] + rng.normal(0, sd_turn, len(chat)))
            labels[name] = (rng.random(len(chat)) < p).astype(float)
        labels["SSA"] = (labels["sensible"] + labels["specific"]) / 2
        for name, y in labels.items():
            num = np.bincount(chat, weights=y, minlength=chats)
            est = cluster_bootstrap.cluster_ratio_ci(num, turns, n_boot=500, seed=None)
            yield f"SSA interactive {name}", "conversations", truths[name], est.low, est.high
            draws = y[rng.integers(0, len(y), (500, len(y)))].mean(axis=1)
            low, high = np.quantile(draws, [0.025, 0.975])
            yield f"SSA interactive {name}", "naive turns", truths[name], low, high


def generic_bot_designs() -> list[
    tuple[str, Callable[[np.random.Generator, int], Iterator[Result]]]
]:
    """A generic bot's shares: sensible about 99%, specific under 1% (static, pool of 20,
    two sizes) and 98% / 2% of its turns in chats."""
    generic = partial(ssa_static_studies, pool=20, sd_rater=1.0, means=((4.5, 1.5), (-5.0, 1.5)))
    static = [
        (f"SSA GenericBot-like, pool 20, {n} resp.", partial(generic, items=n)) for n in (100, 400)
    ]
    chats = partial(ssa_chat_studies, sd_worker=0.5, mus=(4.0, -4.0))
    return static + [("SSA chats GenericBot-like, worker sd 0.5", chats)]
