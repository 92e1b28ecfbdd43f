"""EmotionLines: the precision of Fleiss' kappa."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from evalstats import cluster_bootstrap
from evalstats.planner.common import _check_run

# --- EmotionLines: the precision of Fleiss' kappa --------------------------------------------

# EmotionLines' seven labels, neutral first: shares close to the Friends part's votes.
EMOTION_SHARES = (0.45, 0.15, 0.08, 0.05, 0.1, 0.12, 0.05)


@dataclass(frozen=True)
class KappaDesign:
    """Fleiss' kappa of an emotion-labelling study, analysed with the report's bootstrap over
    dialogues. Each utterance has a true label drawn from its dialogue's mood (Dirichlet
    around ``shares``, concentration ``mood``); each of ``raters`` workers gives it with
    probability q_d (the dialogue's: Beta with concentration ``spread``), otherwise a label
    drawn from ``shares``. Fleiss' kappa is then E[q_d^2], set to ``kappa``."""

    dialogues: int = 150
    min_utterances: int = 5
    max_utterances: int = 24
    raters: int = 5
    kappa: float = 0.34  # EmotionLines' published agreement
    shares: tuple[float, ...] = EMOTION_SHARES
    spread: float = 10.0
    mood: float = 3.0
    n_boot: int = 1000

    def __post_init__(self) -> None:
        if self.dialogues < 2 or self.raters < 2:
            raise ValueError("need at least 2 dialogues and 2 raters per utterance")
        if not 1 <= self.min_utterances <= self.max_utterances:
            raise ValueError("need 1 <= min_utterances <= max_utterances")
        if not 0 < self.kappa < 1:
            raise ValueError("the assumed kappa must lie strictly between 0 and 1")
        if len(self.shares) < 2 or min(self.shares) <= 0:
            raise ValueError("need at least 2 labels, each with a share > 0")
        if self.spread <= 0 or self.mood <= 0 or self.n_boot < 100:
            raise ValueError("spread and mood must be > 0 and n_boot at least 100")


@dataclass(frozen=True)
class KappaPlan:
    """The precision a design gives Fleiss' kappa (no test: the "power" is the width)."""

    kappa: float  # the assumed kappa
    mean_kappa: float  # the simulated estimates' mean
    mean_width: float  # expected width of the 95% interval
    width_se: float  # Monte-Carlo standard error of mean_width
    wide: float  # the width exceeded in 10% of studies
    se: float  # the estimates' standard deviation across studies
    detectable: float  # a difference of kappa between two such sources found with 80% power
    studies: int

    def dialogues_for(self, width: float, dialogues: int) -> int:
        """Return the dialogues for an expected width ``width`` (width ~ 1 / sqrt(dialogues))."""
        return int(np.ceil(dialogues * (self.mean_width / width) ** 2))


def kappa_votes(rng: np.random.Generator, design: KappaDesign) -> tuple[np.ndarray, np.ndarray]:
    """Simulate one study: the utterances x labels vote table and each utterance's dialogue."""
    shares = np.asarray(design.shares, dtype=float) / sum(design.shares)
    c = design.spread  # E q^2 = m(1 - m)/(c + 1) + m^2 = kappa, solved for the mean m
    m = (-1.0 + np.sqrt(1.0 + 4.0 * c * design.kappa * (c + 1.0))) / (2.0 * c)
    lengths = rng.integers(design.min_utterances, design.max_utterances + 1, design.dialogues)
    dialogue = np.repeat(np.arange(design.dialogues), lengths)
    q = rng.beta(m * c, (1.0 - m) * c, design.dialogues)[dialogue]
    mood = rng.dirichlet(shares * design.mood, design.dialogues)[dialogue]
    truth = (rng.random((len(dialogue), 1)) > np.cumsum(mood, axis=1)).sum(axis=1)
    noise = (rng.random((len(dialogue), design.raters, 1)) > np.cumsum(shares)).sum(axis=2)
    right = rng.random((len(dialogue), design.raters)) < q[:, None]
    votes = np.minimum(np.where(right, truth[:, None], noise), len(shares) - 1)
    rows = np.repeat(np.arange(len(dialogue)), design.raters)
    table = np.bincount(rows * len(shares) + votes.ravel(), minlength=len(dialogue) * len(shares))
    return table.reshape(len(dialogue), len(shares)), dialogue


def kappa_plan(
    design: KappaDesign, *, studies: int = 200, target: float = 0.8, seed: int | None = 0
) -> KappaPlan:
    """Simulate ``studies`` studies and return the expected width of kappa's 95% interval
    (``cluster_bootstrap.fleiss_kappa_cluster_ci``, the report's), and the difference of kappa
    between two independent sources of this design found with ``target`` power at 5%."""
    _check_run(studies, 0.05, target)
    rng = np.random.default_rng(seed)
    values, widths = [], []
    for _ in range(studies):
        table, dialogue = kappa_votes(rng, design)
        est = cluster_bootstrap.fleiss_kappa_cluster_ci(
            table, dialogue, n_boot=design.n_boot, seed=int(rng.integers(1 << 31))
        )
        values.append(est.value)
        widths.append(est.high - est.low)
    sd = float(np.std(values, ddof=1)) if studies > 1 else float("nan")
    # The intervals' widths estimate the standard error more steadily than few studies' spread.
    se = float(np.mean(widths)) / (2 * float(stats.norm.ppf(0.975)))
    z = float(stats.norm.ppf(0.975)) + float(stats.norm.ppf(target))
    return KappaPlan(
        kappa=design.kappa,
        mean_kappa=float(np.mean(values)),
        mean_width=float(np.mean(widths)),
        width_se=float(np.std(widths, ddof=1) / np.sqrt(studies)) if studies > 1 else 0.0,
        wide=float(np.quantile(widths, 0.9)),
        se=sd,
        detectable=float(z * np.sqrt(2.0) * se),
        studies=studies,
    )
