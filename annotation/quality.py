"""Quality control, for every protocol: gold checks, soft blocks, caps, minimum time, statistics.

- Gold items carry known answers (``Item.gold``). Allocation slips them in at the campaign's
  ``gold_rate``; the worker cannot tell them apart. They never count in reports or progress.
  Two kinds: *gold agreement* checks (subjective: the answer most careful people give) and
  *attention checks* (``Item.attention``: the item itself says what to answer). Only a failed
  attention check can justify a rejection, and only where the provider allows it
  (``Provider.attention_rejects``, ``payments/review.py``).
- A worker is soft-blocked in a campaign (no more items, their judgments kept but flagged and
  left out of reports unless asked for) by the one rule of ``evalstats.quality_rule``: the
  evidence of all their gold checks and of their answers compared with the other workers'
  (MACE-style reliability) is ``BLOCK_ODDS`` to 1 for an unreliable worker against an
  acceptable one (``FAST_BLOCK_ODDS`` to 1 when they are fast; time alone never blocks), or
  they failed ``ATTENTION_BLOCK`` attention checks. A failed attention check is judged at
  once (``gold_record``); the rule over the campaign runs in ``quality_review``, in the
  background at most ``REVIEW_EVERY_S`` after a gold answer, and at the end of a simulated
  crowd's run.
- ``min_seconds_per_item`` refuses answers sent sooner than that after the item was shown.
- ``max_items_per_worker`` caps how many (non-gold) items one worker does.
All four settings live on the Campaign and may change while it is live
(``services.campaign_settings_update``; their bounds are in ``campaign_settings``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from django.core.cache import cache
from django.db import transaction
from django.db.models import BooleanField, OuterRef, QuerySet, Value
from django.db.models.expressions import RawSQL
from django.utils.translation import gettext

from annotation import signals
from annotation.allocation import items_reopen
from annotation.models import Campaign, Item, Judgment, Participation, Worker, WorkerBlock
from annotation.protocols import GoldChecks, registry
from evalsite.celery import task_send
from evalsite.errors import InvalidAnswer
from evalstats.aggregation import rater_agreement
from evalstats.quality_rule import ATTENTION_BLOCK, Rule, worker_decisions

logger = logging.getLogger(__name__)

# A worker whose median time per item is under this many seconds (or twice the campaign's
# minimum, if larger) is fast: the rule then needs less evidence from their answers, and
# never blocks on time alone.
FAST_MEDIAN_SECONDS = 2.0

QUALITY_COLUMNS = [
    "worker_id",
    "pseudonym",
    "items",
    "median_seconds",
    "gold_answered",
    "gold_correct",
    "gold_accuracy",
    "attention_answered",
    "attention_failed",
    "loo_agreement",
    "reliability",
    "spam_odds",
    "soft_blocked",
    "flags",
    "passes",
    "reason",
]


@transaction.atomic
def worker_soft_block(*, campaign: Campaign, worker: Worker, reason: str) -> Participation:
    """Soft-block a worker in a campaign (idempotent); their judgments stay, flagged."""
    blocked_before = _soft_blocks(campaign, worker).exists()  # now, not as read on arrival
    participation, _ = Participation.objects.update_or_create(
        campaign=campaign,
        worker=worker,
        defaults={"soft_blocked": True, "reason": reason[:300]},
    )
    items_reopen(campaign=campaign, worker=worker)  # top-up: their items take replacements
    if not blocked_before:
        signals.worker_blocked.send(Campaign, campaign=campaign, worker=worker, reason=reason)
    return participation


def worker_unblock(*, campaign: Campaign, worker: Worker) -> Participation:
    """Lift a soft block (idempotent); the worker's judgments count again."""
    participation, _ = Participation.objects.update_or_create(
        campaign=campaign, worker=worker, defaults={"soft_blocked": False, "reason": ""}
    )
    return participation


