"""Campaigns: creation with the protocol's validated parameters, and the one lifecycle."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction

from annotation import signals
from annotation.allocation import items_statistics_refresh
from annotation.campaign_settings import CONTROLS, SETTINGS, settings_clean, value_clean
from annotation.locks import campaign_lock
from annotation.models import Campaign
from annotation.protocols import LiveChat, Protocol, registry
from annotation.services.audit import audit_settings
from annotation.study_pages import study_clean
from evalsite.errors import Conflict, InvalidParameters

_SLUG = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
_NAME_MAX = Campaign._meta.get_field("name").max_length or 200

# Allowed status changes: a campaign goes live, pauses, resumes, and finishes for good.
TRANSITIONS = {
    Campaign.Status.DRAFT: {Campaign.Status.LIVE, Campaign.Status.FINISHED},
    Campaign.Status.LIVE: {Campaign.Status.PAUSED, Campaign.Status.FINISHED},
    Campaign.Status.PAUSED: {Campaign.Status.LIVE, Campaign.Status.FINISHED},
    Campaign.Status.FINISHED: set(),
}


def campaign_parameters_clean(*, protocol: str, parameters: Mapping[str, Any]) -> dict[str, Any]:
    """Return the protocol's parameters completed with its published defaults; raise
    InvalidParameters naming an unknown protocol or what the protocol refuses."""
    return _protocol(protocol).clean_parameters(parameters)


def campaign_create_check(
    *,
    slug: str,
    name: str,
    protocol: str,
    parameters: Mapping[str, Any] | None = None,
    redundancy: int | None = None,
    items_per_assignment: int | None = None,
    lease_seconds: int | None = None,
    controls: Mapping[str, Any] | None = None,
    study: Mapping[str, Any] | None = None,
    withdrawal: str = Campaign.Withdrawal.KEEP,
) -> dict[str, Any]:
    """Return the new campaign's fields, cleaned; raise what ``campaign_create`` refuses.

    The admin's form calls this to show the refusal as form errors before anything is saved.
    """
    if not isinstance(slug, str) or not _SLUG.match(slug):
        message = (
            "The slug must be 1–64 lowercase letters, digits or '-', starting with a letter "
            "or digit."
        )
        raise InvalidParameters(message, fields={"slug": message})
    name = _name_clean(name or slug)
    proto = _protocol(protocol)
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
    _withdrawal_check(withdrawal)
    if Campaign.objects.filter(slug=slug).exists():
        message = f"A campaign with the slug {slug!r} already exists."
        raise Conflict(message, fields={"slug": message})
    return {
        "slug": slug,
        "name": name,
        "protocol": protocol,
        "parameters": cleaned,
        "withdrawal": withdrawal,
        **work,
        **checks,
        **texts,
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
    withdrawal: str = Campaign.Withdrawal.KEEP,
) -> Campaign:
    """Create a draft campaign whose parameters the protocol has validated.

    Settings are cleaned by the one schema (``campaign_settings``); ``controls`` sets quality
    control (``campaign_settings.CONTROLS``). Redundancy, items per
    assignment and the minimum time per item start at the protocol's own defaults (SSA: 5
    workers per response; EmotionLines: one dialogue per HIT). ``study`` sets the study
    pages' texts (``study_pages.STUDY_FIELDS``: description, instructions, consent text and
    version); ``withdrawal`` what a withdrawing worker's judgments become.
    """
    fields = campaign_create_check(
        slug=slug,
        name=name,
        protocol=protocol,
        parameters=parameters,
        redundancy=redundancy,
        items_per_assignment=items_per_assignment,
        lease_seconds=lease_seconds,
        controls=controls,
        study=study,
        withdrawal=withdrawal,
    )
    try:
        return Campaign.objects.create(owner=owner, **fields)
    except IntegrityError:
        raise Conflict(f"A campaign with the slug {slug!r} already exists.") from None


@transaction.atomic
def campaign_set_status(*, campaign: Campaign, status: str) -> Campaign:
    """Move a campaign to ``status`` if the lifecycle allows it from the status it has now.

    The campaign's row lock orders concurrent moves: the second sees the first's status (a
    finished campaign announced once; a stale copy never reopens one).
    """
    campaign.status = campaign_lock(campaign).status
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
    if target == Campaign.Status.LIVE and not live_chat:
        transaction.on_commit(items_statistics_refresh)  # the next-item plan needs them
    if target == Campaign.Status.FINISHED:
        signals.campaign_finished.send(Campaign, campaign=campaign)
    return campaign


def campaign_settings_check(
    *,
    campaign: Campaign,
    values: Mapping[str, Any],
    parameters: Mapping[str, Any] | None = None,
    study: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Return the cleaned changes ``campaign_settings_update`` would make; raise what it refuses.

    A draft may change every setting and its protocol parameters; once it has gone live only
    quality control may change (``CONTROLS``): its items were allocated and judged under the
    rest. Its budget then changes only through ``campaign_budget_set``, which keeps it at or
    above what is committed; a draft has committed nothing unless a launch is under way or
    failed partway, so that path is the one the dashboard, the API and the admin take in
    every status.
    """
    draft = campaign.status == Campaign.Status.DRAFT
    if parameters is not None and not draft:
        raise Conflict("The protocol's parameters change only while the campaign is a draft.")
    if "budget" in values and not draft:
        message = (
            "A launched campaign's budget changes only through campaign_budget_set "
            "(recruitment), which keeps it at or above what is committed."
        )
        raise Conflict(message, fields={"budget": message})
    changes = settings_clean(values, allowed=tuple(SETTINGS) if draft else CONTROLS)
    if parameters is not None:
        changes["parameters"] = campaign_parameters_clean(
            protocol=campaign.protocol, parameters=parameters
        )
    return changes | study_clean(study or {})


