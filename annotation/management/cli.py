"""What the management commands share: who acts (``--by``), the campaign by slug, and a
service's refusal as a CommandError (no traceback)."""

from __future__ import annotations

import getpass
from collections.abc import Callable
from typing import Any, TypeVar

from django.core.management.base import CommandError, CommandParser

from annotation.models import Campaign
from evalsite.errors import AnnotationError

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


def run(call: Callable[[], T]) -> T:
    """Run a service; turn its refusal into a CommandError with the message (no traceback)."""
    try:
        return call()
    except AnnotationError as exc:
        details = "; ".join(
            f"{k}: {v}" for k, v in exc.fields.items() if k not in ("code", "status")
        )
        raise CommandError(exc.message + (f" ({details})" if details else "")) from None
