"""``python manage.py sync_provider <campaign>``: reconcile assignments with the provider."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.management.cli import PROVIDERS, actor, add_actor, campaign_get, run
from recruitment.management.commands._provider_cli import publication_get
from recruitment.services import publication_sync, publications_sync


class Command(BaseCommand):
    help = (
        "Bring assignments in line with the provider (submitted elsewhere, returned, expired); "
        "judgments are never lost."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("campaign", nargs="?", help="The campaign's slug (or use --all).")
        parser.add_argument(
            "--provider", choices=PROVIDERS, help="Which publication, if there are several."
        )
        parser.add_argument(
            "--all", action="store_true", help="Sync every live or paused publication."
        )
        add_actor(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        if options["all"]:
            for name, summary in publications_sync(actor=actor(options)).items():
                self.stdout.write(f"{name}: {summary}")
            return
        if not options["campaign"]:
            raise CommandError("Name a campaign, or use --all.")
        publication = publication_get(campaign_get(options["campaign"]), options["provider"])
        report = run(lambda: publication_sync(publication=publication, actor=actor(options)))
        self.stdout.write(f"{publication}: {report.summary()}")
        if report.unknown:
            self.stdout.write(
                "Submitted on the provider with no work here (review rejects them): "
                + ", ".join(report.unknown[:20])
            )
