"""``python manage.py campaign_export_config <campaign> [--out DIR]``: the campaign as a study
file that ``campaign_create`` reads back (docs/datasets.md, "Studies as files")."""

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.models import Campaign
from annotation.studyfiles import study_export


class Command(BaseCommand):
    help = (
        "Write a campaign's design as a study file: its settings, the protocol's parameters, "
        "the study texts and owner, with its items, gold and training items as JSONL files "
        "beside it. `campaign_create` of that file re-creates an equal campaign (a draft, "
        "without workers or judgments)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("campaign", help="The campaign's slug.")
        parser.add_argument(
            "--out",
            type=Path,
            default=Path("."),
            help="Folder to write <slug>.yaml and its JSONL files to (default: here).",
        )
        parser.add_argument(
            "--format",
            choices=["yaml", "json"],
            default="yaml",
            help="The study file's format (default yaml).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        campaign = Campaign.objects.select_related("owner").filter(slug=options["campaign"]).first()
        if campaign is None:
            raise CommandError(f"No campaign {options['campaign']!r}.")
        try:
            written = study_export(campaign=campaign, folder=options["out"], fmt=options["format"])
        except OSError as exc:
            raise CommandError(f"Cannot write to {options['out']}: {exc.strerror}") from None
        for path in written:
            self.stdout.write(f"wrote {path}")
