"""What the provider commands (launch, review, pay, block, sync_provider) share beside
``annotation.management.cli``: the publication, and amounts of money.

Not a command itself (the leading underscore keeps Django from listing it).
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from django.core.management.base import CommandError

from annotation.models import Campaign
from recruitment.models import Publication


def publication_get(campaign: Campaign, provider: str | None) -> Publication:
    """Return the campaign's publication on ``provider`` (or its only one)."""
    publications = list(Publication.objects.filter(campaign=campaign))
    if provider:
        publications = [p for p in publications if p.provider == provider]
    if not publications:
        where = f" on {provider}" if provider else ""
        raise CommandError(f"'{campaign.slug}' is not published{where}; run launch first.")
    if len(publications) > 1:
        names = ", ".join(p.provider for p in publications)
        raise CommandError(f"'{campaign.slug}' is published on {names}; choose with --provider.")
    return publications[0]


def amount(text: str, what: str = "amount") -> Decimal:
    """Parse a money amount like 0.25; raise CommandError otherwise."""
    try:
        value = Decimal(text)
    except (InvalidOperation, TypeError):
        raise CommandError(f"The {what} {text!r} is not a number like 0.25.") from None
    if not value.is_finite() or value <= 0 or value != value.quantize(Decimal("0.01")):
        raise CommandError(f"The {what} must be more than 0 with at most 2 decimals.")
    if value > Decimal("1000"):
        raise CommandError(f"The {what} {value} is over 1000; refusing what looks like a typo.")
    return value
