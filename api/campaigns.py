"""Campaigns: list, get, create, change settings, lifecycle; items; progress.

Each endpoint parses, calls the service or selector the dashboard calls, and answers.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.http import HttpRequest
from ninja import File, Form, Query, Router, Status, UploadedFile

from annotation.campaign_settings import SETTINGS
from annotation.models import Campaign
from annotation.services import campaign_set_status, campaign_settings_update, items_add
from api.access import actor, campaign_of, user_of
from api.errors import CLIENT_ERRORS, ErrorOut, query_check
from api.schemas import (
    CampaignFilters,
    CampaignIn,
    CampaignOut,
    CampaignPage,
    CampaignSlug,
    CampaignUpdate,
    ItemsAdded,
    ItemsIn,
    ProgressOut,
    StatusIn,
    campaign_out,
)
from dashboard import controls, selectors
from dashboard.access import campaigns_visible
from dashboard.drafts import (
    ItemsUpload,
    draft_create,
    draft_go_live,
    draft_items_finish,
    draft_items_import,
)
from evalsite.errors import Conflict, InvalidParameters

router = Router(tags=["campaigns"])

NoFile = File(None)
Models = Form("", max_length=2000, description="Registered models to answer the contexts.")
MaxTurns = Form(3, ge=1, le=100, description="Most turns a context may have.")
# From a launched campaign's status to the dashboard's control (controls.STATUS_ACTIONS).
_CONTROL = {"paused": "pause", "live": "resume", "finished": "finish"}


@router.get("", response={200: CampaignPage, CLIENT_ERRORS: ErrorOut})
def campaign_list(request: HttpRequest, filters: Query[CampaignFilters]) -> dict[str, Any]:
    """The campaigns the key may see, newest first, by status and protocol."""
    query_check(request, CampaignFilters)
    campaigns = campaigns_visible(user_of(request)).select_related("owner").order_by("-created_at")
    if filters.status:
        campaigns = campaigns.filter(status=filters.status)
    if filters.protocol:
        campaigns = campaigns.filter(protocol=filters.protocol)
    page = campaigns[filters.offset : filters.offset + filters.limit]
    return {
        "count": campaigns.count(),
        "limit": filters.limit,
        "offset": filters.offset,
        "results": [campaign_out(c) for c in page],
    }


@router.post("", response={201: CampaignOut, CLIENT_ERRORS: ErrorOut})
def campaign_create(request: HttpRequest, data: CampaignIn) -> Status[dict[str, Any]]:
    """Create a draft campaign as the wizard does (the protocol's published defaults), then
    apply ``settings`` and ``study`` through ``campaign_settings_update``: all or nothing."""
    with transaction.atomic():
        campaign = draft_create(
            protocol=data.protocol,
            slug=data.slug,
            name=data.name,
            owner=user_of(request),
            parameters=data.parameters,
        )
        values, study = data.settings.sent(), data.study.sent()
        if values or study:
            campaign_settings_update(campaign=campaign, values=values, study=study)
    return Status(201, campaign_out(campaign))


@router.get("/{slug}", response={200: CampaignOut, CLIENT_ERRORS: ErrorOut})
def campaign_get(request: HttpRequest, slug: str = CampaignSlug) -> dict[str, Any]:
    return campaign_out(campaign_of(request, slug))


@router.patch("/{slug}", response={200: CampaignOut, CLIENT_ERRORS: ErrorOut})
def campaign_update(
    request: HttpRequest, data: CampaignUpdate, slug: str = CampaignSlug
) -> dict[str, Any]:
    """Change settings, parameters (drafts only) and study texts, all or nothing.

    A budget goes through the dashboard's budget control (the core's
    ``campaign_budget_set``), which refuses one below what is already committed, in any
    status; once live only quality control and the budget change.
    """
    campaign = campaign_of(request, slug)
    values = data.settings.sent()
    _launched_check(campaign, values)
    with transaction.atomic():
        if "budget" in values:
            controls.campaign_budget_set(
                campaign=campaign, budget=values.pop("budget"), actor=actor(request)
            )
        campaign_settings_update(
            campaign=campaign,
            values=values,
            parameters=data.parameters,
            study=data.study.sent() if data.study else None,
            actor=actor(request),
        )
    campaign.refresh_from_db()
    return campaign_out(campaign)


def _launched_check(campaign: Campaign, values: dict[str, Any]) -> None:
    """Refuse, as a conflict with the campaign's state (409), a setting that changes only
    while it is a draft (``campaign_settings.SETTINGS``, not ``live``): the request is well
    formed, and was accepted before the launch."""
    fixed = [name for name in values if not SETTINGS[name].live]
    if campaign.status != Campaign.Status.DRAFT and fixed:
        message = f"Once launched, {fixed[0]} no longer changes (only quality control does)."
        raise Conflict(message, fields={fixed[0]: message})


@router.post("/{slug}/status", response={200: CampaignOut, CLIENT_ERRORS: ErrorOut})
def campaign_status(
    request: HttpRequest, data: StatusIn, slug: str = CampaignSlug
) -> dict[str, Any]:
    """Move through the lifecycle: a draft goes live as the wizard launches it (published on
    the local provider within its budget); a launched one pauses, resumes or finishes (for
    good) as the dashboard's controls do, audit-logged."""
    campaign = campaign_of(request, slug)
    if campaign.status == Campaign.Status.DRAFT and data.status == Campaign.Status.LIVE:
        campaign = draft_go_live(campaign=campaign, actor=actor(request))
    elif campaign.status == Campaign.Status.DRAFT:
        campaign = campaign_set_status(campaign=campaign, status=data.status)
    else:
        controls.campaign_status_change(
            campaign=campaign, action=_CONTROL[data.status], actor=actor(request), confirmed=True
        )
    campaign.refresh_from_db()
    return campaign_out(campaign)


