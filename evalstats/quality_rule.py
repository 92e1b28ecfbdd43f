"""The quality rule: one decision per worker from all the evidence a study has.

Pure numpy/pandas, no ORM: ``annotation.quality`` reads the evidence from the database and
acts on the decision; ``bench/quality.py`` feeds it simulated studies. docs/protocols.md
("Quality control") states the model, the rule and its error rate.

The model is MACE's (Hovy et al. 2013): on each answer a worker either knows (probability
``κ``, their *reliability*) and gives the true answer, or answers from their own habits
(``ξ``: how often they give each value of the question), whatever the item says. A spammer,
random or biased, has ``κ = 0``. On a yes/no question a worker right ``a`` of the time has
``κ = 2a − 1`` (a coin is right half the time).

Each observation of a worker is the probability of their answer under both halves:

- a gold agreement check: right with ``κ + (1 − κ) / 2`` (a guess is right half the time);
- an answer on an item other workers judged too: ``κ p + (1 − κ) s``, where ``p`` is the
  probability that the value given is the truth according to the *other* workers' answers
  (leave-one-out posterior, each other worker weighted by their own reliability, fitted by
  EM as MACE does) and ``s`` the worker's own share of that value on that question.

The decision compares two reliabilities: ``κ_ok`` (acceptable: on a yes/no check right
``θ + 0.1`` of the time, ``θ`` the campaign's ``gold_min_accuracy``) and ``κ_bad`` (right
``θ − 0.1`` of the time). The evidence is the likelihood ratio ``bad : ok`` of all the
worker's observations. It blocks at ``BLOCK_ODDS`` to 1, or at ``FAST_BLOCK_ODDS`` to 1 when
the worker's median time per item is fast: speed lowers the bar but never clears it, so
time alone never blocks. Under a worker at least as reliable as ``κ_ok`` the ratio is a
non-negative supermartingale, so (Ville's inequality) the chance it *ever* reaches ``B`` to
1, however often the rule is applied, is at most ``1 / B``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

# Odds (bad : acceptable) at which the rule blocks a worker, and a worker whose median time
# per item is fast. A worker at least as reliable as κ_ok is blocked with probability at
# most 1/1000, or 1/5 if fast (Ville's inequality); bench/quality.py measures the rest.
BLOCK_ODDS = 1000.0
FAST_BLOCK_ODDS = 5.0
# Failed attention checks that block on their own (objective checks; Prolific's rule for
# rejections in studies of 5 minutes or more asks for two as well).
ATTENTION_BLOCK = 2
# Accuracy on a yes/no check above and below the campaign's threshold that the two
# hypotheses stand for: acceptable θ + MARGIN, bad θ − MARGIN.
MARGIN = 0.1
# Where the crowd's answers agree less than exact yes/no answers do (a 1–5 scale), the
# acceptable reliability is at most this share of the median worker's, and κ_bad scales with
# it: the rule asks for a worker as reliable as most of this crowd, not for the impossible.
CROWD_SHARE = 0.75
# Answers compared with others a worker needs for their reliability to count in the crowd's
# median, and workers the median needs.
MEDIAN_MIN_EVIDENCE = 10
MEDIAN_MIN_WORKERS = 3
_EM_ROUNDS = 6
_KAPPA_MAX = 0.99  # reported reliabilities; posteriors use at most _KAPPA_POSTERIOR
_KAPPA_POSTERIOR = 0.95

DECISION_COLUMNS = [
    "worker",
    "items",
    "median_seconds",
    "gold_answered",
    "gold_correct",
    "attention_answered",
    "attention_failed",
    "compared",
    "reliability",
    "spam_odds",
    "fast",
    "block",
    "flags",
    "reason",
]


@dataclass(frozen=True)
class Rule:
    """A campaign's quality rule: its gold threshold, the fast time and the evidence needed."""

    min_accuracy: float = 0.7  # θ: the campaign's gold_min_accuracy
    fast_seconds: float = 2.0
    min_evidence: int = 3  # the campaign's gold_min_answered: observations before any block

    @property
    def kappa_ok(self) -> float:
        return float(np.clip(2 * (self.min_accuracy + MARGIN) - 1, 0.05, 0.95))

    @property
    def kappa_bad(self) -> float:
        return float(np.clip(2 * (self.min_accuracy - MARGIN) - 1, 0.0, self.kappa_ok - 0.05))


@dataclass(frozen=True)
class Hypotheses:
    """The two reliabilities the rule compares in one campaign (after the crowd's cap)."""

    ok: float
    bad: float


