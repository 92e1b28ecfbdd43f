"""Quality control, for every protocol: gold checks, soft blocks, caps, minimum time, statistics.

- Gold items carry known answers (``Item.gold``). Allocation slips them in at the campaign's
  ``gold_rate``; the worker cannot tell them apart. They never count in reports or progress.
  Two kinds: *gold agreement* checks (subjective: the answer most careful people give) and
  *attention checks* (``Item.attention``: the item itself says what to answer). Only a failed
  attention check can justify a rejection, and only where the provider allows it
  (``Provider.attention_rejects``, ``payments/review.py``).
- A worker is soft-blocked in a campaign (no more items, their judgments kept but flagged and
  left out of reports unless asked for) when, after at least ``gold_min_answered`` gold
  agreement checks, even the one-sided upper confidence bound (Wilson, ``GOLD_CONFIDENCE``)
  on their gold accuracy is under ``gold_min_accuracy``, so one slip never blocks; or when
  they failed ``ATTENTION_BLOCK`` attention checks.
- ``min_seconds_per_item`` refuses answers sent sooner than that after the item was shown.
- ``max_items_per_worker`` caps how many (non-gold) items one worker does.
All four settings live on the Campaign and may change while it is live
(``services.campaign_settings_update``; their bounds are in ``campaign_settings``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any

import numpy as np
import pandas as pd
from django.db import transaction
from django.utils.translation import gettext

from annotation.aggregation import rater_agreement
from annotation.allocation import items_reopen
from annotation.exceptions import InvalidAnswer
from annotation.models import Campaign, Item, Judgment, Participation, Worker
from annotation.protocols import GoldChecks, registry
from webhooks import events as webhook_events

# A worker whose median time per item is under this many seconds (or twice the campaign's
# minimum, if larger) is flagged for a look; a flag alone never blocks anyone.
FAST_MEDIAN_SECONDS = 2.0
# One-sided confidence of the soft block's bound: a worker is blocked only when their gold
# accuracy is under the campaign's threshold with this confidence (Wilson score bound).
GOLD_CONFIDENCE = 0.9
# Failed attention checks that soft-block a worker (Prolific's rule for rejections in
# studies of 5 minutes or more asks for two as well).
ATTENTION_BLOCK = 2

QUALITY_COLUMNS = [
    "worker_id",
    "pseudonym",
    "items",
    "median_seconds",
    "gold_answered",
    "gold_correct",
    "gold_accuracy",
    "gold_upper",
    "attention_answered",
    "attention_failed",
    "loo_agreement",
    "soft_blocked",
    "flags",
    "passes",
    "reason",
]


@transaction.atomic
def worker_soft_block(*, campaign: Campaign, worker: Worker, reason: str) -> Participation:
    """Soft-block a worker in a campaign (idempotent); their judgments stay, flagged."""
    blocked_before = worker_soft_blocked(campaign=campaign, worker=worker)
    participation, _ = Participation.objects.update_or_create(
        campaign=campaign,
        worker=worker,
        defaults={"soft_blocked": True, "reason": reason[:300]},
    )
    items_reopen(campaign=campaign, worker=worker)  # top-up: their items take replacements
    if not blocked_before:
        webhook_events.worker_blocked(campaign=campaign, worker=worker, reason=reason)
    return participation


def worker_unblock(*, campaign: Campaign, worker: Worker) -> Participation:
    """Lift a soft block (idempotent); the worker's judgments count again."""
    participation, _ = Participation.objects.update_or_create(
        campaign=campaign, worker=worker, defaults={"soft_blocked": False, "reason": ""}
    )
    return participation


def worker_soft_blocked(*, campaign: Campaign, worker: Worker) -> bool:
    """Tell whether quality control stopped this worker in this campaign (the one check)."""
    return Participation.objects.filter(
        campaign=campaign, worker=worker, soft_blocked=True
    ).exists()


def worker_stop_reason(*, campaign: Campaign, worker: Worker) -> str:
    """Return why this worker may take no more items here, or "" if they may."""
    if worker_soft_blocked(campaign=campaign, worker=worker):
        return "blocked"
    cap = campaign.max_items_per_worker
    if cap is not None and worker_items_done(campaign=campaign, worker=worker) >= cap:
        return "capped"
    return ""


def worker_items_done(*, campaign: Campaign, worker: Worker) -> int:
    """Count the campaign's non-gold items this worker judged."""
    return (
        Judgment.objects.filter(item__campaign=campaign, item__gold__isnull=True, worker=worker)
        .values("item")
        .distinct()
        .count()
    )


def answer_time_check(*, campaign: Campaign, spent_ms: int) -> None:
    """Refuse an answer that came sooner than the campaign's minimum time per item."""
    minimum = campaign.min_seconds_per_item
    if spent_ms < minimum * 1000:
        raise InvalidAnswer(
            gettext(
                "You answered after %(spent).0f s; please take at least %(least)g s to read "
                "the item before answering. Your answer was not saved."
            )
            % {"spent": spent_ms / 1000, "least": minimum},
            fields={
                "_time": gettext("Please take at least %(least)g s per item.") % {"least": minimum}
            },
        )


