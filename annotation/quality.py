"""Quality control, for every protocol: gold checks, soft blocks, caps, minimum time, statistics.

- Gold items carry known answers (``Item.gold``). Allocation slips them in at the campaign's
  ``gold_rate``; the worker cannot tell them apart. They never count in reports or progress.
- A worker who has answered at least ``gold_min_answered`` gold items with an accuracy under
  ``gold_min_accuracy`` is soft-blocked in that campaign: no more items, their judgments kept
  but flagged and left out of reports unless asked for.
- ``min_seconds_per_item`` refuses answers sent sooner than that after the item was shown.
- ``max_items_per_worker`` caps how many (non-gold) items one worker does.
All four settings live on the Campaign and may change while it is live
(``services.campaign_settings_update``; their bounds are in ``campaign_settings``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from django.db import transaction

from annotation.aggregation import rater_agreement
from annotation.exceptions import InvalidAnswer
from annotation.models import Campaign, Judgment, Participation, Worker
from annotation.protocols import registry

# A worker whose median time per item is under this many seconds (or twice the campaign's
# minimum, if larger) is flagged for a look; a flag alone never blocks anyone.
FAST_MEDIAN_SECONDS = 2.0

QUALITY_COLUMNS = [
    "worker_id",
    "pseudonym",
    "items",
    "median_seconds",
    "gold_answered",
    "gold_correct",
    "gold_accuracy",
    "loo_agreement",
    "soft_blocked",
    "flags",
    "passes",
    "reason",
]


@transaction.atomic
def worker_soft_block(*, campaign: Campaign, worker: Worker, reason: str) -> Participation:
    """Soft-block a worker in a campaign (idempotent); their judgments stay, flagged."""
    participation, _ = Participation.objects.update_or_create(
        campaign=campaign,
        worker=worker,
        defaults={"soft_blocked": True, "reason": reason[:300]},
    )
    return participation


def worker_unblock(*, campaign: Campaign, worker: Worker) -> Participation:
    """Lift a soft block (idempotent); the worker's judgments count again."""
    participation, _ = Participation.objects.update_or_create(
        campaign=campaign, worker=worker, defaults={"soft_blocked": False, "reason": ""}
    )
    return participation


def worker_stop_reason(*, campaign: Campaign, worker: Worker) -> str:
    """Return why this worker may take no more items here, or "" if they may."""
    if Participation.objects.filter(campaign=campaign, worker=worker, soft_blocked=True).exists():
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
            f"You answered after {spent_ms / 1000:.0f} s; please take at least "
            f"{minimum:g} s to read the item before answering. Your answer was not saved.",
            fields={"_time": f"Please take at least {minimum:g} s per item."},
        )


def gold_record(*, campaign: Campaign, worker: Worker) -> Participation | None:
    """Soft-block the worker if their gold accuracy fell under the campaign's threshold.

    Call after storing a judgment on a gold item, in the same transaction. Returns the
    participation when this call blocked the worker.
    """
    answered, correct = _gold_counts(campaign, worker_ids=[worker.pk]).get(worker.pk, (0, 0))
    if answered < max(1, campaign.gold_min_answered):
        return None
    accuracy = correct / answered
    if accuracy >= campaign.gold_min_accuracy:
        return None
    return worker_soft_block(
        campaign=campaign,
        worker=worker,
        reason=f"gold accuracy {accuracy:.0%} on {answered} checks, under "
        f"{campaign.gold_min_accuracy:.0%}",
    )


def _gold_counts(
    campaign: Campaign, worker_ids: list[int] | None = None
) -> dict[int, tuple[int, int]]:
    """Return worker id → (gold items answered, answered correctly)."""
    protocol = registry.get(campaign.protocol)
    rows = Judgment.objects.filter(item__campaign=campaign, item__gold__isnull=False)
    if worker_ids is not None:
        rows = rows.filter(worker_id__in=worker_ids)
    answers: dict[tuple[int, int], dict[str, Any]] = {}
    shown: dict[tuple[int, int], dict[str, Any]] = {}
    golds: dict[int, dict[str, list[Any]]] = {}
    for worker_id, item_id, gold, question, value, presentation in rows.values_list(
        "worker_id", "item_id", "item__gold", "question", "value", "presentation"
    ):
        answers.setdefault((worker_id, item_id), {})[question] = value
        shown[worker_id, item_id] = presentation
        golds[item_id] = gold or {}
    counts: dict[int, tuple[int, int]] = {}
    for (worker_id, item_id), given in answers.items():
        answered, correct = counts.get(worker_id, (0, 0))
        right = protocol.gold_correct(golds[item_id], given, shown[worker_id, item_id])
        counts[worker_id] = (answered + 1, correct + right)
    return counts


def worker_quality(campaign: Campaign) -> pd.DataFrame:
    """Return one row per worker who judged anything here, with the QUALITY_COLUMNS.

    ``loo_agreement`` is the share of a worker's non-gold answers that match the majority of
    the other workers on the same item and question (ties and lone answers not compared).
    ``passes`` is what review acts on: not soft-blocked, and gold accuracy at or above the
    threshold once enough gold was answered.
    """
    rows = list(
        Judgment.objects.filter(item__campaign=campaign, item__gold__isnull=True).values_list(
            "worker_id", "item_id", "question", "value", "time_spent_ms"
        )
    )
    judged = pd.DataFrame(rows, columns=["worker_id", "item", "question", "value", "ms"])
    workers = dict(
        Worker.objects.filter(judgments__item__campaign=campaign)
        .distinct()
        .values_list("pk", "pseudonym")
    )
    blocked = dict(
        Participation.objects.filter(campaign=campaign, soft_blocked=True).values_list(
            "worker_id", "reason"
        )
    )
    gold = _gold_counts(campaign)
    per_item = judged.groupby(["worker_id", "item"])["ms"].max().reset_index()
    items = per_item.groupby("worker_id")["item"].count()
    median = per_item.groupby("worker_id")["ms"].median() / 1000
    loo = _loo_agreement(judged)
    fast = max(FAST_MEDIAN_SECONDS, 2 * campaign.min_seconds_per_item)

    records = []
    for worker_id, pseudonym in sorted(workers.items(), key=lambda kv: kv[1]):
        answered, correct = gold.get(worker_id, (0, 0))
        accuracy = correct / answered if answered else np.nan
        gold_fails = answered >= max(1, campaign.gold_min_answered) and (
            accuracy < campaign.gold_min_accuracy
        )
        med = float(median.get(worker_id, np.nan))
        flags = [
            name
            for name, on in (
                ("soft-blocked", worker_id in blocked),
                ("gold", gold_fails),
                ("fast", med < fast),
            )
            if on
        ]
        reason = blocked.get(worker_id, "") or (
            f"gold accuracy {accuracy:.0%} under {campaign.gold_min_accuracy:.0%}"
            if gold_fails
            else ""
        )
        records.append(
            {
                "worker_id": worker_id,
                "pseudonym": pseudonym,
                "items": int(items.get(worker_id, 0)),
                "median_seconds": med,
                "gold_answered": answered,
                "gold_correct": correct,
                "gold_accuracy": accuracy,
                "loo_agreement": float(loo.get(worker_id, np.nan)),
                "soft_blocked": worker_id in blocked,
                "flags": ", ".join(flags),
                "passes": worker_id not in blocked and not gold_fails,
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
