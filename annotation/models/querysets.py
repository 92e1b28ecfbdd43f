"""Querysets of the study data model that do more than the ORM's."""

from typing import Any

from django.db import models

from annotation.signals import campaigns_updated


class CampaignQuerySet(models.QuerySet[Any]):
    def update(self, **kwargs: Any) -> int:
        """Update the rows, then say so (``signals.campaigns_updated``): a queryset's update
        sends no ``post_save``, and the copies of campaigns that processes keep for the
        worker pages (``annotation.campaign_cache``) are stale."""
        rows = super().update(**kwargs)
        campaigns_updated.send(sender=self.model)
        return rows
