"""Maintained per-campaign counters of judgments, so that live numbers never scan judgments."""

from django.db import models
from django.db.models import Q

from annotation.models.campaigns import Campaign

# Concurrent submissions of one campaign spread over this many rows per (hour, level), by
# worker, so that a launch burst does not queue every commit behind one hot row.
TALLY_SHARDS = 8


class CampaignTally(models.Model):
    """What the (item, worker) pairs stored in one hour added to a campaign, in one shard.

    One row per (campaign, hour, shard, level). ``level`` is an item's number of distinct
    judging workers once the pair was stored (the pair was the item's ``level``-th worker),
    ``pairs`` how many pairs reached that level, ``judgments`` the judgment rows they stored,
    ``first_at``/``last_at`` when the first and last of them were stored. Done slots at
    redundancy *r* are the pairs at levels 1..r, whatever *r* was when they were stored.
    Gold items are never tallied. Written only by ``annotation.tallies.tally_add`` (one
    UPSERT per submission) and rebuilt from the judgments by ``tallies_rebuild``.
    """

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="tallies")
    hour = models.DateTimeField(help_text="The hour (UTC, truncated) the pairs were stored in.")
    shard = models.PositiveSmallIntegerField()
    level = models.PositiveSmallIntegerField()
    pairs = models.PositiveIntegerField(default=0)
    judgments = models.PositiveIntegerField(default=0)
    first_at = models.DateTimeField()
    last_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["campaign", "hour", "shard", "level"], name="tally_unique_bucket"
            ),
            models.CheckConstraint(
                condition=Q(shard__lt=TALLY_SHARDS) & Q(level__gte=1), name="tally_shard_level"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.campaign_id}@{self.hour:%Y-%m-%d %H}h/{self.shard}/L{self.level}"
