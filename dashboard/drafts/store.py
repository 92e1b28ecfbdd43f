"""Persistence of the wizard's draft state: one ``dashboard.Draft`` row per draft campaign.

Nothing of a draft lives in files, so any web process (or host) continues the wizard where
another left it. The row is made on a draft's first write and read without locks. Every
write happens under the row's lock (``draft_locked``: ``SELECT … FOR UPDATE`` on
PostgreSQL; SQLite's IMMEDIATE transactions serialise writers), so two requests of the same
draft see each other's writes instead of overwriting them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from annotation.models import Campaign
from dashboard.models import Draft

# A waiting upload untouched this long is forgotten by housekeeping (its generations stay
# stored, so uploading it again adds its items at once).
DRAFT_KEPT_FOR = timedelta(days=30)


def draft_locked(campaign: Campaign) -> Draft:
    """Return the campaign's ``Draft`` row, made if missing, locked until the transaction ends.

    The caller must be inside ``transaction.atomic``. ``upload`` is loaded on first access.
    """
    # ON CONFLICT DO NOTHING: two first writers make one row, and neither fails.
    Draft.objects.bulk_create(
        [Draft(campaign=campaign, owner_id=campaign.owner_id)], ignore_conflicts=True
    )
    return Draft.objects.select_for_update().defer("upload").get(campaign=campaign)


def draft_state(campaign: Campaign) -> dict[str, Any]:
    """Return the draft's state (empty when it has none); never reads the upload."""
    state = Draft.objects.filter(campaign=campaign).values_list("state", flat=True).first()
    return dict(state or {})


def draft_save(draft: Draft, *, changes: Mapping[str, Any], upload: str | None = None) -> None:
    """Merge ``changes`` into a locked draft's state (a None value removes its key) and save.

    ``upload`` replaces the stored upload when given. The caller holds ``draft_locked``.
    """
    state = dict(draft.state)
    for key, value in changes.items():
        if value is None:
            state.pop(key, None)
        else:
            state[key] = value
    draft.state = state
    fields = ["state", "updated_at"]
    if upload is not None:
        draft.upload = upload
        fields.append("upload")
    draft.save(update_fields=fields)


@transaction.atomic
def draft_state_update(*, campaign: Campaign, changes: Mapping[str, Any]) -> dict[str, Any]:
    """Merge ``changes`` into the draft's state under its row lock; return the new state."""
    draft = draft_locked(campaign)
    draft_save(draft, changes=changes)
    return dict(draft.state)


def draft_upload_records(draft: Draft) -> Any:
    """Return the stored upload's records (decoded JSON), or None when there is none."""
    return json.loads(draft.upload) if draft.upload else None


def draft_upload_text(records: Mapping[str, Any]) -> str:
    """Encode an upload's records for ``draft_save`` (JSON text keeps their order)."""
    return json.dumps(records, ensure_ascii=False)


def drafts_expire(*, now: datetime | None = None) -> int:
    """Delete draft rows untouched for ``DRAFT_KEPT_FOR`` or whose campaign left the draft
    status; return how many. The campaigns themselves stay as they are."""
    now = now or timezone.now()
    stale = Q(updated_at__lt=now - DRAFT_KEPT_FOR) | ~Q(campaign__status=Campaign.Status.DRAFT)
    deleted, _ = Draft.objects.filter(stale).delete()
    return deleted
