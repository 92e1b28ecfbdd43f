"""``python manage.py add_items <campaign> --contexts FILE …``: items from contexts and models,
or ``--dataset NAME``: one item per dialogue of an imported data set (emotion labeling)."""

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.items import campaign_items_from_dataset, campaign_items_from_responses
from annotation.models import Campaign
from annotation.services import items_add, training_items_add
from corpora.readers import (
    read_contexts,
    read_gold_lines,
    read_responses,
    read_training_lines,
)
from corpora.records import CorpusError
from evalsite.errors import AnnotationError


class Command(BaseCommand):
    help = (
        "Add items to a campaign: a static context set (JSONL, CSV or TXT of 1-3 turn contexts) "
        "answered by registered models and/or a file of responses; the dialogues of an "
        "imported data set (EmotionLines, EmoContext); and hidden gold checks."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("campaign", help="The campaign's slug.")
        parser.add_argument(
            "--contexts",
            type=Path,
            help="Contexts: .jsonl ({id, context, reference}), .csv (id, turn_1..turn_3, "
            "reference) or .txt (one context per line, turns separated by tabs).",
        )
        parser.add_argument(
            "--models",
            default="",
            help="Comma-separated names of registered models to answer the contexts "
            "(see `register_model`).",
        )
        parser.add_argument(
            "--responses",
            type=Path,
            help='JSONL of ready responses: {"id": context id, "model": ..., "response": ...}.',
        )
        parser.add_argument(
            "--max-turns", type=int, default=3, help="Most turns a context may have (default 3)."
        )
        parser.add_argument(
            "--dataset",
            help="Name of an imported data set (`import_dataset --name`): one item per dialogue "
            "(EmotionLines: the whole dialogue; EmoContext: its 3 turns).",
        )
        parser.add_argument(
            "--split",
            default="",
            choices=["", "train", "valid", "test"],
            help="With --dataset: only this split.",
        )
        parser.add_argument("--limit", type=int, help="With --dataset: only the first N dialogues.")
        parser.add_argument(
            "--gold",
            type=Path,
            help='JSONL of hidden gold checks: {"key": ..., "payload": {...}, "gold": '
            '{question: [accepted answers]}}; add "check": "attention" to a line whose item '
            "itself says what to answer (an explicit attention check, docs/protocols.md).",
        )
        parser.add_argument(
            "--training",
            type=Path,
            help="JSONL of training items, shown in this order with feedback before the study: "
            '{"key": ..., "payload": {...}, "answers": {question: [expected answers]}, '
            '"explanation": "why (Markdown)"} (docs/protocols.md, "Training").',
        )

    def handle(self, *args: Any, **options: Any) -> None:
        campaign = Campaign.objects.filter(slug=options["campaign"]).first()
        if campaign is None:
            raise CommandError(f"No campaign {options['campaign']!r}.")
        if not (
            options["contexts"] or options["dataset"] or options["gold"] or options["training"]
        ):
            raise CommandError(
                "Give --contexts (with --models and/or --responses), --dataset, --gold or "
                "--training."
            )
        if options["max_turns"] < 1:
            raise CommandError("--max-turns must be at least 1.")
        try:
            if options["contexts"]:
                self._contexts(campaign, options)
            if options["dataset"]:
                added = campaign_items_from_dataset(
                    campaign=campaign,
                    dataset=options["dataset"],
                    split=options["split"],
                    limit=options["limit"],
                )
                self.stdout.write(
                    f"Added {added} item(s) to {campaign.slug} from {options['dataset']}."
                )
            if options["gold"]:
                added = items_add(campaign=campaign, items=read_gold_lines(options["gold"]))
                self.stdout.write(f"Added {added} gold item(s) to {campaign.slug}.")
            if options["training"]:
                added = training_items_add(
                    campaign=campaign, items=read_training_lines(options["training"])
                )
                self.stdout.write(f"Added {added} training item(s) to {campaign.slug}.")
        except (CorpusError, AnnotationError) as exc:
            raise CommandError(getattr(exc, "message", str(exc))) from None

    def _contexts(self, campaign: Campaign, options: dict[str, Any]) -> None:
        contexts = read_contexts(options["contexts"], max_turns=options["max_turns"])
        models = [m.strip() for m in options["models"].split(",") if m.strip()]
        responses = read_responses(options["responses"]) if options["responses"] else None
        self.stdout.write(f"{len(contexts)} contexts; models: {', '.join(models) or 'none'}")
        built = campaign_items_from_responses(
            campaign=campaign, contexts=contexts, models=models, responses=responses
        )
        self.stdout.write(
            f"Added {built.added} item(s) to {campaign.slug} from {', '.join(built.models)}"
            + (f"; skipped {built.skipped} identical pair(s)." if built.skipped else ".")
        )
