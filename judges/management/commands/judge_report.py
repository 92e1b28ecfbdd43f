"""``python manage.py judge_report <campaign>``: how the campaign's LLM judges agree with its
crowd (tables as CSV/JSON, a PNG/SVG figure, the text)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.models import Campaign
from evalstats.reports import report_text, report_write
from judges.selectors import campaign_judge_report

MAX_BOOT = 100_000


class Command(BaseCommand):
    help = (
        "Report how the campaign's LLM judges agree with its crowd: Cohen's kappa with the "
        "crowd's majority and with each worker, Krippendorff's alpha with the judge as one "
        "more rater, the rank correlation of the models' scores, A/B position bias, the items "
        "of most disagreement, a figure."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("campaign", help="The campaign's slug.")
        parser.add_argument(
            "--out",
            type=Path,
            help="Folder to write the tables (CSV, JSON), the figure (PNG, SVG) and the text to.",
        )
        parser.add_argument(
            "--n-boot",
            type=int,
            default=1000,
            help="Bootstrap resamples (over items) of every interval (default 1000).",
        )
        parser.add_argument(
            "--seed", type=int, default=0, help="Seed of the bootstraps (default 0: reproducible)."
        )
        parser.add_argument(
            "--ci-level",
            type=float,
            default=0.95,
            help="Confidence level of every interval (default 0.95).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        campaign = Campaign.objects.filter(slug=options["campaign"]).first()
        if campaign is None:
            raise CommandError(f"No campaign {options['campaign']!r}.")
        if not 0 <= options["n_boot"] <= MAX_BOOT:
            raise CommandError(f"--n-boot must be from 0 to {MAX_BOOT}.")
        if not 0 < options["ci_level"] < 1:
            raise CommandError("--ci-level must lie strictly between 0 and 1.")
        report = campaign_judge_report(
            campaign, n_boot=options["n_boot"], seed=options["seed"], level=options["ci_level"]
        )
        written = (
            report_write(report, options["out"], stem=f"{campaign.slug}_judges")
            if options["out"]
            else []
        )
        self.stdout.write(report_text(report))
        for path in written:
            self.stdout.write(f"wrote {path}")
