"""What the provider commands (launch, review, pay, block, sync_provider) share.

Not a command itself (the leading underscore keeps Django from listing it).
"""

from __future__ import annotations

import getpass
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import Any, TypeVar

from django.core.management.base import CommandError, CommandParser

from annotation.exceptions import AnnotationError
from annotation.models import Campaign, Publication

T = TypeVar("T")
PROVIDERS = ("mturk", "prolific", "local")


def add_actor(parser: CommandParser) -> None:
    """Add ``--by``: who is acting, for the audit log."""
    parser.add_argument(
        "--by",
        default="",
        help="Who is acting, for the audit log (default: cli:<your login name>).",
    )


def actor(options: dict[str, Any]) -> str:
    """Return the audit log's actor for this command run."""
    if options.get("by"):
        return str(options["by"])[:150]
    try:
        return f"cli:{getpass.getuser()}"
    except (KeyError, OSError):
        return "cli"


def campaign_get(slug: str) -> Campaign:
    """Return the campaign or raise CommandError listing a few known slugs."""
    campaign = Campaign.objects.filter(slug=slug).first()
    if campaign is None:
        known = ", ".join(Campaign.objects.values_list("slug", flat=True)[:20]) or "none"
        raise CommandError(f"No campaign {slug!r}; campaigns: {known}.")
    return campaign


def publication_get(campaign: Campaign, provider: str | None) -> Publication:
    """Return the campaign's publication on ``provider`` (or its only one)."""
    publications = list(campaign.publications.all())
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


def run(call: Callable[[], T]) -> T:
    """Run a service; turn its refusal into a CommandError with the message (no traceback)."""
    try:
        return call()
    except AnnotationError as exc:
        details = "; ".join(
            f"{k}: {v}" for k, v in exc.fields.items() if k not in ("code", "status")
        )
        raise CommandError(exc.message + (f" ({details})" if details else "")) from None
