"""``python manage.py demo``: the whole platform on embedded defaults, in one command."""

from __future__ import annotations

import hashlib
import secrets
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.corpora import CorpusError, read_empathetic_dialogues
from annotation.exceptions import AnnotationError
from annotation.models import Campaign, Item
from annotation.protocols.likert import likert_items
from annotation.reports import report_text, report_write
from annotation.selectors import campaign_progress, campaign_report
from annotation.services import campaign_create, campaign_set_status, items_add
from annotation.simulation import crowd_make, crowd_run
from modelhub.backends import Example
from modelhub.services import endpoint_register, generations_ensure

CORPUS = Path(__file__).resolve().parents[2] / "demo" / "empathetic_demo.csv"
SLUG = "demo-likert"
# Each item gets this many simulated ratings; the campaign takes one more, so a person who
# opens the worker link still finds items to rate.
SIMULATED_RATINGS = 3


def demo_truth(item: Item) -> dict[str, float]:
    """Return the simulated crowd's "true" ratings of a demo item (the demo's assumption)."""
    payload = item.payload
    spread = int(hashlib.sha256(item.key.encode()).hexdigest(), 16) % 100 / 100
    if payload["model"] == "gold":
        return {
            "empathy": 3.6 + spread,
            "relevance": 4.0 + spread * 0.8,
            "fluency": 4.3 + spread * 0.6,
        }
    question = payload["context"][-1].rstrip().endswith("?")
    relevance = (2.6 if question else 1.7) + spread * 0.5
    return {"empathy": 1.4 + spread * 0.6, "relevance": relevance, "fluency": 4.0 + spread * 0.8}


class Command(BaseCommand):
    help = (
        "Run the demo: load the demo corpus, register the demo models (GenericBot and the gold "
        "replies), create a Likert campaign, fill it with a simulated crowd, print the report, "
        "then serve the platform (unless --no-server)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--no-server", action="store_true", help="Stop after writing the report."
        )
        parser.add_argument(
            "--out",
            type=Path,
            default=None,
            help="Folder for the report files (CSV, PNG, SVG, TXT); default var/demo-report.",
        )
        parser.add_argument("--seed", type=int, default=0, help="Seed of the simulated crowd.")
        parser.add_argument(
            "--addrport", default="127.0.0.1:8000", help="Where the server listens."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        out: Path = options["out"] or settings.DATA_DIR / "demo-report"
        settings.DATA_DIR.mkdir(parents=True, exist_ok=True)
        call_command("migrate", verbosity=0, interactive=False)

        campaign = self._campaign()
        progress = campaign_progress(campaign)
        target = progress.items * SIMULATED_RATINGS
        if progress.done < target:
            self.stdout.write(f"Simulated crowd rating {progress.items} items …")
            run = crowd_run(
                campaign=campaign,
                workers=crowd_make(),
                truth=demo_truth,
                seed=options["seed"],
                max_items=target - progress.done,
                progress=lambda n: self._bar(progress.done + n, target),
            )
            self.stdout.write("")
            for error in run.errors:
                self.stderr.write(f"  refused: {error}")

        report = campaign_report(campaign)
        self.stdout.write(report_text(report))
        for path in report_write(report, out, stem="likert"):
            self.stdout.write(f"wrote {path}")

        if options["no_server"]:
            return
        password = self._admin_password()
        host = options["addrport"]
        self.stdout.write(
            self.style.SUCCESS("\nThe demo is running.\n")
            + f"  Worker page: http://{host}/task/{SLUG}/?workerId=you\n"
            + f"  Admin:       http://{host}/admin/  (user: admin, password: {password})\n"
            + "Stop it with Ctrl+C.\n"
        )
        call_command("runserver", host, use_reloader=False)

    def _campaign(self) -> Campaign:
        """Create the demo campaign once; a re-run reuses it and its judgments."""
        existing = Campaign.objects.filter(slug=SLUG).first()
        if existing is not None:
            return existing
        try:
            dialogues = read_empathetic_dialogues(CORPUS)
        except CorpusError as exc:
            raise CommandError(str(exc)) from None
        examples = [(d.conv_id, [t for _, t in d.turns[:-1]]) for d in dialogues]
        refs = [
            Example(turns=tuple(c), reference=d.turns[-1][1])
            for d, (_, c) in zip(dialogues, examples, strict=True)
        ]
        models = {
            "generic-bot": endpoint_register(
                name="generic-bot",
                backend="generic_bot",
                notes="Meena's calibration baseline (PROTOCOLS.md §6).",
            ),
            "gold": endpoint_register(
                name="gold", backend="gold", notes="The human reply from the dataset."
            ),
        }
        responses = {
            name: generations_ensure(endpoint=e, examples=refs) for name, e in models.items()
        }
        try:
            campaign = campaign_create(
                slug=SLUG,
                name="Demo: rate responses to empathetic dialogues",
                protocol="likert",
                parameters={"reference_model": "generic-bot", "min_ratings_per_model": 100},
                redundancy=SIMULATED_RATINGS + 1,
                items_per_assignment=10,
            )
            items_add(campaign=campaign, items=likert_items(examples, responses))
            campaign_set_status(campaign=campaign, status=Campaign.Status.LIVE)
        except AnnotationError as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(
            f"Created campaign {SLUG}: {len(examples)} dialogues × {len(models)} models."
        )
        return campaign

    def _bar(self, done: int, total: int) -> None:
        width = 40
        filled = int(width * done / total) if total else width
        if done == total or done % max(1, total // 20) == 0:
            self.stdout.write(
                f"\r  [{'#' * filled}{'.' * (width - filled)}] {done}/{total}", ending=""
            )
            self.stdout.flush()

    def _admin_password(self) -> str:
        """Create or reset the demo superuser with a new random password; return it."""
        password = secrets.token_urlsafe(12)
        user_model = get_user_model()
        user, _ = user_model.objects.get_or_create(
            username="admin", defaults={"is_staff": True, "is_superuser": True}
        )
        user.is_staff = user.is_superuser = True
        user.set_password(password)
        user.save()
        return password