@dataclass(frozen=True)
class Observations:
    """Every worker's observations: per answer compared with others, and their gold counts."""

    workers: pd.Index
    row_worker: np.ndarray  # worker code of each compared answer
    p: np.ndarray  # probability the answer is the truth, from the other workers
    s: np.ndarray  # the worker's own share of that value on that question
    gold_right: np.ndarray  # per worker
    gold_wrong: np.ndarray  # per worker
    kappa: np.ndarray  # per worker: the fitted reliability


def observations(answers: pd.DataFrame, gold: pd.DataFrame) -> Observations:
    """Fit the reliabilities by EM and return every worker's observations.

    ``answers``: one row per non-gold answer, columns ``worker``, ``item``, ``question``,
    ``value`` (any hashable or JSON value). ``gold``: indexed by worker, columns
    ``gold_answered`` and ``gold_correct``. Only answers on items someone else answered too
    are compared.
    """
    workers = pd.Index(pd.unique(pd.concat([answers["worker"], pd.Series(gold.index)])))
    code = workers.get_indexer(answers["worker"])
    answered = gold.reindex(workers)["gold_answered"].fillna(0).to_numpy(float)
    right = gold.reindex(workers)["gold_correct"].fillna(0).to_numpy(float)
    questions = _questions(answers, code, len(workers))
    row_worker = np.concatenate([q.worker[q.compared] for q in questions] + [np.empty(0, int)])
    s = np.concatenate([q.s[q.compared] for q in questions] + [np.empty(0)])
    kappa = np.full(len(workers), 0.5)
    for _ in range(_EM_ROUNDS):  # MACE's EM: posteriors from reliabilities, and back
        posterior = [q.posterior(np.minimum(kappa, _KAPPA_POSTERIOR)) for q in questions]
        p = np.concatenate(
            [p[q.compared] for q, p in zip(questions, posterior, strict=True)] + [np.empty(0)]
        )
        kappa = _reliability(row_worker.astype(int), p, s, right, answered - right, len(workers))
    return Observations(
        workers=workers,
        row_worker=row_worker.astype(int),
        p=p,
        s=s,
        gold_right=right,
        gold_wrong=answered - right,
        kappa=kappa,
    )


@dataclass
class _Question:
    """One question's answers, coded: cells (item), values, workers, and the worker's shares."""

    cell: np.ndarray
    value: np.ndarray
    worker: np.ndarray
    s: np.ndarray
    log_prior: np.ndarray
    compared: np.ndarray  # answers with at least one other answer on the same item
    n_cells: int

    def posterior(self, kappa: np.ndarray) -> np.ndarray:
        """Return, per answer, the leave-one-out posterior probability of its value."""
        k = kappa[self.worker]
        bonus = np.log1p(k / ((1 - k) * self.s))  # evidence each answer gives its value
        n_values = len(self.log_prior)
        table = np.bincount(
            self.cell * n_values + self.value, weights=bonus, minlength=self.n_cells * n_values
        ).reshape(self.n_cells, n_values)
        loo = table[self.cell] + self.log_prior
        loo[np.arange(len(self.cell)), self.value] -= bonus
        loo -= loo.max(axis=1, keepdims=True)
        post = np.exp(loo)
        return post[np.arange(len(self.cell)), self.value] / post.sum(axis=1)


def _questions(answers: pd.DataFrame, code: np.ndarray, n_workers: int) -> list[_Question]:
    result = []
    keys = answers["value"].map(repr).to_numpy()
    for question in pd.unique(answers["question"]):
        rows = (answers["question"] == question).to_numpy()
        value, values = pd.factorize(keys[rows])
        cell, _ = pd.factorize(answers["item"].to_numpy()[rows])
        worker = code[rows]
        n_values = max(len(values), 1)
        own = np.bincount(worker * n_values + value, minlength=n_workers * n_values).reshape(
            n_workers, n_values
        )
        share = (own + 1) / (own.sum(axis=1, keepdims=True) + n_values)
        counts = np.bincount(value, minlength=n_values)
        per_cell = np.bincount(cell)
        result.append(
            _Question(
                cell=cell,
                value=value,
                worker=worker,
                s=share[worker, value],
                log_prior=np.log((counts + 1) / (counts.sum() + n_values)),
                compared=(per_cell[cell] > 1) & (n_values > 1),
                n_cells=len(per_cell),
            )
        )
    return result


