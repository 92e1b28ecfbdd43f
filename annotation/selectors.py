"""Reads of the crowd side: a campaign's data as DataFrames, its progress, its report."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
from django.db.models import Count

from annotation.models import Campaign, Item, Judgment
from annotation.protocols import Report, registry


def campaign_items_frame(campaign: Campaign) -> pd.DataFrame:
    """Return the campaign's items: columns ``item`` (key) and ``payload``."""
    rows = Item.objects.filter(campaign=campaign).order_by("pk").values_list("key", "payload")
    return pd.DataFrame(list(rows), columns=["item", "payload"])


def campaign_judgments_frame(campaign: Campaign) -> pd.DataFrame:
    """Return every judgment: ``item`` (key), ``rater`` (pseudonym), ``question``, ``value``,
    ``time_spent_ms``, ``created_at``. Workers appear only by pseudonym."""
    rows = (
        Judgment.objects.filter(item__campaign=campaign)
        .order_by("pk")
        .values_list(
            "item__key", "worker__pseudonym", "question", "value", "time_spent_ms", "created_at"
        )
    )
    columns = ["item", "rater", "question", "value", "time_spent_ms", "created_at"]
    return pd.DataFrame(list(rows), columns=columns)


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
    """Count items, (item, worker) judgments done out of those needed, and workers."""
    items = Item.objects.filter(campaign=campaign).count()
    per_item = (
        Judgment.objects.filter(item__campaign=campaign)
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
