"""``python manage.py judge <campaign> <model>``: a registered model judges a campaign's items."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import yaml
from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.models import Campaign
from annotation.protocols import registry
from corpora.limits import yaml_load
from evalsite.errors import AnnotationError
from judges.prompts import template_clean, template_default
from judges.services import MAX_ATTEMPTS, MAX_BATCH, MODES, judge_start
from modelhub.models import GenerationJob, ModelEndpoint

MAX_TEMPLATE_BYTES = 100_000


class Command(BaseCommand):
    help = (
        "Let a registered model judge every item of a campaign, answering the protocol's own "
        "questions; its answers are stored as a model rater's, apart from the crowd (see "
        "judge_report). Runs as a job on the inference queue (inline without a broker)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("campaign", help="The campaign's slug.")
        parser.add_argument("model", help="The judging model's registered name (register_model).")
        parser.add_argument(
            "--template",
            type=Path,
            help="A YAML or JSON file {version, text} replacing the protocol's default prompt "
            "template; text uses {instructions}, {item} and {questions}. A changed text needs "
            "a version of its own.",
        )
        parser.add_argument(
            "--show-template",
            action="store_true",
            help="Print the protocol's default template (as a --template file) and stop.",
        )
        parser.add_argument(
            "--mode",
            choices=MODES,
            help="json: ask for a JSON answer and parse it; choice: score each allowed answer "
            "by log-likelihood (constrained choice). Default: choice for a backend that can "
            "score (hf_local), json otherwise.",
        )
        parser.add_argument(
            "--both-orders",
            action=argparse.BooleanOptionalAction,
            default=True,
            help="A/B: ask each item in both orders, as two raters, to measure position bias "
            "(default); --no-both-orders asks one order per item, drawn as a worker's is.",
        )
        parser.add_argument(
            "--attempts",
            type=int,
            default=3,
            help=f"Tries per item before it is recorded as a failure (1-{MAX_ATTEMPTS}, "
            "default 3).",
        )
        parser.add_argument(
            "--batch-size",
            type=int,
            default=16,
            help=f"Items per model call and per transaction (1-{MAX_BATCH}, default 16).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        campaign = Campaign.objects.filter(slug=options["campaign"]).first()
        if campaign is None:
            raise CommandError(f"No campaign {options['campaign']!r}.")
        protocol = registry.get(campaign.protocol)
        try:
            if options["show_template"]:
                default = template_default(protocol)
                self.stdout.write(
                    yaml.safe_dump({"version": default.version, "text": default.text}, width=100)
                )
                return
            endpoint = ModelEndpoint.objects.filter(name=options["model"]).first()
            if endpoint is None:
                known = ", ".join(ModelEndpoint.objects.values_list("name", flat=True)) or "none"
                raise CommandError(f"No model {options['model']!r}; registered: {known}.")
            template = None
            if options["template"] is not None:
                template = template_clean(protocol, self._read(options["template"]))
            job = judge_start(
                campaign=campaign,
                endpoint=endpoint,
                template=template,
                mode=options["mode"],
                both_orders=options["both_orders"],
                attempts=options["attempts"],
                batch_size=options["batch_size"],
            )
        except AnnotationError as exc:
            raise CommandError(exc.message) from None
        except ValueError as exc:  # a model whose configuration no longer loads
            raise CommandError(str(exc)) from None
        job.refresh_from_db()
        self.stdout.write(
            f"Judge job {job.pk} ({job.label}): {job.done} of {job.total} items, {job.status}."
        )
        if job.status == GenerationJob.Status.DONE and job.error:
            failed = job.error.splitlines()
            self.stdout.write(f"{len(failed)} refused after every attempt (never guessed):")
            for line in failed[:10]:
                self.stdout.write(f"  {line}")
        elif job.status == GenerationJob.Status.FAILED:
            raise CommandError(f"The judge job failed: {job.error}")

    def _read(self, path: Path) -> Any:
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise CommandError(f"Cannot read {path}: {exc.strerror}.") from None
        if len(raw) > MAX_TEMPLATE_BYTES:
            raise CommandError(f"{path} is larger than {MAX_TEMPLATE_BYTES} bytes.")
        try:
            return yaml_load(raw.decode("utf-8"))
        except (UnicodeDecodeError, yaml.YAMLError) as exc:
            raise CommandError(f"{path} is not UTF-8 YAML or JSON: {exc}") from None