def worker_soft_blocked(*, campaign: Campaign, worker: Worker) -> bool:
    """Tell whether quality control stopped this worker in this campaign (the one check); a
    worker read by ``workers_standing`` for this campaign carries the answer already."""
    if getattr(worker, "standing_in", None) == campaign.pk:
        return bool(worker.soft_blocked)  # type: ignore[attr-defined]
    return _soft_blocks(campaign, worker).exists()


def _soft_blocks(campaign: Campaign, worker: Worker | OuterRef) -> QuerySet[Participation]:
    return Participation.objects.filter(campaign=campaign, soft_blocked=True).filter(
        worker=worker  # type: ignore[misc]  # django-stubs: OuterRef is a valid value
    )


def blocked_sql(campaign: Campaign, worker: str) -> tuple[str, list[Any]]:
    """Whether a block covers a worker in this campaign, as SQL and its parameters (``worker``:
    the SQL of the worker's id): the campaign's owner's own block or a global one (an
    admin's), not lifted. Another researcher's block does not count here: researchers decide
    for their studies. The one statement of this rule: the ORM reads it through
    ``workers_standing``, the hot path's statements as written (``evalsite.rows``)."""
    table = WorkerBlock._meta.db_table
    return (
        f"EXISTS (SELECT 1 FROM {table} b WHERE b.worker_id = {worker} AND b.lifted_at IS NULL"
        " AND (b.owner_id IS NULL OR b.owner_id = %s))",
        [campaign.owner_id],
    )


def soft_blocked_sql(campaign: Campaign, worker: str) -> tuple[str, list[Any]]:
    """Whether quality control stopped a worker in this campaign (``_soft_blocks``), as SQL
    and its parameters, as ``blocked_sql``."""
    table = Participation._meta.db_table
    return (
        f"EXISTS (SELECT 1 FROM {table} p WHERE p.campaign_id = %s AND p.soft_blocked"
        f" AND p.worker_id = {worker})",
        [campaign.pk],
    )


def workers_standing(*, campaign: Campaign) -> QuerySet[Worker]:
    """Workers with their standing in this campaign, read with them in one statement (an
    arrival's checks run on every page): ``blocked`` (``worker_block_applies``) and
    ``soft_blocked`` (``worker_soft_blocked``, which then asks nothing more)."""
    here = f"{Worker._meta.db_table}.id"
    return Worker.objects.annotate(
        standing_in=Value(campaign.pk),
        blocked=RawSQL(*blocked_sql(campaign, here), output_field=BooleanField()),
        soft_blocked=RawSQL(*soft_blocked_sql(campaign, here), output_field=BooleanField()),
    )


def exclusion_sql(campaign: Campaign, worker: str) -> tuple[str, list[Any]]:
    """Whether a block or a soft block covers a worker in this campaign, as SQL and its
    parameters (``worker``: the SQL of the worker's id): an answer reads it with its
    assignment's lock, in one statement (``locks.assignment_lock``)."""
    blocked, blocked_params = blocked_sql(campaign, worker)
    soft, soft_params = soft_blocked_sql(campaign, worker)
    return f"{blocked} OR {soft}", [*blocked_params, *soft_params]


def worker_block_applies(*, campaign: Campaign, worker: Worker) -> bool:
    """Tell whether a block covers this worker in this campaign (``blocked_sql``); a worker
    read by ``workers_standing`` for this campaign carries the answer already."""
    if getattr(worker, "standing_in", None) == campaign.pk:
        return bool(worker.blocked)  # type: ignore[attr-defined]
    standing = workers_standing(campaign=campaign).get(pk=worker.pk)
    return bool(standing.blocked)  # type: ignore[attr-defined]


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


def campaign_rule(campaign: Campaign) -> Rule:
    """Return the quality rule with this campaign's settings."""
    return Rule(
        min_accuracy=campaign.gold_min_accuracy,
        fast_seconds=max(FAST_MEDIAN_SECONDS, 2 * campaign.min_seconds_per_item),
        min_evidence=campaign.gold_min_answered,
    )


