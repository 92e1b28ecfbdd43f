"""``python manage.py import_judgments <campaign> FILE --format mturk-batch|prolific|long``:
judgments collected elsewhere, stored as if collected here (docs/datasets.md, "Importing
judgments")."""

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from annotation.models import Campaign
from annotation.protocols import registry
from annotation.services import judgments_import
from corpora.judgments import (
    FORMATS,
    JudgmentMap,
    items_of,
    map_from,
    map_read,
    read_judgments,
)
from corpora.records import CorpusError
from evalsite.errors import AnnotationError


class _DryRun(Exception):
    """Roll the import back after it succeeded (--dry-run)."""


def _pairs(values: list[str], option: str) -> list[tuple[str, str]]:
    pairs = []
    for value in values:
        name, sep, rest = value.partition("=")
        if not sep or not name.strip():
            raise CommandError(f"{option} takes NAME=VALUE, not {value!r}.")
        pairs.append((name.strip(), rest.strip()))
    return pairs


def _json_or_text(value: str) -> Any:
    try:
        return json.loads(value)
    except ValueError:
        return value


class Command(BaseCommand):
    help = (
        "Import judgments collected elsewhere into a campaign, all or nothing (an error names "
        "the line; nothing is stored): an MTurk batch-results CSV, a Prolific export (or a "
        "survey export with PROLIFIC_PID) or a long CSV/JSONL (item, worker, question, value"
        "[, seconds]). Each real worker becomes one pseudonymised worker; answers are checked "
        "by the protocol like a worker's; importing the same file again adds nothing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("campaign", help="The campaign's slug.")
        parser.add_argument("file", type=Path, help="The file of judgments (CSV, or JSONL).")
        parser.add_argument("--format", required=True, choices=FORMATS, help="The file's format.")
        parser.add_argument(
            "--mapping",
            type=Path,
            help="A JSON mapping file: {item, questions, values, set, seconds, payload, "
            "presentation} (docs/datasets.md); the options below add to it.",
        )
        parser.add_argument(
            "--map",
            action="append",
            default=[],
            metavar="COLUMN=QUESTION",
            help="An answer column (long files: a question name) and the protocol's question "
            "it answers, e.g. Answer.q1=empathy; repeat. Default: Answer.<question> (MTurk), "
            "<question> (Prolific). {n} in columns: items 1, 2, … of one row.",
        )
        parser.add_argument(
            "--item", help="The column of the item keys (default Input.key, Input.item or item)."
        )
        parser.add_argument(
            "--value",
            action="append",
            default=[],
            metavar="QUESTION:RAW=VALUE",
            help="Translate a raw answer, e.g. sensible:1=yes; repeat. A question with any "
            "translation must have one for every answer in the file.",
        )
        parser.add_argument(
            "--set",
            action="append",
            default=[],
            metavar="QUESTION=VALUE",
            help="An answer the same for every judgment (e.g. specific=no); repeat.",
        )
        parser.add_argument(
            "--seconds",
            help="The column of the time spent in seconds (default: WorkTimeInSeconds, "
            "Prolific's 'Time taken', a long file's 'seconds'); a row's time is split over "
            "its items.",
        )
        parser.add_argument(
            "--payload",
            action="append",
            default=[],
            metavar="FIELD=COLUMN",
            help="With --create-items: an item field from a column (FIELD[]=C1,C2 for a list, "
            "e.g. context[]=Input.turn1,Input.turn2); repeat.",
        )
        parser.add_argument(
            "--create-items",
            action="store_true",
            help="Create the items the file names from its columns (--payload) instead of "
            "requiring them in the campaign already.",
        )
        parser.add_argument(
            "--provider",
            choices=["local", "mturk", "prolific"],
            default="local",
            help="Long files: the provider the worker ids are from (default local).",
        )
        parser.add_argument(
            "--include-rejected",
            action="store_true",
            help="Also import rejected work (skipped by default, like returned work).",
        )
        parser.add_argument(
            "--dry-run", action="store_true", help="Check everything, then store nothing."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        campaign = Campaign.objects.filter(slug=options["campaign"]).first()
        if campaign is None:
            raise CommandError(f"No campaign {options['campaign']!r}.")
        protocol = registry.get(campaign.protocol)
        questions = [
            q.key for q in protocol.questions(protocol.clean_parameters(campaign.parameters))
        ]
        try:
            mapping = self._mapping(options)
            if options["create_items"] and not mapping.payload:
                raise CommandError("--create-items needs the payload's columns (--payload).")
            read = read_judgments(
                options["file"],
                fmt=options["format"],
                mapping=mapping,
                questions=questions,
                provider=options["provider"],
                rejected=options["include_rejected"],
            )
            items = (
                items_of(read.works, source=options["file"].name) if options["create_items"] else []
            )
            with transaction.atomic():
                done = judgments_import(
                    campaign=campaign, works=read.works, source=options["file"].name, items=items
                )
                if options["dry_run"]:
                    raise _DryRun
        except _DryRun:
            self.stdout.write("Dry run: the file is valid; nothing was stored.")
        except CorpusError as exc:
            raise CommandError(str(exc)) from None
        except AnnotationError as exc:
            raise CommandError(exc.message) from None
        if options["dry_run"]:
            return
        skipped = ", ".join(f"{n} {status}" for status, n in sorted(read.skipped.items()))
        self.stdout.write(
            f"Imported {done.judgments} judgment(s) of {done.pairs} (item, worker) pair(s) into "
            f"{campaign.slug}: {done.workers} worker(s) ({done.new_workers} new), "
            f"{done.assignments} new assignment(s), {done.items} new item(s); "
            f"{done.already} pair(s) already stored."
            + (f" Rows skipped by status: {skipped}." if skipped else "")
        )

    def _mapping(self, options: dict[str, Any]) -> JudgmentMap:
        data: dict[str, Any] = {}
        if options["mapping"]:
            base = map_read(options["mapping"])
            data = {k: getattr(base, k) for k in ("item", "seconds", "presentation")}
            data |= {k: dict(getattr(base, k)) for k in ("questions", "values", "set", "payload")}
        data.setdefault("questions", {}).update(_pairs(options["map"], "--map"))
        for name, value in _pairs(options["value"], "--value"):
            question, sep, raw = name.partition(":")
            if not sep:
                raise CommandError(f"--value takes QUESTION:RAW=VALUE, not {name!r}.")
            data.setdefault("values", {}).setdefault(question, {})[raw] = _json_or_text(value)
        for name, value in _pairs(options["set"], "--set"):
            data.setdefault("set", {})[name] = _json_or_text(value)
        for name, value in _pairs(options["payload"], "--payload"):
            columns: str | list[str] = value
            if name.endswith("[]"):
                name, columns = name[:-2], [c.strip() for c in value.split(",") if c.strip()]
            data.setdefault("payload", {})[name] = columns
        for key in ("item", "seconds"):
            if options[key]:
                data[key] = options[key]
        return map_from(data, where="--mapping")