@dataclass(frozen=True)
class AttentionMiss:
    """One failed attention check: what the item said, what it asked for, what was answered."""

    item_id: int
    text: str  # the item's response text where it has one (the instruction), else ""
    expected: dict[str, list[Any]]
    given: dict[str, Any]


@dataclass
class GoldTally:
    """One worker's hidden checks in a campaign: gold agreement and attention, apart."""

    answered: int = 0  # gold agreement checks answered
    correct: int = 0
    attention_answered: int = 0
    attention_failed: list[AttentionMiss] = field(default_factory=list)

    @property
    def accuracy(self) -> float:
        return self.correct / self.answered if self.answered else float("nan")


def accuracy_upper_bound(correct: int, answered: int, confidence: float = GOLD_CONFIDENCE) -> float:
    """Return the one-sided Wilson score upper confidence bound of ``correct / answered``.

    With nothing answered the bound is 1: there is no evidence against the worker.
    """
    if answered <= 0:
        return 1.0
    z = NormalDist().inv_cdf(confidence)
    p = correct / answered
    z2n = z * z / answered
    spread = z * np.sqrt(p * (1 - p) / answered + z2n / (4 * answered))
    return float(min(1.0, (p + z2n / 2 + spread) / (1 + z2n)))


def block_chance(*, accuracy: float, checks: int, min_answered: int, min_accuracy: float) -> float:
    """Return the exact probability that a worker right ``accuracy`` of the time on each gold
    agreement check is soft-blocked by the gold rule within ``checks`` checks.

    The rule is applied after every answer, as ``gold_record`` does, so this sums over every
    path of right and wrong answers (dynamic programming over how many are right so far: a
    path that is blocked stops counting). It tells a researcher what a threshold costs: with
    the demo's rule (0.7, from 6 checks) a worker right 90% of the time is blocked within 10
    checks with probability 0.0035, a 50% guesser with 0.66.
    """
    if not 0.0 <= accuracy <= 1.0 or checks < 0:
        raise ValueError("accuracy must be in [0, 1] and checks >= 0")
    alive = {0: 1.0}  # right answers so far -> probability of getting here unblocked
    blocked = 0.0
    for answered in range(1, checks + 1):
        step: dict[int, float] = {}
        for right, chance in alive.items():
            step[right + 1] = step.get(right + 1, 0.0) + chance * accuracy
            step[right] = step.get(right, 0.0) + chance * (1.0 - accuracy)
        alive = {}
        for right, chance in step.items():
            if answered >= max(1, min_answered) and (
                accuracy_upper_bound(right, answered) < min_accuracy
            ):
                blocked += chance
            else:
                alive[right] = chance
    return blocked


def gold_fails(*, campaign: Campaign, tally: GoldTally) -> bool:
    """Tell whether gold agreement shows, beyond its uncertainty, accuracy under the threshold."""
    return tally.answered >= max(1, campaign.gold_min_answered) and (
        accuracy_upper_bound(tally.correct, tally.answered) < campaign.gold_min_accuracy
    )


def gold_block_reason(*, campaign: Campaign, tally: GoldTally) -> str:
    """Return why these checks soft-block the worker, or "" if they do not."""
    failed = len(tally.attention_failed)
    if failed >= ATTENTION_BLOCK:
        return f"failed {failed} of {tally.attention_answered} attention checks"
    if gold_fails(campaign=campaign, tally=tally):
        upper = accuracy_upper_bound(tally.correct, tally.answered)
        return (
            f"gold accuracy {tally.accuracy:.0%} on {tally.answered} checks (at most "
            f"{upper:.0%} with {GOLD_CONFIDENCE:.0%} confidence), under "
            f"{campaign.gold_min_accuracy:.0%}"
        )
    return ""


def gold_record(*, campaign: Campaign, worker: Worker) -> Participation | None:
    """Soft-block the worker if their checks show them under the campaign's threshold.

    Call after storing a judgment on a gold item, in the same transaction. Returns the
    participation when this call blocked the worker.
    """
    tally = gold_tallies(campaign, worker_ids=[worker.pk]).get(worker.pk, GoldTally())
    reason = gold_block_reason(campaign=campaign, tally=tally)
    if not reason:
        return None
    return worker_soft_block(campaign=campaign, worker=worker, reason=reason)