def campaign_decisions(campaign: Campaign) -> pd.DataFrame:
    """Return the quality rule's decision on every crowd worker of the campaign (read only).

    One row per worker (``worker`` is their id) with ``quality_rule.DECISION_COLUMNS`` and
    ``loo_agreement``: the share of their non-gold answers that match the majority of the
    other workers on the same item and question (ties and lone answers not compared).
    """
    rows = list(
        Judgment.objects.filter(item__campaign=campaign, item__gold__isnull=True)
        .exclude(worker__provider=Worker.Provider.MODEL)  # LLM judges are not the crowd
        .values_list("worker_id", "item_id", "question", "value", "time_spent_ms")
    )
    judged = pd.DataFrame(rows, columns=["worker", "item", "question", "value", "ms"])
    timed = list(
        Judgment.objects.filter(item__campaign=campaign)
        .exclude(worker__provider=Worker.Provider.MODEL)
        .values_list("worker_id", "item_id", "time_spent_ms")
    )
    per_item = (
        pd.DataFrame(timed, columns=["worker", "item", "ms"])
        .groupby(["worker", "item"])["ms"]
        .max()
    )
    median = per_item.groupby(level="worker").median() / 1000
    checks = pd.DataFrame(
        [
            (worker_id, t.answered, t.correct, t.attention_answered, len(t.attention_failed))
            for worker_id, t in gold_tallies(campaign).items()
        ],
        columns=[
            "worker",
            "gold_answered",
            "gold_correct",
            "attention_answered",
            "attention_failed",
        ],
    ).set_index("worker")
    agreement = _loo_agreement(judged)
    decisions = worker_decisions(
        judged, checks, median, campaign_rule(campaign), agreement=agreement
    )
    decisions["loo_agreement"] = decisions["worker"].map(agreement).astype(float)
    return decisions


# The rule reads a whole campaign's judgments, so it never runs inside a worker's request:
# a gold answer asks for a review in the background, at most one per campaign in this many
# seconds, which runs after them (so the answers of the window are in it).
REVIEW_EVERY_S = 15


def gold_record(*, campaign: Campaign, worker: Worker) -> Participation | None:
    """React to a gold answer of the worker's (call after storing it, in the same transaction).

    Failed attention checks block at once (``ATTENTION_BLOCK``; this worker's checks only, a
    few rows). The rule over the whole campaign (gold and agreement) is asked for in the
    background (``quality_review_soon``), so the request's cost does not grow with the study.
    Returns the participation when this call blocked the worker.
    """
    tally = gold_tallies(campaign, [worker.pk]).get(worker.pk)
    failed = len(tally.attention_failed) if tally is not None else 0
    if failed >= ATTENTION_BLOCK and not _soft_blocks(campaign, worker).exists():
        reason = _attention_reason(failed, tally.attention_answered if tally else failed)
        return worker_soft_block(campaign=campaign, worker=worker, reason=reason)
    quality_review_soon(campaign_id=campaign.pk)
    return None


def _attention_reason(failed: int, answered: int) -> str:
    """The reason stored for a block on attention checks (the rule's wording: researchers
    read it, in English)."""
    return f"fails: {failed} of {answered} attention checks failed"


def quality_review_soon(*, campaign_id: int) -> None:
    """Ask for ``quality_review`` of the campaign after this transaction commits, in
    ``REVIEW_EVERY_S``, unless one is already asked for (an unreachable cache or broker is
    logged, never the worker's error)."""
    try:
        if not cache.add(f"quality-review:{campaign_id}", 1, REVIEW_EVERY_S):
            return
    except Exception as exc:  # noqa: BLE001
        logger.warning("quality review not asked (cache unavailable): %s", exc)
        return
    transaction.on_commit(
        lambda: task_send(
            "annotation.tasks.campaign_quality_review", campaign_id, countdown=REVIEW_EVERY_S
        ),
        robust=True,
    )


