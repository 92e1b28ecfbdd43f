"""A campaign's consents per worker: what each agreed to and when, and who withdrew.

Reads the rows the worker pages write (``annotation.services.consents``: one ``Consent`` per
worker and consent version) and the audit log's withdrawals (``worker_forget``: action
``forget``). A worker who declines is sent away and nothing is stored (docs/protocols.md), so
declines cannot be listed. Two queries whatever the number of workers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import Q

from annotation.models import AuditLog, Campaign, Consent


@dataclass
class ConsentRow:
    """One worker: the consent versions they agreed to (with times) and their withdrawal."""

    pseudonym: str
    provider: str
    consents: list[tuple[str, datetime]] = field(default_factory=list)
    withdrawn_at: datetime | None = None
    withdrawn_here: bool = False  # asked for on this campaign's pages (else on another's)

    current: bool = False  # agreed to the campaign's current consent version


def consent_rows(campaign: Campaign) -> list[ConsentRow]:
    """Return every worker who consented to the campaign or withdrew from it, by pseudonym."""
    rows: dict[int, ConsentRow] = {}
    consents = (
        Consent.objects.filter(campaign=campaign)
        .order_by("given_at", "pk")
        .values_list("worker", "worker__pseudonym", "worker__provider", "version", "given_at")
    )
    for worker, pseudonym, provider, version, given_at in consents:
        row = rows.setdefault(worker, ConsentRow(pseudonym, provider))
        row.consents.append((version, given_at))
    withdrawals = AuditLog.objects.filter(
        Q(campaign=campaign) | Q(worker__in=list(rows)),
        action=AuditLog.Action.FORGET,
        worker__isnull=False,
    ).values_list("worker", "worker__pseudonym", "worker__provider", "campaign", "created_at")
    for worker, pseudonym, provider, where, at in withdrawals.order_by("created_at"):
        row = rows.setdefault(worker, ConsentRow(pseudonym, provider))
        row.withdrawn_at = row.withdrawn_at or at
        row.withdrawn_here = row.withdrawn_here or where == campaign.pk
    for row in rows.values():
        row.current = any(v == campaign.consent_version for v, _ in row.consents)
    return sorted(rows.values(), key=lambda r: r.pseudonym)