def _reliability(
    worker: np.ndarray,
    p: np.ndarray,
    s: np.ndarray,
    right: np.ndarray,
    wrong: np.ndarray,
    n_workers: int,
) -> np.ndarray:
    """Return each worker's maximum-likelihood κ in [0, _KAPPA_MAX] (bisection on the score,
    which falls with κ: the log-likelihood is concave)."""
    low, high = np.zeros(n_workers), np.full(n_workers, _KAPPA_MAX)
    for _ in range(30):
        mid = (low + high) / 2
        k = mid[worker]
        score = np.bincount(worker, weights=(p - s) / (k * p + (1 - k) * s), minlength=n_workers)
        score = score + right / (1 + mid) - wrong / (1 - mid)
        rising = score > 0
        low = np.where(rising, mid, low)
        high = np.where(rising, high, mid)
    return (low + high) / 2


def hypotheses(obs: Observations, rule: Rule) -> Hypotheses:
    """Return the rule's two reliabilities, capped by the crowd's median reliability.

    The median is over workers with ``MEDIAN_MIN_EVIDENCE`` answers compared with others, and
    caps only when there are ``MEDIAN_MIN_WORKERS`` of them: it describes how well this
    crowd can agree, which gold checks alone do not say.
    """
    compared = np.bincount(obs.row_worker, minlength=len(obs.workers))
    counted = obs.kappa[compared >= MEDIAN_MIN_EVIDENCE]
    ok, bad = rule.kappa_ok, rule.kappa_bad
    if len(counted) >= MEDIAN_MIN_WORKERS:
        scale = min(1.0, CROWD_SHARE * float(np.median(counted)) / ok)
        ok, bad = ok * scale, bad * scale
    return Hypotheses(ok=ok, bad=bad)


def log_odds(obs: Observations, h: Hypotheses) -> np.ndarray:
    """Return per worker the log likelihood ratio ``κ_bad : κ_ok`` of all their evidence."""
    terms = np.log(h.bad * obs.p + (1 - h.bad) * obs.s) - np.log(h.ok * obs.p + (1 - h.ok) * obs.s)
    agreement = np.bincount(obs.row_worker, weights=terms, minlength=len(obs.workers)).astype(float)
    gold = obs.gold_right * np.log((1 + h.bad) / (1 + h.ok))
    gold += obs.gold_wrong * np.log((1 - h.bad) / (1 - h.ok))
    return agreement + gold


def worker_decisions(
    answers: pd.DataFrame,
    checks: pd.DataFrame,
    median_seconds: pd.Series,
    rule: Rule,
    agreement: pd.Series | None = None,
) -> pd.DataFrame:
    """Decide, per worker, whether the evidence blocks them, and say why in words.

    ``answers``: non-gold answers (``worker``, ``item``, ``question``, ``value``).
    ``checks``: indexed by worker, columns ``gold_answered``, ``gold_correct``,
    ``attention_answered``, ``attention_failed`` (counts). ``median_seconds``: per worker.
    ``agreement``: per worker, the share of answers matching the others' majority, only for
    the reason's words (None: not mentioned). Returns the ``DECISION_COLUMNS``, one row per
    worker seen in any input.
    """
    checks = checks.reindex(
        columns=["gold_answered", "gold_correct", "attention_answered", "attention_failed"],
        fill_value=0,
    )
    obs = observations(answers, checks)
    kappa = obs.kappa
    h = hypotheses(obs, rule)
    odds = log_odds(obs, h)
    compared = np.bincount(obs.row_worker, minlength=len(obs.workers))
    items = answers.groupby("worker")["item"].nunique()
    records = []
    for i, worker in enumerate(obs.workers):
        tally = checks.loc[worker] if worker in checks.index else pd.Series(0, checks.columns)
        seconds = float(median_seconds.get(worker, np.nan))
        evidence = _Evidence(
            gold_answered=int(tally["gold_answered"]),
            gold_correct=int(tally["gold_correct"]),
            attention_answered=int(tally["attention_answered"]),
            attention_failed=int(tally["attention_failed"]),
            compared=int(compared[i]),
            agreement=float(agreement.get(worker, np.nan)) if agreement is not None else np.nan,
            reliability=float(kappa[i]),
            log_odds=float(odds[i]),
            median_seconds=seconds,
        )
        records.append(_decision_row(worker, int(items.get(worker, 0)), evidence, rule, h))
    return pd.DataFrame(records, columns=DECISION_COLUMNS)


