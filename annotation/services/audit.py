"""The audit log: who approved, rejected, paid, blocked or forgot whom, and who changed a
launched campaign's settings, and when. Every service that takes such an action appends its
line here, in the action's transaction."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from annotation.models import Assignment, AuditLog, Campaign, Worker


def audit_add(
    *,
    action: str,
    actor: str,
    campaign: Campaign | None = None,
    provider: str = "",
    worker: Worker | None = None,
    assignment: Assignment | None = None,
    amount: Decimal | None = None,
    detail: str = "",
) -> AuditLog:
    """Append one line to the audit log."""
    return AuditLog.objects.create(
        action=action,
        actor=actor[:150],
        campaign=campaign,
        provider=provider,
        worker=worker,
        assignment=assignment,
        amount=amount,
        detail=detail,
    )


# How much of one value a settings line keeps (study texts run to thousands of characters).
SHOWN_CHARS = 80


def _shown(value: Any) -> str:
    text = "none" if value is None else str(value)
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…"


def audit_settings(
    *, campaign: Campaign, actor: str, old: Mapping[str, Any], new: Mapping[str, Any]
) -> AuditLog | None:
    """Append one line naming each setting whose value changes, ``name: old → new``, in
    the order given; nothing when none changes (a form saved as it was). ``old`` holds the
    values before, read under the campaign's row lock."""
    changed = [name for name, value in new.items() if old[name] != value]
    if not changed:
        return None
    detail = "; ".join(f"{n}: {_shown(old[n])} → {_shown(new[n])}" for n in changed)
    return audit_add(action=AuditLog.Action.SETTINGS, actor=actor, campaign=campaign, detail=detail)
