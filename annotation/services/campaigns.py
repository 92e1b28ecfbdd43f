"""Campaigns: creation with the protocol's validated parameters, and the one lifecycle."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction

from annotation.campaign_settings import CONTROLS, SETTINGS, settings_clean
from annotation.exceptions import Conflict, InvalidParameters
from annotation.models import Campaign
from annotation.protocols import LiveChat, registry
from annotation.study_pages import study_clean
from webhooks import events as webhook_events

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
    study: Mapping[str, Any] | None = None,
) -> Campaign:
    """Create a draft campaign whose parameters the protocol has validated.

    Settings are cleaned by the one schema (``campaign_settings``); ``controls`` sets quality
    control (``campaign_settings.CONTROLS``). Redundancy, items per
    assignment and the minimum time per item start at the protocol's own defaults (SSA: 5
    workers per response; EmotionLines: one dialogue per HIT). ``study`` sets the study
    pages' texts (``study_pages.STUDY_FIELDS``: description, instructions, consent text and
    version).
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
    work = settings_clean(
        {
            "redundancy": proto.default_redundancy if redundancy is None else redundancy,
            "items_per_assignment": proto.default_items_per_assignment
            if items_per_assignment is None
            else items_per_assignment,
            "lease_seconds": lease_seconds or settings.EVALSITE_LEASE_SECONDS,
        }
    )
    cleaned = proto.clean_parameters(parameters or {})
    checks = {
        "min_seconds_per_item": proto.default_min_seconds,
        "max_items_per_worker": proto.default_max_items_per_worker,
    } | settings_clean(controls or {}, allowed=CONTROLS)
    texts = study_clean(study or {})
    if Campaign.objects.filter(slug=slug).exists():
        raise Conflict(f"A campaign with the slug {slug!r} already exists.")
    try:
        return Campaign.objects.create(
            slug=slug,
            name=name or slug,
            protocol=protocol,
            parameters=cleaned,
            owner=owner,
            **work,
            **checks,
            **texts,
        )
    except IntegrityError:
        raise Conflict(f"A campaign with the slug {slug!r} already exists.") from None


@transaction.atomic
def campaign_set_status(*, campaign: Campaign, status: str) -> Campaign:
    """Move a campaign to ``status`` if the lifecycle allows it from the status it has now.

    The campaign's row lock orders concurrent moves: the second sees the first's status (a
    finished campaign announced once; a stale copy never reopens one).
    """
    campaign.status = (
        Campaign.objects.select_for_update().values_list("status", flat=True).get(pk=campaign.pk)
    )
    current = Campaign.Status(campaign.status)
    try:
        target = Campaign.Status(status)
    except ValueError:
        raise InvalidParameters(
            f"Unknown status {status!r}; use one of {', '.join(Campaign.Status.values)}."
        ) from None
    if target not in TRANSITIONS[current]:
        raise Conflict(f"A {current.label.lower()} campaign cannot become {target.label.lower()}.")
    live_chat = isinstance(registry.get(campaign.protocol), LiveChat)  # items come from chats
    if target == Campaign.Status.LIVE and not live_chat and not campaign.items.exists():
        raise Conflict("A campaign needs items before it can go live.")
    campaign.status = target
    campaign.save(update_fields=["status", "updated_at"])
    if target == Campaign.Status.FINISHED:
        webhook_events.campaign_finished(campaign)
    return campaign


@transaction.atomic
def campaign_settings_update(
    *,
    campaign: Campaign,
    values: Mapping[str, Any],
    parameters: Mapping[str, Any] | None = None,
    study: Mapping[str, Any] | None = None,
) -> Campaign:
    """Change settings, all or nothing, under the campaign's row lock; return the campaign.

    A draft may change every setting and its protocol parameters; once it has gone live only
    quality control may change (``CONTROLS``): its items were allocated and judged under
    the rest. The study pages' texts (``study``) may change at any time; a new consent
    version asks every worker again.
    """
    locked = Campaign.objects.select_for_update().get(pk=campaign.pk)
    draft = locked.status == Campaign.Status.DRAFT
    if parameters is not None and not draft:
        raise Conflict("The protocol's parameters change only while the campaign is a draft.")
    changes = settings_clean(values, allowed=tuple(SETTINGS) if draft else CONTROLS)
    if parameters is not None:
        changes["parameters"] = registry.get(locked.protocol).clean_parameters(parameters)
    changes |= study_clean(study or {})
    for name, value in changes.items():
        setattr(campaign, name, value)
    campaign.save(update_fields=[*changes, "updated_at"])
    return campaign