def quality_review(campaign: Campaign) -> list[Participation]:
    """Soft-block every worker the quality rule blocks and who is not blocked yet.

    The same rule as after each gold answer, over the whole campaign at once: for studies
    without gold, and for the evidence that arrived after a worker's last gold answer.
    Idempotent; returns the participations it blocked.
    """
    decisions = campaign_decisions(campaign)
    blocked = set(
        Participation.objects.filter(campaign=campaign, soft_blocked=True).values_list(
            "worker_id", flat=True
        )
    )
    due = decisions[decisions["block"] & ~decisions["worker"].isin(blocked)]
    workers = Worker.objects.in_bulk(list(due["worker"]))
    return [
        worker_soft_block(
            campaign=campaign, worker=workers[row.worker], reason=_stored(str(row.reason))
        )
        for row in due.itertuples()
    ]


def _stored(reason: str) -> str:
    """Keep the reason's whole clauses that fit ``Participation.reason`` (300 characters)."""
    kept = ""
    for part in reason.split("; "):
        longer = f"{kept}; {part}" if kept else part
        if len(longer) > 300:
            break
        kept = longer
    return kept or reason[:300]


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

    The evidence and the decision are ``campaign_decisions``'s: ``reliability`` is the
    worker's MACE-style reliability (the chance they know the answer rather than answer
    from habit), ``spam_odds`` the odds of their evidence for an unreliable worker against
    an acceptable one (shown between 0.001 and 1,000,000; the reason gives them in words).
    ``passes``: not soft-blocked and the rule does not block them; ``reason`` says why, in
    words, and why each flag was raised. Review rejects only for attention checks, by the
    provider's rules (``payments/review.py``); the rest are hints.
    """
    decisions = campaign_decisions(campaign).set_index("worker")
    pseudonyms = dict(
        Worker.objects.filter(pk__in=list(decisions.index)).values_list("pk", "pseudonym")
    )
    blocked = dict(
        Participation.objects.filter(campaign=campaign, soft_blocked=True).values_list(
            "worker_id", "reason"
        )
    )
    records = []
    for worker_id, row in decisions.iterrows():
        is_blocked = worker_id in blocked
        reason = str(row["reason"])
        if is_blocked:
            why = blocked[worker_id]
            by = "by quality control" if why.startswith("fails:") else f"({why or 'no reason'})"
            reason = f"soft-blocked {by}; now {reason}"
        answered = int(row["gold_answered"])
        records.append(
            {
                "worker_id": worker_id,
                "pseudonym": pseudonyms.get(worker_id, ""),
                "items": int(row["items"]),
                "median_seconds": float(row["median_seconds"]),
                "gold_answered": answered,
                "gold_correct": int(row["gold_correct"]),
                "gold_accuracy": row["gold_correct"] / answered if answered else np.nan,
                "attention_answered": int(row["attention_answered"]),
                "attention_failed": int(row["attention_failed"]),
                "loo_agreement": float(row["loo_agreement"]),
                "reliability": float(row["reliability"]) if row["compared"] else np.nan,
                "spam_odds": min(max(float(row["spam_odds"]), 1e-3), 1e6),
                "soft_blocked": is_blocked,
                "flags": ", ".join(
                    (["soft-blocked"] if is_blocked else []) + [f for f in [row["flags"]] if f]
                ),
                "passes": not is_blocked and not bool(row["block"]),
                "reason": reason,
            }
        )
    frame = pd.DataFrame(records, columns=QUALITY_COLUMNS)
    return frame.sort_values("pseudonym", kind="stable").reset_index(drop=True)


def _loo_agreement(judged: pd.DataFrame) -> pd.Series:
    if judged.empty:
        return pd.Series(dtype=float)
    frame = pd.DataFrame(
        {
            "item": judged["item"].astype(str) + "/" + judged["question"],
            "rater": judged["worker"],
            "value": judged["value"].map(repr),
        }
    )
    return rater_agreement(frame)["agreement"]
