"""``python manage.py chat_to_acute <slug> --chats SLUG | --dataset NAME …``: ACUTE-Eval items
from whole conversations (docs/protocols.md, "acute")."""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.items_acute import (
    Conversation,
    acute_items_add,
    conversations_from_campaign,
    conversations_from_dataset,
)
from annotation.models import Campaign, Dataset
from evalsite.errors import AnnotationError


class Command(BaseCommand):
    help = (
        "Pair whole conversations of different models into ACUTE-Eval items (two "
        "conversations side by side, one speaker of each judged): from the collected chats "
        "of live chat campaigns (interactive SSA: the bot's turns are judged) and/or imported "
        "data sets (e.g. `import_dataset meena`: each dialogue's source is its model). Every "
        "two models get the same number of pairs; the campaign is created as a draft when "
        "missing; a second run with the same conversations adds nothing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug", help="Slug of the ACUTE-Eval campaign (created if missing).")
        parser.add_argument(
            "--chats",
            action="append",
            default=[],
            metavar="SLUG",
            help="A campaign whose complete chats with a model to use (repeatable).",
        )
        parser.add_argument(
            "--dataset",
            action="append",
            default=[],
            metavar="NAME",
            help="An imported data set whose dialogues to use, the model being each "
            "dialogue's source (repeatable).",
        )
        parser.add_argument(
            "--speaker",
            action="append",
            default=[],
            metavar="MODEL=SPEAKER",
            help="In data sets, the speaker judged for a model when it is not the speaker "
            "named like the model, e.g. 'Human=Human 2' for Meena's human–human logs.",
        )
        parser.add_argument(
            "--models", nargs="+", default=[], help="Use only these models (default: all)."
        )
        parser.add_argument(
            "--pairs-per-matchup",
            type=int,
            default=50,
            help="Conversation pairs per two models, counting those already in the "
            "campaign (default 50).",
        )
        parser.add_argument(
            "--min-turns",
            type=int,
            default=4,
            help="Leave out conversations with fewer turns (default 4).",
        )
        parser.add_argument(
            "--include-flagged",
            action="store_true",
            help="Also use flagged chats (pasted text, a failed bot turn); left out by default.",
        )
        parser.add_argument("--name", default="", help="Name of a new campaign.")
        parser.add_argument("--seed", type=int, default=0, help="Seed of the pairing (0).")

    def handle(self, *args: Any, **options: Any) -> None:
        if not options["chats"] and not options["dataset"]:
            raise CommandError("Name the conversations to use: --chats SLUG and/or --dataset NAME.")
        if not 1 <= options["min_turns"] <= 1000:
            raise CommandError("--min-turns must be from 1 to 1000.")
        speakers = {}
        for entry in options["speaker"]:
            model, sep, speaker = entry.partition("=")
            if not sep or not model.strip() or not speaker.strip():
                raise CommandError(f"--speaker takes MODEL=SPEAKER, not {entry[:60]!r}.")
            speakers[model.strip()] = speaker.strip()
        conversations: list[Conversation] = []
        skipped = 0
        for slug in options["chats"]:
            source = Campaign.objects.filter(slug=slug).first()
            if source is None:
                raise CommandError(f"There is no campaign {slug!r}.")
            found, left = conversations_from_campaign(
                campaign=source,
                include_flagged=options["include_flagged"],
                min_turns=options["min_turns"],
            )
            conversations += found
            skipped += left
        for name in options["dataset"]:
            dataset = Dataset.objects.filter(name=name).first()
            if dataset is None:
                raise CommandError(f"There is no data set {name!r} (see import_dataset).")
            found, left = conversations_from_dataset(
                dataset=dataset, speakers=speakers, min_turns=options["min_turns"]
            )
            conversations += found
            skipped += left
        try:
            result = acute_items_add(
                slug=options["slug"],
                conversations=conversations,
                pairs_per_matchup=options["pairs_per_matchup"],
                name=options["name"],
                models=options["models"],
                seed=options["seed"],
            )
        except AnnotationError as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(
            f"{result.campaign.slug}: added {result.added} ACUTE items from "
            f"{len(conversations)} conversations ({skipped} left out: too short, no model "
            "or judged speaker, or flagged)."
        )
        for (model_a, model_b), n in result.matchups.items():
            self.stdout.write(f"  {model_a} vs {model_b}: {n} pairs")
        for line in result.short:
            self.stdout.write(self.style.WARNING(f"  too few conversations: {line}"))
