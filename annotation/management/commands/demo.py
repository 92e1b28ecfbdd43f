"""``python manage.py demo``: the whole platform on embedded defaults, in one command."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.datasets.records import DatasetError
from annotation.demo import STUDIES, DemoStudy, demo_contexts, demo_dialogues, study_create
from annotation.demo.acute import acute_study_run
from annotation.demo.chat import SSA_CHAT, chat_studies_create, ssa_chats_simulate
from annotation.demo.judge import judges_demo
from annotation.exceptions import AnnotationError
from annotation.models import Campaign
from annotation.reports import report_text, report_write
from annotation.selectors import campaign_progress, campaign_report
from annotation.simulation import crowd_make, crowd_run
from modelhub.demo import STREAMING_BOT, demo_endpoints_register


class Command(BaseCommand):
    help = (
        "Run the demo: load the demo corpus, register the demo models (GenericBot, the gold "
        "replies, the MiniLM retrieval bot, a tiny GPT-2), create a Likert, an A/B and an SSA "
        "campaign, fill them with a simulated crowd, print and write the reports, then serve "
        "the platform (unless --no-server)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--no-server", action="store_true", help="Stop after writing the reports."
        )
        parser.add_argument(
            "--out",
            type=Path,
            default=None,
            help="Folder for the report files (CSV, JSON, PNG, SVG, TXT); default var/demo-report.",
        )
        parser.add_argument("--seed", type=int, default=0, help="Seed of the simulated crowd.")
        parser.add_argument(
            "--no-tiny-model",
            action="store_true",
            help="Skip training the tiny GPT-2 (saves about a minute on a slow machine).",
        )
        parser.add_argument(
            "--addrport", default="127.0.0.1:8000", help="Where the server listens."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        out: Path = options["out"] or settings.DATA_DIR / "demo-report"
        settings.DATA_DIR.mkdir(parents=True, exist_ok=True)
        call_command("migrate", verbosity=0, interactive=False)
        try:
            campaigns = self._studies(tiny_model=not options["no_tiny_model"])
        except (DatasetError, AnnotationError) as exc:
            raise CommandError(getattr(exc, "message", str(exc))) from None
        for study, campaign in campaigns:
            self._fill(study, campaign, seed=options["seed"])
            report = campaign_report(campaign)
            self.stdout.write(report_text(report))
            for path in report_write(report, out, stem=study.protocol):
                self.stdout.write(f"wrote {path}")
        judges_demo(campaigns=[c for _, c in campaigns], out=out, write=self.stdout.write)
        chats = chat_studies_create()  # live chats: annotation/demo/chat.py, docs/chat.md
        for campaign in chats:
            if campaign.slug == SSA_CHAT:
                self.stdout.write("Simulated workers chatting with the demo bots …")
                ssa_chats_simulate(campaign=campaign, seed=options["seed"])
            report = campaign_report(campaign)
            self.stdout.write(report_text(report))
            for path in report_write(report, out, stem=campaign.protocol):
                self.stdout.write(f"wrote {path}")
        chats += acute_study_run(seed=options["seed"], out=out, write=self.stdout.write)

        if options["no_server"]:
            return
        password = self._admin_password()
        host = options["addrport"]
        pages = "".join(
            f"  {c.name}:\n    http://{host}/task/{c.slug}/?workerId=you\n"
            for c in [c for _, c in campaigns] + chats
        )
        self.stdout.write(
            self.style.SUCCESS("\nThe demo is running.\n")
            + "Worker pages (change workerId to be someone else):\n"
            + pages
            + f"Dashboard: http://{host}/dashboard/  (user: admin, password: {password})\n"
            + f"Admin (raw data): http://{host}/admin/\n"
            + "Stop it with Ctrl+C.\n"
        )
        call_command("runserver", host, use_reloader=False)

    def _studies(self, *, tiny_model: bool) -> list[tuple[DemoStudy, Campaign]]:
        """Create the demo studies once; a re-run reuses them and their judgments."""
        dialogues = demo_dialogues()
        contexts = demo_contexts(dialogues)
        if not all(Campaign.objects.filter(slug=s.slug).exists() for s in STUDIES):
            self.stdout.write("Registering the demo models …")
            rated = {c.reference for c in contexts}
            pool = [u.text for d in dialogues for u in d.utterances if u.text not in rated]
            endpoints = demo_endpoints_register(
                candidates=pool,
                dialogues=[[u.text for u in d.utterances] for d in dialogues],
                tiny_model=tiny_model,
            )
            # The streaming bot is the live chat's; the static studies rate the others.
            models = [e.name for e in endpoints if e.name != STREAMING_BOT]
        else:
            models = []
        campaigns = []
        for study in STUDIES:
            existed = Campaign.objects.filter(slug=study.slug).exists()
            campaign = study_create(study, contexts, models)
            if not existed:
                self.stdout.write(f"Created campaign {study.slug}: {campaign.items.count()} items.")
            campaigns.append((study, campaign))
        return campaigns

    def _fill(self, study: DemoStudy, campaign: Campaign, *, seed: int) -> None:
        progress = campaign_progress(campaign)
        target = progress.items * study.simulated
        if progress.done >= target:
            return
        self.stdout.write(f"Simulated crowd judging {campaign.slug} ({progress.items} items) …")
        run = crowd_run(
            campaign=campaign,
            workers=crowd_make(),
            truth=study.truth,
            seed=seed,
            max_items=target - progress.done,
            progress=lambda n: self._bar(progress.done + n, target),
        )
        self.stdout.write("")
        for error in run.errors:
            self.stderr.write(f"  refused: {error}")

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
