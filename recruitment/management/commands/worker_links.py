"""``python manage.py worker_links <campaign> …``: the personal signed links of a local study."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.models import Campaign
from evalsite.errors import AnnotationError
from evalstats.spreadsheets import cell_safe
from recruitment.services import worker_links


class Command(BaseCommand):
    help = (
        "Print (or write) CSV rows worker_id,link: each link opens the study for that worker "
        "only. Issue them for a local study without open links (docs/providers.md, Identity)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("campaign", help="The campaign's slug.")
        parser.add_argument(
            "--workers", default="", help="Worker ids, comma-separated (e.g. lab codes)."
        )
        parser.add_argument("--file", type=Path, help="A text file with one worker id per line.")
        parser.add_argument(
            "--count", type=int, default=0, help="How many links with new random ids (p-…)."
        )
        parser.add_argument(
            "--base-url",
            default="",
            help="Put before each link's path, e.g. https://evalsite.example.org.",
        )
        parser.add_argument("--out", type=Path, help="Write the CSV here instead of stdout.")

    def handle(self, *args: Any, **options: Any) -> None:
        campaign = Campaign.objects.filter(slug=options["campaign"]).first()
        if campaign is None:
            raise CommandError(f"No campaign {options['campaign']!r}.")
        ids = [w for w in options["workers"].split(",") if w.strip()]
        if options["file"] is not None:
            try:
                text = options["file"].read_text(encoding="utf-8-sig")
            except (OSError, UnicodeDecodeError) as exc:
                raise CommandError(f"Cannot read {options['file']}: {exc}") from None
            ids += [line for line in text.splitlines() if line.strip()]
        try:
            links = worker_links(
                campaign=campaign,
                worker_ids=ids,
                count=options["count"],
                base_url=options["base_url"],
            )
        except AnnotationError as exc:
            raise CommandError(exc.message) from None
        if campaign.open_links:
            self.stderr.write(
                "Note: this campaign has open links, so any workerId is accepted; the "
                "personal links still work when you turn open links off."
            )
        out = options["out"]
        try:
            handle: Any = out.open("w", encoding="utf-8", newline="") if out else self.stdout
        except OSError as exc:
            raise CommandError(f"Cannot write {out}: {exc.strerror}") from None
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["worker_id", "link"])
        writer.writerows([cell_safe(cell) for cell in link] for link in links)
        if out:
            handle.close()
            self.stdout.write(f"wrote {len(links)} links to {out}")