@transaction.atomic
def campaign_settings_update(
    *,
    campaign: Campaign,
    values: Mapping[str, Any],
    parameters: Mapping[str, Any] | None = None,
    study: Mapping[str, Any] | None = None,
    actor: str = "system",
) -> Campaign:
    """Change settings, all or nothing, under the campaign's row lock; return the campaign.

    What may change in which status is ``campaign_settings_check``'s; the study pages' texts
    (``study``) may change at any time, and a new consent version asks every worker again.
    Once launched, every change is written to the audit log (``_history_add``).
    """
    locked = campaign_lock(campaign)
    changes = campaign_settings_check(
        campaign=locked, values=values, parameters=parameters, study=study
    )
    _history_add(locked, actor, changes)
    for name, value in changes.items():
        setattr(campaign, name, value)
    campaign.save(update_fields=[*changes, "updated_at"])
    return campaign


def _history_add(locked: Campaign, actor: str, changes: Mapping[str, Any]) -> None:
    """Write a launched campaign's changed settings, old → new, to its audit log: the one
    place every settings, threshold, text and budget change passes. A draft's are not
    written: no worker has seen it and nothing was spent, so its settings at launch are
    the history's start."""
    if locked.status != Campaign.Status.DRAFT:
        old = {name: getattr(locked, name) for name in changes}
        audit_settings(campaign=locked, actor=actor, old=old, new=changes)


# What a campaign has committed of its budget, as the apps that spend it count it (recruitment:
# published places and bonuses, fees included), added in their AppConfig.ready. The core never
# imports them (docs/architecture.md, "Layers").
_COMMITTED: list[Callable[[Campaign], Decimal]] = []


def campaign_committed_add(committed: Callable[[Campaign], Decimal]) -> None:
    """Count ``committed(campaign)`` in what the campaign's budget may not go below."""
    if committed not in _COMMITTED:
        _COMMITTED.append(committed)


def campaign_committed_total(campaign: Campaign) -> Decimal:
    """Return what the campaign has committed of its budget, every spending app together."""
    return sum((committed(campaign) for committed in _COMMITTED), Decimal("0.00"))


class BudgetBelowCommitted(InvalidParameters):
    """A budget below what the campaign has already committed; both amounts are kept so a
    caller may write them with the campaign's currency (the dashboard does)."""

    def __init__(self, *, budget: Decimal, committed: Decimal) -> None:
        message = (
            f"The budget {budget:.2f} cannot go below what is already committed "
            f"({committed:.2f}: published places and bonuses, fees included)."
        )
        super().__init__(message, fields={"budget": message})
        self.budget, self.committed = budget, committed


def campaign_budget_check(*, campaign: Campaign, budget: object) -> tuple[Decimal, Decimal]:
    """Return the cleaned ``budget`` and what the campaign has committed; refuse a budget
    that is not an amount of the schema (``campaign_settings``) or is below what is committed.

    Without the campaign's row lock the answer may age (the admin's form checks early with
    it); ``campaign_budget_set`` asks again under the lock before it writes.
    """
    new: Decimal = value_clean(SETTINGS["budget"], budget)
    committed = campaign_committed_total(campaign)
    if new < committed:
        raise BudgetBelowCommitted(budget=new, committed=committed)
    return new, committed


@transaction.atomic
def campaign_budget_set(*, campaign: Campaign, budget: object, actor: str = "system") -> Campaign:
    """Set the campaign's budget, in any status, never below what it has committed.

    Under the campaign's row lock (``campaign_lock``) no payment or publication can commit
    more between the check and the write, and every later spending is checked against the
    new value (recruitment's ``budget_check``). A launched campaign's change goes to its
    settings history in the audit log, as every setting's does.
    """
    locked = campaign_lock(campaign)
    new, _committed = campaign_budget_check(campaign=locked, budget=budget)
    _history_add(locked, actor, {"budget": new})
    campaign.budget = new
    campaign.save(update_fields=["budget", "updated_at"])
    return campaign


def campaign_details_check(*, name: str, withdrawal: str) -> dict[str, str]:
    """Return the cleaned name and withdrawal policy; raise InvalidParameters naming each."""
    return {"name": _name_clean(name), "withdrawal": _withdrawal_check(withdrawal)}


@transaction.atomic
def campaign_details_update(
    *, campaign: Campaign, name: str, owner: User | None, withdrawal: str
) -> Campaign:
    """Rename the campaign, give it to ``owner`` and set its withdrawal policy, in any status.

    None of them touches allocated or judged work: the name is a label, the owner decides
    who sees it in the dashboard, and the policy applies to the withdrawals still to come.
    """
    changes: dict[str, Any] = campaign_details_check(name=name, withdrawal=withdrawal)
    changes["owner"] = owner
    campaign_lock(campaign)
    for field, value in changes.items():
        setattr(campaign, field, value)
    campaign.save(update_fields=[*changes, "updated_at"])
    return campaign


def _protocol(name: str) -> Protocol:
    try:
        return registry.get(name)
    except KeyError as exc:
        message = str(exc.args[0])
        raise InvalidParameters(message, fields={"protocol": message}) from None


def _name_clean(name: str) -> str:
    if not isinstance(name, str) or not 0 < len(name) <= _NAME_MAX:
        message = f"The name must be 1–{_NAME_MAX} characters."
        raise InvalidParameters(message, fields={"name": message})
    return name


def _withdrawal_check(withdrawal: str) -> str:
    if withdrawal not in Campaign.Withdrawal.values:
        message = f"The withdrawal policy is one of {', '.join(Campaign.Withdrawal.values)}."
        raise InvalidParameters(message, fields={"withdrawal": message})
    return withdrawal
