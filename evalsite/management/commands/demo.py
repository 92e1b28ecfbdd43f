"""``python manage.py demo``: the whole platform on embedded defaults, in one command."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import torch
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.models import Campaign
from annotation.selectors import campaign_report
from corpora.records import DatasetError
from dashboard.models import Job
from dashboard.selectors import campaign_row, report_judgments
from dashboard.services import job_start
from evalsite.demo import (
    STUDIES,
    DemoStudy,
    crowd_fill,
    demo_contexts,
    demo_dialogues,
    study_create,
)
from evalsite.demo.acute import acute_study_run
from evalsite.demo.arena import arena_study_run
from evalsite.demo.chat import SSA_CHAT, chat_studies_create, ssa_chats_simulate
from evalsite.demo.judge import judges_demo
from evalsite.errors import AnnotationError
from evalstats.reports import report_text, report_write
from modelhub.demo import STREAMING_BOT, demo_endpoints_register


class Command(BaseCommand):
    help = (
        "Run the demo: load the demo corpus, register the demo models (GenericBot, the gold "
        "replies, the MiniLM retrieval bot, a tiny GPT-2 it trains), create the demo campaigns "
        "(Likert, A/B, SSA, EmotionLines, interactive SSA, ED collection, ACUTE-Eval, an "
        "arena), fill "
        "them with a simulated crowd that leaves every item a slot for you, print and write the "
        "reports and the LLM judge's agreement, build each campaign's dashboard report, then "
        "serve the platform (unless --no-server)."
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
            help="Skip the tiny GPT-2: its training (300 steps, seconds) and its replies.",
        )
        parser.add_argument(
            "--addrport", default="127.0.0.1:8000", help="Where the server listens."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        out: Path = options["out"] or settings.DATA_DIR / "demo-report"
        settings.DATA_DIR.mkdir(parents=True, exist_ok=True)
        # The demo's models are tiny: a second PyTorch thread only adds synchronisation, and
        # on a busy 2-core machine its spinning made them 10 times slower (README, timings).
        torch.set_num_threads(1)
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
        chats = chat_studies_create()  # live chats: evalsite/demo/chat.py, docs/chat.md
        for campaign in chats:
            if campaign.slug == SSA_CHAT:
                self.stdout.write("Simulated workers chatting with the demo bots …")
                ssa_chats_simulate(campaign=campaign, seed=options["seed"])
            report = campaign_report(campaign)
            self.stdout.write(report_text(report))
            for path in report_write(report, out, stem=campaign.protocol):
                self.stdout.write(f"wrote {path}")
        chats += acute_study_run(seed=options["seed"], out=out, write=self.stdout.write)
        chats += arena_study_run(seed=options["seed"], out=out, write=self.stdout.write)
        shown = [c for _, c in campaigns] + chats
        for campaign in shown:
            self._dashboard_report(campaign)

        if options["no_server"]:
            return
        password = self._admin_password()
        host = options["addrport"]
        pages = "".join(
            f"  {c.name}:\n    http://{host}/task/{c.slug}/?workerId=you\n"
            f"    dashboard: http://{host}/dashboard/c/{c.slug}/\n"
            for c in shown
        )
        self.stdout.write(
            self.style.SUCCESS("\nThe demo is running.\n")
            + "Worker pages (change workerId to be someone else) and dashboard pages:\n"
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
                write=self.stdout.write,
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
        runs = crowd_fill(
            campaign=campaign,
            simulated=study.simulated,
            truth=study.truth,
            seed=seed,
            write=self.stdout.write,
            progress=self._bar,
        )
        if runs:
            self.stdout.write("")
        for error in (error for run in runs for error in run.errors):
            self.stderr.write(f"  refused: {error}")

    def _bar(self, done: int, total: int) -> None:
        width = 40
        filled = int(width * done / total) if total else width
        if done == total or done % max(1, total // 20) == 0:
            self.stdout.write(
                f"\r  [{'#' * filled}{'.' * (width - filled)}] {done}/{total}", ending=""
            )
            self.stdout.flush()

    def _dashboard_report(self, campaign: Campaign) -> None:
        """Build the report the campaign's dashboard page shows, by the dashboard's own job
        (at once without a broker; by a Celery worker with one); a re-run whose campaign has
        no new judgment since its last report builds none."""
        if report_judgments(campaign) == campaign_row(campaign).judgments:
            return
        job = job_start(campaign=campaign, kind=Job.Kind.REPORT)
        job.refresh_from_db()
        if job.status == Job.Status.DONE:
            self.stdout.write(f"Dashboard report of {campaign.slug} built.")
        elif job.status == Job.Status.FAILED:
            self.stderr.write(f"Dashboard report of {campaign.slug} failed: {job.error}")
        else:
            self.stdout.write(f"Dashboard report of {campaign.slug} queued for a Celery worker.")

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
