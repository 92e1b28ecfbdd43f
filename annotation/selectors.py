"""Reads of the crowd side: a campaign's data as DataFrames, its progress, its report."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
from django.db.models import Count, Exists, OuterRef

from annotation.models import Campaign, Item, Judgment, Participation
from annotation.protocols import Report, registry


def campaign_items_frame(campaign: Campaign) -> pd.DataFrame:
    """Return the campaign's items, gold checks left out: columns ``item`` (key), ``payload``."""
    rows = (
        Item.objects.filter(campaign=campaign, gold__isnull=True)
        .order_by("pk")
        .values_list("key", "payload")
    )
    return pd.DataFrame(list(rows), columns=["item", "payload"])


JUDGMENT_COLUMNS = [
    "item",
    "rater",
    "question",
    "value",
    "presentation",
    "time_spent_ms",
    "created_at",
    "flagged",
]


def campaign_judgments_frame(campaign: Campaign, *, include_flagged: bool = False) -> pd.DataFrame:
    """Return the judgments on non-gold items, one row each, with the JUDGMENT_COLUMNS.

    Workers appear only by pseudonym (``rater``). Judgments of soft-blocked workers are
    ``flagged`` and left out unless ``include_flagged``.
    """
    blocked = Participation.objects.filter(campaign=campaign, soft_blocked=True).values("worker")
    rows = (
        Judgment.objects.filter(item__campaign=campaign, item__gold__isnull=True)
        .annotate(flagged=Exists(blocked.filter(worker=OuterRef("worker"))))
        .order_by("pk")
        .values_list(
            "item__key",
            "worker__pseudonym",
            "question",
            "value",
            "presentation",
            "time_spent_ms",
            "created_at",
            "flagged",
        )
    )
    if not include_flagged:
        rows = rows.filter(flagged=False)
    return pd.DataFrame(list(rows), columns=JUDGMENT_COLUMNS)


@dataclass(frozen=True)
class Progress:
    """How far a campaign is: judged item slots out of items × redundancy."""

    items: int
    needed: int
    done: int
    workers: int

    @property
    def fraction(self) -> float:
        return self.done / self.needed if self.needed else 0.0


def campaign_progress(campaign: Campaign) -> Progress:
    """Count items, (item, worker) judgments done out of those needed, and workers.

    Gold checks are not items to be done; every worker's judgments count towards progress.
    """
    items = Item.objects.filter(campaign=campaign, gold__isnull=True).count()
    per_item = (
        Judgment.objects.filter(item__campaign=campaign, item__gold__isnull=True)
        .values("item")
        .annotate(n=Count("worker", distinct=True))
        .values_list("n", flat=True)
    )
    done = sum(min(n, campaign.redundancy) for n in per_item)
    workers = Judgment.objects.filter(item__campaign=campaign).values("worker").distinct().count()
    return Progress(items=items, needed=items * campaign.redundancy, done=done, workers=workers)


def campaign_report(campaign: Campaign) -> Report:
    """Build the campaign's report with its protocol, from every judgment stored so far."""
    protocol = registry.get(campaign.protocol)
    parameters = protocol.clean_parameters(campaign.parameters)
    return protocol.report(
        parameters, campaign_items_frame(campaign), campaign_judgments_frame(campaign)
    )
