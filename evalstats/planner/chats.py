"""Interactive SSA: conversations, each labelled by the worker who chatted."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from evalstats import uncertainty
from evalstats.cluster_bootstrap import cluster_bootstrap_means
from evalstats.planner.common import Plan, _check_run, _mean_logit, _plan

# --- Interactive SSA: conversations, each labelled by the worker who chatted ----------------


@dataclass(frozen=True)
class ChatDesign:
    """Interactive SSA of two models (sensibleness of bot turns), analysed as the report does:
    a bootstrap over conversations. Each conversation has a uniform number of labelled bot
    turns in [min_turns, max_turns], one worker who labels them all (a fresh one per chat),
    and a turn is sensible with probability expit(mu + chat + worker + turn)."""

    conversations_per_model: int = 100
    min_turns: int = 7
    max_turns: int = 14
    sensible: float = 0.7  # the reference's share of sensible turns
    sd_chat: float = 0.5
    sd_worker: float = 0.5
    sd_turn: float = 1.0
    n_boot: int = 1000  # the report's resamples (the protocol's n_boot)
    comparisons: int = 1  # pairs of models the report's ssa_contrasts tests (Holm)

    def __post_init__(self) -> None:
        if self.comparisons < 1:
            raise ValueError("need at least 1 comparison")
        if self.conversations_per_model < 2:
            raise ValueError("need at least 2 conversations per model")
        if not 1 <= self.min_turns <= self.max_turns:
            raise ValueError("need 1 <= min_turns <= max_turns labelled turns per conversation")
        if not 0 < self.sensible < 1 or min(self.sd_chat, self.sd_worker, self.sd_turn) < 0:
            raise ValueError("need 0 < sensible < 1 and standard deviations >= 0")
        if self.n_boot < 100:
            raise ValueError("need at least 100 bootstrap resamples")


def chat_labels(
    rng: np.random.Generator, design: ChatDesign, share: float
) -> tuple[np.ndarray, np.ndarray]:
    """Simulate one model's conversations: per labelled turn its 0/1 label and conversation."""
    chats = design.conversations_per_model
    turns = rng.integers(design.min_turns, design.max_turns + 1, chats)
    chat = np.repeat(np.arange(chats), turns)
    shared = rng.normal(0.0, np.hypot(design.sd_chat, design.sd_worker), chats)
    spread = float(np.sqrt(design.sd_chat**2 + design.sd_worker**2 + design.sd_turn**2))
    theta = _mean_logit(share, spread) + shared[chat] + rng.normal(0, design.sd_turn, len(chat))
    return (rng.random(len(chat)) < expit(theta)).astype(float), chat


def chat_difference(
    model: tuple[np.ndarray, np.ndarray],
    reference: tuple[np.ndarray, np.ndarray],
    *,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int | None = 0,
) -> uncertainty.Interval:
    """Return the model's share of sensible turns minus the reference's, with the percentile
    interval of the difference of the two models' bootstraps over conversations
    (``cluster_bootstrap.cluster_bootstrap_means``, the report's per-model intervals)."""
    return _chat_differences(model, reference, n_boot=n_boot, levels=(level,), seed=seed)[0]


def _chat_differences(
    model: tuple[np.ndarray, np.ndarray],
    reference: tuple[np.ndarray, np.ndarray],
    *,
    n_boot: int,
    levels: Sequence[float],
    seed: int | None,
) -> list[uncertainty.Interval]:
    """``chat_difference`` at each of ``levels``, from one set of bootstrap draws."""
    seeds = np.random.SeedSequence(seed).generate_state(2)
    draws = [
        cluster_bootstrap_means(y[:, None], chat, n_boot=n_boot, seed=int(s))[:, 0]
        for (y, chat), s in zip((model, reference), seeds, strict=True)
    ]
    diff = draws[0] - draws[1]
    value = float(model[0].mean() - reference[0].mean())
    se = float(np.std(diff))
    out = []
    for level in levels:
        low, high = np.nanpercentile(diff, [50 * (1 - level), 100 - 50 * (1 - level)])
        out.append(uncertainty.Interval(value, float(low), float(high), se, "chats"))
    return out


def chat_plan(
    design: ChatDesign,
    difference: float,
    *,
    studies: int = 200,
    alpha: float = 0.05,
    target: float = 0.8,
    seed: int | None = 0,
) -> Plan:
    """Simulate interactive SSA studies where the model's sensibleness is ``difference``
    above the reference's: the power to find it (the difference's interval at 1 - alpha / m
    above 0, m = ``comparisons``: Holm's first step over the report's pairs) and the
    difference found with ``target`` power (plan again there to refine, as for SSA)."""
    _check_run(studies, alpha, target)
    if not 0 < design.sensible + difference < 1:
        raise ValueError("the model's sensibleness must stay between 0 and 1")
    rng = np.random.default_rng(seed)
    level = alpha / design.comparisons
    found, ses, widths = 0, [], []
    for _ in range(studies):
        model = chat_labels(rng, design, design.sensible + difference)
        reference = chat_labels(rng, design, design.sensible)
        shown, test = _chat_differences(
            model,
            reference,
            n_boot=design.n_boot,
            levels=(0.95, 1 - level),
            seed=int(rng.integers(1 << 31)),
        )
        found += bool(test.low > 0)
        ses.append(shown.se)
        widths.append(shown.high - shown.low)
    return _plan(difference, found, ses, widths, level=level, target=target, studies=studies)
