"""``python manage.py import_dataset <format> <path> …``: dialogue corpora into the tables."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.deidentify import Deidentifier, names_read
from annotation.services.datasets import dataset_import
from corpora import READERS, DatasetError
from evalsite.errors import AnnotationError


class Command(BaseCommand):
    help = (
        "Import dialogue files as one new data set, all or nothing: a malformed file is "
        "refused whole with the line and what is wrong, and nothing is stored. Formats: "
        "ed (EmpatheticDialogues CSV), emotionlines (EmotionLines JSON), meld (MELD CSV), "
        "emocontext (EmoContext TSV), meena (Meena's released conversation logs), jsonl / "
        "csv / parquet (evalsite's dialogue formats), parlai (ParlAI's dialog text format). "
        "docs/datasets.md describes each."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("format", choices=sorted(READERS), help="The files' format.")
        parser.add_argument("paths", nargs="+", type=Path, help="One or more files.")
        parser.add_argument(
            "--name",
            help="The new data set's name (at most 64 letters, digits, '-', '_'); default: the "
            "first file's name without its suffix.",
        )
        parser.add_argument(
            "--source",
            default="",
            help="Sub-source for dialogues whose file names none (e.g. Friends, EmotionPush); "
            "at most 64 characters.",
        )
        parser.add_argument("--description", default="", help="A note kept with the data set.")
        parser.add_argument(
            "--deidentify",
            action="store_true",
            help="Replace emails, URLs, phone numbers, @handles and listed names by their "
            "type and an index (person_1, location_2) before storing (private chat logs).",
        )
        parser.add_argument(
            "--names",
            type=Path,
            help="With --deidentify: a file of names, one per line, optionally followed by a "
            "tab and person, location or organization (default person).",
        )
        parser.add_argument(
            "--speakers-are-persons",
            action="store_true",
            help="With --deidentify: also treat each dialogue's speaker names as person names.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        paths: list[Path] = options["paths"]
        name = options["name"] or paths[0].stem
        deidentifier = None
        if options["names"] and not options["deidentify"]:
            raise CommandError("--names is used only with --deidentify.")
        if options["deidentify"]:
            try:
                names = names_read(options["names"]) if options["names"] else {}
            except (OSError, ValueError, UnicodeDecodeError) as exc:
                raise CommandError(f"Cannot read the names file: {exc}") from None
            deidentifier = Deidentifier(
                names=names, speakers_are_persons=options["speakers_are_persons"]
            )
        start = time.perf_counter()
        try:
            result = dataset_import(
                name=name,
                fmt=options["format"],
                paths=paths,
                source=options["source"],
                description=options["description"],
                deidentifier=deidentifier,
            )
        except DatasetError as exc:
            raise CommandError(f"Nothing was imported. {exc}") from None
        except AnnotationError as exc:
            raise CommandError(exc.message) from None
        seconds = time.perf_counter() - start
        self.stdout.write(
            f"Imported data set {result.dataset.name!r}: {result.dialogues} dialogues, "
            f"{result.utterances} utterances in {seconds:.2f} s."
        )
        if deidentifier is not None:
            self.stdout.write(
                f"De-identified {result.replacements} span(s); review them in the admin "
                f"(Data sets → {result.dataset.name} → de-identification)."
            )
