"""Steps 1 and 2: a draft campaign from a protocol's published defaults, and its settings."""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from django.db import transaction

from annotation.models import Campaign
from annotation.protocols import registry
from annotation.services import campaign_budget_set, campaign_create, campaign_settings_update
from annotation.studyfiles import study_create, study_load, study_read
from corpora.limits import STUDY_FILE_MAX_BYTES
from dashboard.drafts.cards import SETTINGS, protocol_card, setting_defaults
from evalsite.errors import Conflict, InvalidParameters


def draft_check(campaign: Campaign) -> None:
    """Refuse to change a campaign that is no longer a draft."""
    if campaign.status != Campaign.Status.DRAFT:
        raise Conflict(
            f"'{campaign.slug}' is {campaign.get_status_display().lower()}: the wizard only "
            "changes drafts."
        )


def draft_create(
    *,
    protocol: str,
    slug: str,
    name: str,
    owner: Any,
    parameters: Mapping[str, Any] | None = None,
) -> Campaign:
    """Create a draft campaign of ``protocol`` with its published defaults, owned by ``owner``.

    ``parameters`` completes defaults that cannot stand alone (interactive SSA's models).
    """
    protocol_card(protocol)  # a clear message for an unknown protocol
    if len(name) > 200:
        raise InvalidParameters("The name must be at most 200 characters.")
    return campaign_create(
        slug=slug,
        name=name.strip(),
        protocol=protocol,
        parameters=parameters or {},
        owner=owner,
        controls={
            "max_items_per_worker": setting_defaults(registry.get(protocol))["max_items_per_worker"]
        },
    )


def draft_settings_update(
    *,
    campaign: Campaign,
    parameters: Mapping[str, Any],
    values: Mapping[str, Any],
    study: Mapping[str, Any] | None = None,
) -> Campaign:
    """Set a draft's protocol parameters, its settings (``SETTINGS``) and its study pages'
    texts (``study_pages.STUDY_FIELDS``), all or nothing. The budget goes through the ledger
    (``campaign_budget_set``): a launch that failed partway leaves a draft with money
    committed, and the budget never goes below it."""
    draft_check(campaign)
    unknown = sorted(set(values) - set(SETTINGS))
    if unknown:
        raise InvalidParameters(f"Unknown setting(s): {', '.join(unknown)}.")
    rest = {k: v for k, v in values.items() if k != "budget"}
    with transaction.atomic():
        updated = campaign_settings_update(
            campaign=campaign, values=rest, parameters=parameters, study=study
        )
        if "budget" in values:
            updated = campaign_budget_set(campaign=updated, budget=values["budget"])
        return updated


# A study file's own items name files beside it, which an uploaded file cannot reach.
_FILE_NAME = re.compile(r"[^A-Za-z0-9._-]")


def draft_from_study_file(*, owner: Any, name: str, content: bytes) -> Campaign:
    """Create a draft from an uploaded study file (``annotation.studyfiles``): its protocol,
    parameters, settings and study texts, owned by ``owner``. The files its ``items`` section
    names are beside it on the researcher's disk, not here: they are not read, and the items
    are uploaded in step 3. All or nothing; StudyFileError names the key."""
    if len(content) > STUDY_FILE_MAX_BYTES:
        raise InvalidParameters(
            f"{name}: a study file is at most {STUDY_FILE_MAX_BYTES // 2**20} MB."
        )
    safe = _FILE_NAME.sub("_", Path(name).name)[-100:] or "study.yaml"
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / safe
        path.write_bytes(content)
        data = study_load(path)  # its errors name the uploaded file and line
        data.pop("items", None)
        path.write_text(json.dumps(data, default=str), encoding="utf-8")  # JSON is YAML too
        return study_create(study=study_read(path, owner=getattr(owner, "username", None))).campaign
