"""``python manage.py campaign_create study.yaml``: a campaign, its settings and items from a
study file (YAML or JSON; docs/datasets.md, "Studies as files")."""

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.studyfiles import study_create, study_read
from evalsite.errors import AnnotationError


class Command(BaseCommand):
    help = (
        "Create a draft campaign from a study file (YAML, or JSON for .json): slug, name, "
        "protocol, owner (a username), settings (every setting of the settings schema), the "
        "protocol's parameters, the study texts, and items from files beside it (contexts "
        "answered by registered models and/or a responses file, items JSONL, gold JSONL, "
        "training JSONL) or an imported data set. All or nothing: an error names the key or "
        "the file and line, and nothing is created. `campaign_export_config` writes such a file."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", type=Path, help="The study file (.yaml, .yml or .json).")
        parser.add_argument("--slug", help="Create it under this slug instead of the file's.")
        parser.add_argument("--owner", help="Username of the owner instead of the file's.")
        parser.add_argument(
            "--check",
            action="store_true",
            help="Only read and check the file (keys, settings, parameters, texts, owner, "
            "files and models named); create nothing.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            study = study_read(options["file"], slug=options["slug"], owner=options["owner"])
            if options["check"]:
                self.stdout.write(f"{options['file']}: a valid study file ({study.protocol}).")
                return
            created = study_create(study=study)
        except AnnotationError as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(
            f"Created {created.campaign.slug} ({created.campaign.protocol}, draft): "
            f"{created.items} item(s), {created.gold} gold, {created.training} training."
        )
