"""``python manage.py report <campaign>``: print a campaign's report, optionally write files."""

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.models import Campaign
from annotation.reports import report_text, report_write
from annotation.selectors import campaign_progress, campaign_report


class Command(BaseCommand):
    help = "Print a campaign's report (scores with SEM/CIs, agreement); --out writes the files."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("campaign", help="The campaign's slug.")
        parser.add_argument(
            "--out", type=Path, help="Folder to write the tables (CSV) and figures (PNG, SVG) to."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        campaign = Campaign.objects.filter(slug=options["campaign"]).first()
        if campaign is None:
            known = ", ".join(Campaign.objects.values_list("slug", flat=True)[:20]) or "none"
            raise CommandError(f"No campaign {options['campaign']!r}; campaigns: {known}.")
        progress = campaign_progress(campaign)
        self.stdout.write(
            f"{campaign.name} [{campaign.protocol}, {campaign.status}]: {progress.done} of "
            f"{progress.needed} judgments ({progress.fraction:.0%}), {progress.workers} workers"
        )
        report = campaign_report(campaign)
        self.stdout.write(report_text(report))
        if options["out"]:
            for path in report_write(report, options["out"], stem=campaign.slug):
                self.stdout.write(f"wrote {path}")
