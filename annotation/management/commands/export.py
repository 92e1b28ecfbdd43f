"""``python manage.py export``: a campaign's raw judgments, or dialogues and their labels, or
the whole campaign as a Hugging Face dataset folder with its card."""

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.dataset_reads import campaign_dialogue_records, dataset_records
from annotation.exports import FORMATS, battles_export, judgments_export
from annotation.hf_export import campaign_hf_export
from annotation.management.cli import run
from annotation.models import Campaign, Dataset
from annotation.protocols import Battles, registry
from annotation.services.datasets import records_export
from corpora import SUFFIXES, WRITERS

BATTLES = "battles"
HF = "hf"


class Command(BaseCommand):
    help = (
        "Export a campaign's raw judgments (one row per item, worker and question, with the "
        "item's payload) as CSV, JSONL or Parquet; or, with --dialogues or --dataset, "
        "dialogues with their labels as CSV, JSONL, Parquet or ParlAI's format "
        "(docs/datasets.md); or, with --format battles, an arena campaign's votes in the public "
        "arena format (Chatbot Arena / LMArena battles, JSONL); or, with --format hf, the "
        "campaign as a Hugging Face dataset folder (Parquet per configuration and a dataset "
        "card, README.md) for `huggingface-cli upload`. Workers appear only by "
        "pseudonym; gold checks are left out, and so are soft-blocked workers unless "
        "--include-flagged, and LLM judges unless --judges."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("campaign", nargs="?", help="The campaign's slug.")
        parser.add_argument(
            "--format",
            choices=sorted(set(FORMATS) | set(WRITERS) | {BATTLES, HF}),
            default="csv",
            help="File format (default csv); parlai is for dialogues only; battles is an arena "
            "campaign's votes in the public arena format (JSONL, one record per vote); hf is "
            "the campaign as a Hugging Face dataset folder (judgments, dialogues, items and "
            "the dataset card).",
        )
        parser.add_argument(
            "--out",
            type=Path,
            help="File to write (with --format hf, a new or empty folder); default "
            "var/exports/<campaign or data set>-<what>.<suffix> (hf: <campaign>-hf/).",
        )
        parser.add_argument(
            "--license",
            help="With --format hf, required: the data's licence as the Hugging Face Hub "
            "names it (e.g. cc-by-4.0, cc-by-nc-4.0, cc0-1.0); evalsite records none for a "
            "study and never guesses one.",
        )
        parser.add_argument(
            "--include-flagged",
            action="store_true",
            help="Also export soft-blocked workers' judgments (column 'flagged' marks them).",
        )
        parser.add_argument(
            "--judges",
            action="store_true",
            help="Export the LLM judges' judgments (docs/modelhub.md, 'Judges') instead of "
            "the crowd's; "
            "column 'rater' names the judge (<model>@<template version>:<mode>).",
        )
        parser.add_argument(
            "--dialogues",
            action="store_true",
            help="Export the campaign's dialogues (collected chats; for emotion labeling, the "
            "dialogues with the crowd's gold labels and votes) instead of raw judgments.",
        )
        parser.add_argument(
            "--dataset", help="Export this imported data set's dialogues instead of a campaign."
        )
        parser.add_argument(
            "--split-by-author",
            action="store_true",
            help="Write <out>-train/-valid/-test files, 80/10/10 by situation author (ED): "
            "no author's dialogues in two splits.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        fmt = options["format"]
        if options["dataset"] and options["campaign"]:
            raise CommandError("Give a campaign or --dataset, not both.")
        if fmt == BATTLES and (options["dataset"] or options["dialogues"]):
            raise CommandError("--format battles exports an arena campaign's votes, not dialogues.")
        if fmt == HF and (options["dataset"] or options["dialogues"] or options["judges"]):
            raise CommandError(
                "--format hf exports a campaign whole (its crowd's judgments, dialogues and "
                "items); leave out --dataset, --dialogues and --judges."
            )
        if options["license"] and fmt != HF:
            raise CommandError("--license is for --format hf (the dataset card's licence).")
        if options["dataset"]:
            dataset = Dataset.objects.filter(name=options["dataset"]).first()
            if dataset is None:
                raise CommandError(f"No data set {options['dataset']!r}.")
            self._dialogues(dataset_records(dataset), dataset.name, options)
            return
        if not options["campaign"]:
            raise CommandError("Name a campaign, or a data set with --dataset.")
        campaign = Campaign.objects.filter(slug=options["campaign"]).first()
        if campaign is None:
            raise CommandError(f"No campaign {options['campaign']!r}.")
        if options["dialogues"] and options["judges"]:
            raise CommandError("--judges exports judgments, not dialogues.")
        if options["dialogues"]:
            self._dialogues(campaign_dialogue_records(campaign), campaign.slug, options)
            return
        if options["split_by_author"]:
            raise CommandError("--split-by-author applies to dialogues (--dialogues, --dataset).")
        if fmt == HF:
            self._hf(campaign, options)
            return
        if fmt == BATTLES:
            self._battles(campaign, options)
            return
        if fmt not in FORMATS:
            raise CommandError(f"Judgments export as {', '.join(FORMATS)}; {fmt} is for dialogues.")
        what = "judge-judgments" if options["judges"] else "judgments"
        out = options["out"] or (settings.DATA_DIR / "exports" / f"{campaign.slug}-{what}.{fmt}")
        if out.is_dir():
            raise CommandError(f"{out} is a folder; give a file name.")
        try:  # streamed in chunks: memory does not grow with the campaign
            rows = judgments_export(
                campaign,
                out,
                fmt,
                include_flagged=options["include_flagged"],
                judges=options["judges"],
            )
        except OSError as exc:
            raise CommandError(f"Cannot write {out}: {exc.strerror}") from None
        self.stdout.write(f"wrote {rows} judgments to {out}")

    def _battles(self, campaign: Campaign, options: dict[str, Any]) -> None:
        if not isinstance(registry.get(campaign.protocol), Battles):
            raise CommandError(
                f"--format battles exports an arena campaign's votes; {campaign.slug} is a "
                f"{campaign.protocol} campaign (export it as {', '.join(FORMATS)})."
            )
        what = "judge-battles" if options["judges"] else "battles"
        out = options["out"] or (settings.DATA_DIR / "exports" / f"{campaign.slug}-{what}.jsonl")
        if out.is_dir():
            raise CommandError(f"{out} is a folder; give a file name.")
        try:
            votes = battles_export(
                campaign, out, include_flagged=options["include_flagged"], judges=options["judges"]
            )
        except OSError as exc:
            raise CommandError(f"Cannot write {out}: {exc.strerror}") from None
        except ValueError as exc:  # a stored vote the format cannot hold (corpora.ArenaError)
            out.unlink(missing_ok=True)  # not a partial file that reads as the whole
            raise CommandError(f"Cannot export {campaign.slug} as arena votes: {exc}") from None
        self.stdout.write(f"wrote {votes} arena votes to {out}")

    def _hf(self, campaign: Campaign, options: dict[str, Any]) -> None:
        if not options["license"]:
            raise CommandError(
                "--format hf needs --license: the study records no licence and evalsite never "
                "guesses one. Give the licence your consent form and data allow, as the Hugging "
                "Face Hub names it, e.g. --license cc-by-4.0."
            )
        out = options["out"] or (settings.DATA_DIR / "exports" / f"{campaign.slug}-hf")
        try:
            configs = run(
                lambda: campaign_hf_export(
                    campaign,
                    out,
                    licence=options["license"],
                    include_flagged=options["include_flagged"],
                )
            )
        except OSError as exc:
            raise CommandError(f"Cannot write {out}: {exc.strerror}") from None
        for config in configs:
            self.stdout.write(f"wrote {config.rows} rows to {out / config.name}")
        self.stdout.write(
            f"wrote the dataset card to {out / 'README.md'}; upload with: "
            f"huggingface-cli upload ORG/NAME {out} --repo-type dataset"
        )

    def _dialogues(self, records: list, stem: str, options: dict[str, Any]) -> None:
        fmt = options["format"]
        out = options["out"] or (
            settings.DATA_DIR / "exports" / f"{stem}-dialogues.{SUFFIXES[fmt]}"
        )
        if out.is_dir():
            raise CommandError(f"{out} is a folder; give a file name.")
        if not records:
            raise CommandError(f"{stem} has no dialogues to export.")
        try:
            written = records_export(
                records, fmt=fmt, out=out, by_author=options["split_by_author"]
            )
        except OSError as exc:
            raise CommandError(f"Cannot write {out}: {exc.strerror}") from None
        for path, n in written:
            self.stdout.write(f"wrote {n} dialogues to {path}")