def _decision_row(
    worker: object, items: int, evidence: _Evidence, rule: Rule, h: Hypotheses
) -> dict[str, object]:
    """Return a worker's row of the ``DECISION_COLUMNS``: the evidence and the decision."""
    block, flags, reason = evidence.decide(rule, h)
    return {
        "worker": worker,
        "items": items,
        "median_seconds": evidence.median_seconds,
        "gold_answered": evidence.gold_answered,
        "gold_correct": evidence.gold_correct,
        "attention_answered": evidence.attention_answered,
        "attention_failed": evidence.attention_failed,
        "compared": evidence.compared,
        "reliability": evidence.reliability,
        "spam_odds": float(np.exp(np.clip(evidence.log_odds, -700, 700))),
        "fast": evidence.fast(rule),
        "block": block,
        "flags": ", ".join(flags),
        "reason": reason,
    }


@dataclass(frozen=True)
class _Evidence:
    """One worker's evidence, as the decision and its reason read it."""

    gold_answered: int
    gold_correct: int
    attention_answered: int
    attention_failed: int
    compared: int
    agreement: float
    reliability: float
    log_odds: float
    median_seconds: float

    def fast(self, rule: Rule) -> bool:
        return bool(self.median_seconds < rule.fast_seconds)

    def decide(self, rule: Rule, h: Hypotheses) -> tuple[bool, list[str], str]:
        """Return (block, flags, reason): the one decision, and why, in words."""
        fast = self.fast(rule)
        needed = FAST_BLOCK_ODDS if fast else BLOCK_ODDS
        enough = self.gold_answered + self.compared >= max(1, rule.min_evidence)
        by_answers = enough and self.log_odds >= np.log(needed)
        by_attention = self.attention_failed >= ATTENTION_BLOCK
        flags = [
            name
            for name, on in (
                ("attention", self.attention_failed > 0),
                (
                    "gold",
                    self.gold_answered > 0
                    and self.gold_correct < rule.min_accuracy * self.gold_answered,
                ),
                ("agreement", self.compared > 0 and self.reliability < h.ok),
                ("fast", fast),
            )
            if on
        ]
        parts = []
        if by_attention:
            parts.append(
                f"fails: {self.attention_failed} of {self.attention_answered} attention checks "
                "failed"
            )
        if by_answers:
            parts.append(
                f"fails: odds {_odds(self.log_odds)} for an unreliable worker "
                f"(reliability {h.bad:.2f}) against an acceptable one ({h.ok:.2f}), at or over "
                f"the {needed:,.0f} to 1 that blocks" + (" a fast worker" if fast else "")
            )
        elif not by_attention:
            verdict = (
                f"passes: odds {_odds(self.log_odds)} for an unreliable worker, under the "
                f"{needed:,.0f} to 1 that blocks" + (" a fast worker" if fast else "")
            )
            if not enough:
                verdict = f"passes: {self.gold_answered + self.compared} answers to judge by"
            parts.append(verdict)
        parts.extend(self._because(rule, h, fast))
        return by_attention or by_answers, flags, "; ".join(parts)

    def _because(self, rule: Rule, h: Hypotheses, fast: bool) -> list[str]:
        words = []
        if self.gold_answered:
            share = self.gold_correct / self.gold_answered
            mark = "under" if share < rule.min_accuracy else "at or over"
            words.append(
                f"gold {self.gold_correct}/{self.gold_answered} ({share:.0%}, {mark} "
                f"{rule.min_accuracy:.0%})"
            )
        if self.attention_failed and self.attention_failed < ATTENTION_BLOCK:
            words.append(
                f"failed {self.attention_failed} of {self.attention_answered} attention checks"
            )
        if self.compared:
            agree = (
                "" if np.isnan(self.agreement) else f"agreement with others {self.agreement:.2f}, "
            )
            words.append(
                f"{agree}reliability {self.reliability:.2f} from {self.compared} answers "
                f"compared with others (acceptable: {h.ok:.2f})"
            )
        if not np.isnan(self.median_seconds):
            pace = f"fast: under {rule.fast_seconds:g} s" if fast else "not fast"
            words.append(f"median {self.median_seconds:.1f} s per item ({pace})")
        return words


def _odds(log_odds: float) -> str:
    """Write odds for people: "3.2 to 1", "1,400 to 1", "1 to 250", "1 to over a million"."""
    odds = float(np.exp(np.clip(log_odds, -700, 700)))
    if odds >= 1e6:
        return "over a million to 1"
    if odds >= 1:
        return f"{odds:,.0f} to 1" if odds >= 10 else f"{odds:.1f} to 1"
    if odds <= 1e-6:
        return "1 to over a million"
    return f"1 to {1 / odds:,.0f}" if odds <= 0.1 else f"1 to {1 / odds:.1f}"
