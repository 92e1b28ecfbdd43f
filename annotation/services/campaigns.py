"""Campaigns: creation with the protocol's validated parameters, and the one lifecycle."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import IntegrityError

from annotation import quality
from annotation.exceptions import Conflict, InvalidParameters
from annotation.models import Campaign
from annotation.protocols import registry

_SLUG = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")

# Allowed status changes: a campaign goes live, pauses, resumes, and finishes for good.
TRANSITIONS = {
    Campaign.Status.DRAFT: {Campaign.Status.LIVE, Campaign.Status.FINISHED},
    Campaign.Status.LIVE: {Campaign.Status.PAUSED, Campaign.Status.FINISHED},
    Campaign.Status.PAUSED: {Campaign.Status.LIVE, Campaign.Status.FINISHED},
    Campaign.Status.FINISHED: set(),
}


def campaign_create(
    *,
    slug: str,
    name: str,
    protocol: str,
    parameters: Mapping[str, Any] | None = None,
    redundancy: int | None = None,
    items_per_assignment: int | None = None,
    lease_seconds: int | None = None,
    owner: User | None = None,
    controls: Mapping[str, Any] | None = None,
) -> Campaign:
    """Create a draft campaign whose parameters the protocol has validated.

    ``controls`` sets quality control (see ``quality.CONTROLS``). Redundancy, items per
    assignment and the minimum time per item start at the protocol's own defaults (SSA: 5
    workers per response; EmotionLines: one dialogue per HIT).
    """
    if not _SLUG.match(slug):
        raise InvalidParameters(
            "The slug must be 1–64 lowercase letters, digits or '-', starting with a letter "
            "or digit."
        )
    try:
        proto = registry.get(protocol)
    except KeyError as exc:
        raise InvalidParameters(str(exc.args[0])) from None
    redundancy = proto.default_redundancy if redundancy is None else redundancy
    if items_per_assignment is None:
        items_per_assignment = proto.default_items_per_assignment
    for field, value, low in (
        ("redundancy", redundancy, 1),
        ("items_per_assignment", items_per_assignment, 1),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= 1000:
            raise InvalidParameters(f"{field} must be a whole number from {low} to 1000.")
    lease = lease_seconds or settings.EVALSITE_LEASE_SECONDS
    if isinstance(lease, bool) or not isinstance(lease, int) or lease < 10:
        raise InvalidParameters("lease_seconds must be a whole number of at least 10.")
    cleaned = proto.clean_parameters(parameters or {})
    checks = {
        "min_seconds_per_item": proto.default_min_seconds,
        "max_items_per_worker": proto.default_max_items_per_worker,
    } | quality.controls_clean(controls or {})
    if Campaign.objects.filter(slug=slug).exists():
        raise Conflict(f"A campaign with the slug {slug!r} already exists.")
    try:
        return Campaign.objects.create(
            slug=slug,
            name=name or slug,
            protocol=protocol,
            parameters=cleaned,
            redundancy=redundancy,
            items_per_assignment=items_per_assignment,
            lease_seconds=lease,
            owner=owner,
            **checks,
        )
    except IntegrityError:
        raise Conflict(f"A campaign with the slug {slug!r} already exists.") from None


def campaign_set_status(*, campaign: Campaign, status: str) -> Campaign:
    """Move a campaign to ``status`` if the lifecycle allows it."""
    current = Campaign.Status(campaign.status)
    try:
        target = Campaign.Status(status)
    except ValueError:
        raise InvalidParameters(
            f"Unknown status {status!r}; use one of {', '.join(Campaign.Status.values)}."
        ) from None
    if target not in TRANSITIONS[current]:
        raise Conflict(f"A {current.label.lower()} campaign cannot become {target.label.lower()}.")
    live_chat = registry.get(campaign.protocol).live_chat  # its items come from the chats
    if target == Campaign.Status.LIVE and not live_chat and not campaign.items.exists():
        raise Conflict("A campaign needs items before it can go live.")
    campaign.status = target
    campaign.save(update_fields=["status", "updated_at"])
    return campaign
