"""The audit log: who approved, rejected, paid, blocked or forgot whom, and when. Every
service that takes such an action appends its line here, in the action's transaction."""

from __future__ import annotations

from decimal import Decimal

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
