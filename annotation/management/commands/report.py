"""``python manage.py report <campaign>``: print a campaign's report, optionally write files."""

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.models import Campaign
from annotation.selectors import campaign_progress, campaign_report
from evalstats.options import INTERVALS, METHODS, report_options_set
from evalstats.reports import report_text, report_write


class Command(BaseCommand):
    help = (
        "Print a campaign's report (scores with 95% CIs that respect the study's design, "
        "agreement); --out writes the files. Tables longer than --max-rows are written to "
        "files and summarised."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("campaign", help="The campaign's slug.")
        parser.add_argument(
            "--out", type=Path, help="Folder to write the tables (CSV) and figures (PNG, SVG) to."
        )
        parser.add_argument(
            "--n-boot",
            type=int,
            help="Bootstrap resamples for every bootstrap interval (default: the protocol's "
            "n_boot parameter, or 1000).",
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
        parser.add_argument(
            "--method",
            choices=METHODS,
            default="design",
            help="Intervals that respect the design (default: items crossed with raters, "
            "conversations, dialogues) or 'independent': every judgment taken as independent, "
            "as the published papers did (for comparison only).",
        )
        parser.add_argument(
            "--aggregate",
            default="majority",
            help="How the label protocols (categorical, emocontext) pick each item's label: "
            "'majority' (default: ties left unlabeled), 'ds' (Dawid–Skene) or 'mace'; with "
            "ds or mace the report adds each rater's estimated reliability (SSA keeps the "
            "majority its intervals are built on).",
        )
        parser.add_argument(
            "--interval",
            choices=INTERVALS,
            default="auto",
            help="What the agreement intervals resample: 'auto' (default: items and raters, "
            "the two-way bootstrap, when raters repeat across items; else items), 'two-way' "
            "or 'units' (items only, the interval before issue #33).",
        )
        parser.add_argument(
            "--max-rows",
            type=int,
            default=40,
            help="Print at most this many rows of a table (default 40); a longer table is "
            "written to a file (to --out, else to ./report-<campaign>/) and summarised.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        campaign = Campaign.objects.filter(slug=options["campaign"]).first()
        if campaign is None:
            known = ", ".join(Campaign.objects.values_list("slug", flat=True)[:20]) or "none"
            raise CommandError(f"No campaign {options['campaign']!r}; campaigns: {known}.")
        if options["max_rows"] < 1:
            raise CommandError("--max-rows must be at least 1.")
        progress = campaign_progress(campaign)
        self.stdout.write(
            f"{campaign.name} [{campaign.protocol}, {campaign.status}]: {progress.done} of "
            f"{progress.needed} judgments ({progress.fraction:.0%}), {progress.workers} workers"
        )
        try:
            with report_options_set(
                n_boot=options["n_boot"],
                seed=options["seed"],
                level=options["ci_level"],
                method=options["method"],
                aggregate=options["aggregate"],
                interval=options["interval"],
            ):
                report = campaign_report(campaign)
        except ValueError as error:
            raise CommandError(str(error)) from None
        out = options["out"]
        if out is None and any(len(t) > options["max_rows"] for t in report.tables.values()):
            out = Path(f"report-{campaign.slug}")
        written = report_write(report, out, stem=campaign.slug) if out else []
        files = {name: out / f"{campaign.slug}_{name}.csv" for name in report.tables} if out else {}
        self.stdout.write(report_text(report, max_rows=options["max_rows"], files=files))
        for path in written:
            self.stdout.write(f"wrote {path}")