def gold_tallies(campaign: Campaign, worker_ids: list[int] | None = None) -> dict[int, GoldTally]:
    """Return worker id → their gold agreement and attention checks in the campaign."""
    protocol = registry.get(campaign.protocol)
    if not isinstance(protocol, GoldChecks):  # items_add stores no gold for it
        return {}
    rows = Judgment.objects.filter(item__campaign=campaign, item__gold__isnull=False)
    if worker_ids is not None:
        rows = rows.filter(worker_id__in=worker_ids)
    answers: dict[tuple[int, int], dict[str, Any]] = {}
    shown: dict[tuple[int, int], dict[str, Any]] = {}
    golds: dict[int, tuple[dict[str, list[Any]], bool]] = {}
    for worker_id, item_id, gold, attention, question, value, presentation in rows.values_list(
        "worker_id", "item_id", "item__gold", "item__attention", "question", "value", "presentation"
    ):
        answers.setdefault((worker_id, item_id), {})[question] = value
        shown[worker_id, item_id] = presentation
        golds[item_id] = (gold or {}, attention)
    tallies: dict[int, GoldTally] = {}
    missed: list[tuple[GoldTally, int, dict[str, Any]]] = []
    for (worker_id, item_id), given in answers.items():
        tally = tallies.setdefault(worker_id, GoldTally())
        gold, attention = golds[item_id]
        right = protocol.gold_correct(gold, given, shown[worker_id, item_id])
        if attention:
            tally.attention_answered += 1
            if not right:
                missed.append((tally, item_id, given))
        else:
            tally.answered += 1
            tally.correct += int(right)
    if missed:
        payloads = dict(
            Item.objects.filter(pk__in={m[1] for m in missed}).values_list("pk", "payload")
        )
        for tally, item_id, given in sorted(missed, key=lambda m: m[1]):
            text = payloads[item_id].get("response") if isinstance(payloads[item_id], dict) else ""
            tally.attention_failed.append(
                AttentionMiss(
                    item_id, text if isinstance(text, str) else "", golds[item_id][0], given
                )
            )
    return tallies


def worker_quality(campaign: Campaign) -> pd.DataFrame:
    """Return one row per worker who judged anything here, with the QUALITY_COLUMNS.

    ``loo_agreement`` is the share of a worker's non-gold answers that match the majority of
    the other workers on the same item and question (ties and lone answers not compared).
    ``gold_upper`` is the upper confidence bound the soft block compares with the threshold;
    ``attention_failed`` counts failed attention checks. ``passes`` says nothing calls for a
    look: not soft-blocked, gold agreement not under the threshold (beyond its uncertainty),
    no failed attention check. Review rejects only for attention checks, by the provider's
    rules (``payments/review.py``); the rest are hints.
    """
    rows = list(
        Judgment.objects.filter(item__campaign=campaign, item__gold__isnull=True)
        .exclude(worker__provider=Worker.Provider.MODEL)  # LLM judges are not the crowd
        .values_list("worker_id", "item_id", "question", "value", "time_spent_ms")
    )
    judged = pd.DataFrame(rows, columns=["worker_id", "item", "question", "value", "ms"])
    workers = dict(
        Worker.objects.filter(judgments__item__campaign=campaign)
        .exclude(provider=Worker.Provider.MODEL)
        .distinct()
        .values_list("pk", "pseudonym")
    )
    blocked = dict(
        Participation.objects.filter(campaign=campaign, soft_blocked=True).values_list(
            "worker_id", "reason"
        )
    )
    gold = gold_tallies(campaign)
    per_item = judged.groupby(["worker_id", "item"])["ms"].max().reset_index()
    items = per_item.groupby("worker_id")["item"].count()
    median = per_item.groupby("worker_id")["ms"].median() / 1000
    loo = _loo_agreement(judged)
    fast = max(FAST_MEDIAN_SECONDS, 2 * campaign.min_seconds_per_item)

    records = []
    for worker_id, pseudonym in sorted(workers.items(), key=lambda kv: kv[1]):
        tally = gold.get(worker_id, GoldTally())
        fails = gold_fails(campaign=campaign, tally=tally)
        med = float(median.get(worker_id, np.nan))
        flags = [
            name
            for name, on in (
                ("soft-blocked", worker_id in blocked),
                ("gold", fails),
                ("attention", bool(tally.attention_failed)),
                ("fast", med < fast),
            )
            if on
        ]
        reason = blocked.get(worker_id, "") or gold_block_reason(campaign=campaign, tally=tally)
        if not reason and tally.attention_failed:
            reason = f"failed {len(tally.attention_failed)} attention check(s)"
        records.append(
            {
                "worker_id": worker_id,
                "pseudonym": pseudonym,
                "items": int(items.get(worker_id, 0)),
                "median_seconds": med,
                "gold_answered": tally.answered,
                "gold_correct": tally.correct,
                "gold_accuracy": tally.accuracy,
                "gold_upper": accuracy_upper_bound(tally.correct, tally.answered)
                if tally.answered
                else np.nan,
                "attention_answered": tally.attention_answered,
                "attention_failed": len(tally.attention_failed),
                "loo_agreement": float(loo.get(worker_id, np.nan)),
                "soft_blocked": worker_id in blocked,
                "flags": ", ".join(flags),
                "passes": worker_id not in blocked and not fails and not tally.attention_failed,
                "reason": reason,
            }
        )
    return pd.DataFrame(records, columns=QUALITY_COLUMNS)


def _loo_agreement(judged: pd.DataFrame) -> pd.Series:
    if judged.empty:
        return pd.Series(dtype=float)
    frame = pd.DataFrame(
        {
            "item": judged["item"].astype(str) + "/" + judged["question"],
            "rater": judged["worker_id"],
            "value": judged["value"].map(repr),
        }
    )
    return rater_agreement(frame)["agreement"]