@router.post("/{slug}/items", response={201: ItemsAdded, CLIENT_ERRORS: ErrorOut})
def items_post(
    request: HttpRequest, data: ItemsIn, slug: str = CampaignSlug
) -> Status[dict[str, Any]]:
    """Add items (and gold checks) as JSON, all or nothing (``items_add``); an item sent
    again with the same content is skipped, with other content refused."""
    campaign = campaign_of(request, slug)
    rows: list[Any] = []
    for n, item in enumerate(data.items, start=1):
        if item.attention and item.gold is None:
            raise InvalidParameters(
                f"Item {n} ({item.key}): an attention check needs its accepted answers (gold).",
                fields={f"items.{n - 1}.gold": "required with attention"},
            )
        rows.append(
            (item.key, item.payload)
            if item.gold is None
            else (item.key, item.payload, item.gold, item.attention)
        )
    added = items_add(campaign=campaign, items=rows)
    return Status(201, {"added": added, "skipped": len(rows) - added, "jobs": []})


@router.post(
    "/{slug}/items/upload", response={201: ItemsAdded, 202: ItemsAdded, CLIENT_ERRORS: ErrorOut}
)
def items_upload(
    request: HttpRequest,
    slug: str = CampaignSlug,
    items: UploadedFile | None = NoFile,
    gold: UploadedFile | None = NoFile,
    contexts: UploadedFile | None = NoFile,
    responses: UploadedFile | None = NoFile,
    models: str = Models,
    max_turns: int = MaxTurns,
) -> Status[dict[str, Any]]:
    """Upload files in the wizard's import formats into a draft (``draft_items_import``):
    items/gold JSONL, or contexts (JSONL, CSV, TXT) answered by registered ``models``
    (comma-separated) and/or a responses JSONL. When models must still answer, the answer
    is 202 with their generation jobs; then POST ``items/finish``."""
    campaign = campaign_of(request, slug)
    upload = ItemsUpload(
        contexts=contexts,
        models=[m.strip() for m in models.split(",") if m.strip()],
        responses=responses,
        items=items,
        gold=gold,
        max_turns=max_turns,
    )
    outcome = draft_items_import(campaign=campaign, upload=upload)
    body = {
        "added": outcome.added,
        "skipped": outcome.skipped,
        "jobs": [j.pk for j in outcome.jobs],
    }
    return Status(202 if outcome.jobs else 201, body)


@router.post("/{slug}/items/finish", response={201: ItemsAdded, CLIENT_ERRORS: ErrorOut})
def items_finish(request: HttpRequest, slug: str = CampaignSlug) -> Status[dict[str, Any]]:
    """Add the items of the upload whose models have answered (``draft_items_finish``)."""
    outcome = draft_items_finish(campaign=campaign_of(request, slug))
    return Status(201, {"added": outcome.added, "skipped": outcome.skipped, "jobs": []})


@router.get("/{slug}/progress", response={200: ProgressOut, CLIENT_ERRORS: ErrorOut})
def progress(request: HttpRequest, slug: str = CampaignSlug) -> dict[str, Any]:
    """The live numbers of the dashboard's poll (from tallies: no judgment is scanned)."""
    campaign = campaign_of(request, slug)
    data = selectors.campaign_row(campaign).as_json()
    data["report_judgments"] = selectors.report_judgments(campaign)
    return data
