"""Designs of issue #33 for bench/coverage.py: worker pools that rate many units.

Every design draws a pool of workers (8-40) with habits (a leniency shift on an ordinal scale,
a favourite emotion label, a propensity to call a bot turn sensible), units from a population
model, and workloads either uniform (each unit's workers drawn at random from the pool) or
Zipf (a few workers do most of the work). The report's default interval (two-way when
workers repeat) and the older one-way interval ("naive ...") are computed on each study.

The truth is the estimand of the population model: the statistic of one very large study
(20,000 units rated by workers of a pool of 4,000 drawn from the same worker distribution),
so that neither units nor workers are a fixed sample; for interactive SSA the share in
closed form by Gauss-Hermite quadrature of the logit-normal model.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import cache, partial

import numpy as np
import pandas as pd
from scipy.special import expit

from evalstats import agreement, cluster_bootstrap, emotion_labels
from evalstats.agreement import twoway
from evalstats.agreement.coding import Level
from evalstats.options import report_options_set

Result = tuple[str, str, float, float, float]
N_BOOT = 400
EMOTIONS = np.array([0.45, 0.15, 0.08, 0.05, 0.1, 0.12, 0.05])
# The label rates checked: the commonest label, a rare one, and no majority (the fallback, 7).
RATE_LABELS = (0, 3, 7)


def _raters(rng: np.random.Generator, n_units: int, k: int, pool: int, zipf: bool) -> np.ndarray:
    """Return n_units x k distinct workers of the pool, uniform or Zipf-weighted workloads."""
    weight = 1.0 / np.arange(1, pool + 1) if zipf else np.ones(pool)
    keys = rng.random((n_units, pool)) ** (1.0 / weight)  # weighted sampling without replacement
    return np.argsort(-keys, axis=1)[:, :k]


def _ordinal(rng: np.random.Generator, n: int, pool: int, zipf: bool, sd: float) -> pd.DataFrame:
    """Ratings 1-5: an item's quality N(0, 1) + the worker's leniency N(0, sd) + noise."""
    raters = _raters(rng, n, 3, pool, zipf)
    leniency = rng.normal(0.0, sd, pool)
    latent = rng.normal(0.0, 1.0, n)[:, None] + leniency[raters] + rng.normal(0, 0.7, (n, 3))
    value = np.clip(np.round(3.0 + latent), 1, 5)
    return pd.DataFrame(
        {"item": np.repeat(np.arange(n), 3), "rater": raters.ravel(), "value": value.ravel()}
    )


def _emotions(rng: np.random.Generator, dialogues: int, pool: int, zipf: bool) -> pd.DataFrame:
    """Votes of 5 workers per dialogue on its 5-15 utterances; each worker is right with a
    dialogue-specific chance and otherwise votes its own favourite-label distribution."""
    lengths = rng.integers(5, 16, dialogues)
    dialogue = np.repeat(np.arange(dialogues), lengths)
    raters = _raters(rng, dialogues, 5, pool, zipf)[dialogue]
    taste = rng.dirichlet(np.full(7, 0.7), pool)
    skill = rng.beta(6, 3, pool)
    truth = rng.choice(7, size=len(dialogue), p=EMOTIONS)
    right = rng.random((len(dialogue), 5)) < skill[raters]
    cum = np.cumsum(taste[raters], axis=2)
    other = (rng.random((len(dialogue), 5, 1)) > cum).sum(axis=2).clip(0, 6)
    votes = np.where(right, truth[:, None], other)
    return pd.DataFrame(
        {
            "cluster": np.repeat(dialogue, 5),
            "item": np.repeat(np.arange(len(dialogue)), 5),
            "rater": raters.ravel(),
            "value": votes.ravel(),
        }
    )


@cache
def _truths(kind: str, sd: float = 0.75) -> dict[str, float]:
    rng = np.random.default_rng(2024)
    if kind == "emotion":
        cells = twoway.cells_code(_emotions(rng, 6000, 4000, False), cluster="cluster")
        truths = {"kappa": twoway.full_weights(cells, twoway.fleiss_statistic)}
        a, self_w = twoway._counts(cells, np.ones((cells.n_raters, 1)))
        rates = twoway.label_rate_statistic(cells)(a, self_w, np.ones((cells.n_units, 1)))[0]
        return truths | {f"rate {k}": float(rates[k]) for k in RATE_LABELS}
    data = _ordinal(rng, 20_000, 4000, False, sd)
    return {
        "alpha nominal": agreement.krippendorff_alpha(data, "nominal"),
        "alpha ordinal": agreement.krippendorff_alpha(data, "ordinal"),
        "% agreement": agreement.percent_agreement(data),
    }


def kappa_studies(
    rng: np.random.Generator, n: int, *, pool: int, dialogues: int, zipf: bool = False
) -> Iterator[Result]:
    """Fleiss' kappa of EmotionLines-like dialogues labelled by a pool's workers."""
    truth = _truths("emotion")["kappa"]
    for _ in range(n):
        votes = _emotions(rng, dialogues, pool, zipf)
        cells = twoway.cells_code(votes, cluster="cluster")
        value = twoway.full_weights(cells, twoway.fleiss_statistic)
        est = emotion_labels.kappa_two_way(
            cells, value, n_boot=N_BOOT, level=0.95, seed=int(rng.integers(1 << 31))
        )
        low, high = est.low, est.high
        yield "kappa (EmotionLines-like)", "two-way", truth, low, high
        table = np.zeros((votes["item"].nunique(), 7))
        np.add.at(table, (votes["item"].to_numpy(), votes["value"].to_numpy()), 1)
        dialogue = votes.groupby("item")["cluster"].first().to_numpy()
        old = cluster_bootstrap.fleiss_kappa_cluster_ci(table, dialogue, n_boot=N_BOOT, seed=None)
        yield "kappa (EmotionLines-like)", "naive dialogues", truth, old.low, old.high


def rate_studies(
    rng: np.random.Generator, n: int, *, pool: int, dialogues: int, zipf: bool = False
) -> Iterator[Result]:
    """Label rates (EmotionLines' Table 4 shares) of the dialogues of ``kappa_studies``: the
    share of utterances whose 5 votes give each label by an absolute majority, or none."""
    truths = _truths("emotion")
    names = [str(k) for k in range(7)]
    for _ in range(n):
        votes = _emotions(rng, dialogues, pool, zipf)
        votes = votes.rename(columns={"item": "utterance", "cluster": "item"})
        votes["value"] = votes["value"].astype(str)
        counts = votes.pivot_table(
            index=["item", "utterance"], columns="value", aggfunc="size", fill_value=0
        ).reindex(columns=names, fill_value=0)
        gold = emotion_labels.gold_labels(
            counts.reset_index().assign(source=""), names, {"fallback_label": "7"}
        )
        seed = int(rng.integers(1 << 31))
        for interval, method in (("auto", "two-way"), ("units", "naive dialogues")):
            with report_options_set(interval=interval, seed=seed):
                table = emotion_labels.label_rates(
                    gold, names, votes=votes, fallback="7", n_boot=N_BOOT
                )
            for k in RATE_LABELS:
                row = table.iloc[k]
                truth = truths[f"rate {k}"]
                yield f"label rate {k}", method, truth, row["ci_low"] / 100, row["ci_high"] / 100


def alpha_studies(
    rng: np.random.Generator, n: int, *, pool: int, items: int, zipf: bool = False
) -> Iterator[Result]:
    """Krippendorff's alpha (nominal, ordinal) and % agreement of 1-5 ratings by a pool."""
    truths = _truths("ordinal")
    for _ in range(n):
        data = _ordinal(rng, items, pool, zipf, 0.75)
        seed = int(rng.integers(1 << 31))
        levels: tuple[tuple[str, Level], ...] = (
            ("alpha nominal", "nominal"),
            ("alpha ordinal", "ordinal"),
        )
        for name, level in levels:
            for interval in ("auto", "units"):
                est = agreement.krippendorff_alpha_ci(
                    data, level, n_boot=N_BOOT, seed=seed, interval=interval
                )
                method = "two-way" if interval == "auto" else "naive items"
                yield name, method, truths[name], est.low, est.high
        for interval in ("auto", "units"):
            est = agreement.percent_agreement_ci(data, n_boot=N_BOOT, seed=seed, interval=interval)
            method = "two-way" if interval == "auto" else "naive items"
            yield "% agreement", method, truths["% agreement"], est.low, est.high


def chat_pool_studies(
    rng: np.random.Generator, n: int, *, workers: int, chats_each: int, sd_worker: float
) -> Iterator[Result]:
    """Interactive SSA's sensible share: each of a pool's workers holds ``chats_each`` chats."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(80)
    weights = weights / weights.sum()
    sd_chat, sd_turn, mu = 0.5, 1.0, 1.0
    total = np.sqrt(sd_chat**2 + sd_turn**2 + sd_worker**2)
    truth = float(weights @ expit(mu + total * nodes))
    for _ in range(n):
        chats = workers * chats_each
        worker = np.repeat(np.arange(workers), chats_each)
        turns = rng.integers(7, 15, chats)
        chat = np.repeat(np.arange(chats), turns)
        shift = rng.normal(0, sd_chat, chats) + rng.normal(0, sd_worker, workers)[worker]
        p = expit(mu + shift[chat] + rng.normal(0, sd_turn, len(chat)))
        y = (rng.random(len(chat)) < p).astype(float)
        seed = int(rng.integers(1 << 31))
        for interval, method in (("auto", "workers"), ("units", "naive conversations")):
            bounds, _ = cluster_bootstrap.chat_shares_ci(
                y[:, None], chat, worker[chat], n_boot=N_BOOT, seed=seed, interval=interval
            )
            yield "SSA interactive sensible", method, truth, *bounds[0]


def designs() -> list[tuple[str, Callable[[np.random.Generator, int], Iterator[Result]]]]:
    """Return (name, studies function of (rng, n)) for coverage.py's suite."""
    out: list[tuple[str, Callable[[np.random.Generator, int], Iterator[Result]]]] = []
    for pool, dialogues in ((8, 150), (20, 150), (40, 150)):
        out.append(
            (
                f"kappa pool {pool}, {dialogues} dial.",
                partial(kappa_studies, pool=pool, dialogues=dialogues),
            )
        )
    out.append(
        ("kappa pool 20 Zipf, 150 dial.", partial(kappa_studies, pool=20, dialogues=150, zipf=True))
    )
    for pool, zipf in ((8, False), (20, False), (40, False), (20, True)):
        name = f"rates pool {pool}{' Zipf' if zipf else ''}, 150 dial."
        out.append((name, partial(rate_studies, pool=pool, dialogues=150, zipf=zipf)))
    for pool in (8, 10, 40):
        out.append((f"alpha pool {pool}, 150 items", partial(alpha_studies, pool=pool, items=150)))
    out.append(
        ("alpha pool 20 Zipf, 150 items", partial(alpha_studies, pool=20, items=150, zipf=True))
    )
    for workers, each in ((10, 10), (40, 3)):
        out.append(
            (
                f"chats {workers} workers x {each}",
                partial(chat_pool_studies, workers=workers, chats_each=each, sd_worker=0.5),
            )
        )
    return out
