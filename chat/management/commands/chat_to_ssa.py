"""``python manage.py chat_to_ssa <source> <new-slug>``: human–human SSA of collected chats."""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.models import Campaign
from chat.human_ssa import ssa_campaign_from_conversations
from evalsite.errors import AnnotationError


class Command(BaseCommand):
    help = (
        "Turn the complete conversations of a live chat campaign (e.g. ED collection) into a "
        "draft static SSA campaign: every turn after the first is an item, labeled sensible / "
        "specific by third-party workers (5 per turn, majority), as Meena's human baseline."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("source", help="Slug of the campaign whose conversations to use.")
        parser.add_argument("slug", help="Slug of the new SSA campaign.")
        parser.add_argument("--name", default="", help="Name of the new campaign.")
        parser.add_argument(
            "--redundancy", type=int, default=5, help="Workers per turn (default 5)."
        )
        parser.add_argument(
            "--include-flagged",
            action="store_true",
            help="Also use flagged conversations (pasted text); left out by default.",
        )
        parser.add_argument(
            "--max-context",
            type=int,
            default=0,
            help="Turns of context shown before each turn (default 0: all of them).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        source = Campaign.objects.filter(slug=options["source"]).first()
        if source is None:
            raise CommandError(f"There is no campaign {options['source']!r}.")
        try:
            campaign = ssa_campaign_from_conversations(
                source=source,
                slug=options["slug"],
                name=options["name"],
                redundancy=options["redundancy"],
                include_flagged=options["include_flagged"],
                max_context=options["max_context"],
            )
        except AnnotationError as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(
            f"Created draft SSA campaign {campaign.slug} with {campaign.items.count()} turns "
            f"to label ({campaign.redundancy} workers each). Set it live to start."
        )
