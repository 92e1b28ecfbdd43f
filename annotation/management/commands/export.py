"""``python manage.py export <campaign> --format csv|jsonl|parquet``: raw judgments out."""

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.exports import FORMATS, frame_write, judgments_export_frame
from annotation.models import Campaign


class Command(BaseCommand):
    help = (
        "Export a campaign's raw judgments (one row per item, worker and question, with the "
        "item's payload) as CSV, JSONL or Parquet. Workers appear only by pseudonym; gold "
        "checks are left out, and so are soft-blocked workers unless --include-flagged."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("campaign", help="The campaign's slug.")
        parser.add_argument(
            "--format", choices=FORMATS, default="csv", help="File format (default csv)."
        )
        parser.add_argument(
            "--out",
            type=Path,
            help="File to write; default var/exports/<campaign>-judgments.<format>.",
        )
        parser.add_argument(
            "--include-flagged",
            action="store_true",
            help="Also export soft-blocked workers' judgments (column 'flagged' marks them).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        campaign = Campaign.objects.filter(slug=options["campaign"]).first()
        if campaign is None:
            raise CommandError(f"No campaign {options['campaign']!r}.")
        fmt = options["format"]
        out = options["out"] or (settings.DATA_DIR / "exports" / f"{campaign.slug}-judgments.{fmt}")
        if out.is_dir():
            raise CommandError(f"{out} is a folder; give a file name.")
        frame = judgments_export_frame(campaign, include_flagged=options["include_flagged"])
        try:
            frame_write(frame, out, fmt)
        except OSError as exc:
            raise CommandError(f"Cannot write {out}: {exc.strerror}") from None
        self.stdout.write(f"wrote {len(frame)} judgments to {out}")
