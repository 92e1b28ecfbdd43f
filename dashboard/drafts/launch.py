"""Step 4: the draft's cost on each provider, and its going live on the local provider."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from annotation.models import Campaign
from annotation.protocols import registry
from annotation.services import campaign_set_status
from dashboard.drafts.cards import models_needed, models_unregistered, protocol_needs_items
from dashboard.drafts.draft import draft_check
from dashboard.drafts.store import draft_locked
from dashboard.money import provider_currency
from evalsite.errors import AnnotationError, Conflict, NotAllowed
from recruitment.launch import LaunchOptions, LaunchPreview, campaign_launch
from recruitment.launch import launch_preview as payments_launch_preview

GO_LIVE_PROVIDER = "local"
ESTIMATE_PROVIDERS = ("local", "prolific", "mturk")


@dataclass(frozen=True)
class Estimate:
    """A provider's cost estimate for the draft, or why there is none."""

    provider: str
    preview: LaunchPreview | None
    problem: str = ""

    @property
    def currency(self) -> str:
        """The ISO 4217 code the provider pays in (``dashboard.money``)."""
        return provider_currency(self.provider)

    @property
    def fits(self) -> bool:
        return self.preview is not None and (
            self.preview.committed + self.preview.total <= self.preview.budget
        )


def draft_estimates(campaign: Campaign) -> list[Estimate]:
    """Return what publishing the draft would cost on each provider; change nothing."""
    estimates = []
    for provider in ESTIMATE_PROVIDERS:
        try:
            preview = payments_launch_preview(
                campaign=campaign, options=LaunchOptions(provider=provider)
            )
        except AnnotationError as exc:
            estimates.append(Estimate(provider, None, exc.message))
        else:
            estimates.append(Estimate(provider, preview))
    return estimates


def draft_go_live(*, campaign: Campaign, actor: str) -> Campaign:
    """Publish the draft on the local provider within its budget and set it live.

    A live chat campaign has no items to publish: it goes live and workers arrive by its link,
    once every model it chats with is registered (an unregistered one would never be drawn).
    Holds the draft's lock, so no upload can start waiting meanwhile; the wizard's draft row
    goes with the launch.
    """
    draft_check(campaign)
    protocol = registry.get(campaign.protocol)
    if not protocol_needs_items(protocol):
        missing = models_unregistered(campaign)
        if missing:
            raise NotAllowed(models_needed(protocol, missing))
        return campaign_set_status(campaign=campaign, status=Campaign.Status.LIVE)
    with transaction.atomic():
        draft = draft_locked(campaign)
        if draft.state.get("pending"):
            raise Conflict("Models are still answering an upload: add or cancel it first.")
        if not campaign.items.filter(gold__isnull=True).exists():
            raise NotAllowed("Import the items first: the campaign has none to publish.")
        # The local provider only writes rows, so a failure rolls the whole launch back.
        campaign_launch(
            campaign=campaign, options=LaunchOptions(provider=GO_LIVE_PROVIDER), actor=actor
        )
        draft.delete()
    campaign.refresh_from_db()
    return campaign
