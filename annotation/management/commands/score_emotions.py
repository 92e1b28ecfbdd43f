"""``python manage.py score_emotions <dataset> <predictions>``: an emotion classifier's scores."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.dataset_reads import dataset_records
from annotation.models import Dataset
from corpora import READERS, DatasetError
from corpora.records import labels_paired
from evalstats.emotion_eval import (
    EMOTIONX_LABELS,
    emocontext_scores,
    emotionlines_accuracy,
)


class Command(BaseCommand):
    help = (
        "Score a classifier's predicted emotions against an imported data set's gold labels: "
        "EmoContext's per-class precision, recall, F1 and micro-F1 over happy, sad and angry "
        "(the last turn of each dialogue), or EmotionLines' weighted and unweighted accuracy "
        "(every labeled utterance). The predictions file is in one of import_dataset's "
        "formats, with the same dialogue keys, the predicted emotion as each utterance's label."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("dataset", help="Name of the imported gold data set.")
        parser.add_argument("predictions", type=Path, help="The file of predicted labels.")
        parser.add_argument(
            "--format",
            default="",
            choices=["", *READERS],
            help="The predictions file's format (default: the task's own, emocontext TSV or "
            "emotionlines JSON).",
        )
        parser.add_argument(
            "--task",
            choices=["emocontext", "emotionlines"],
            default="emocontext",
            help="emocontext: micro-F1 of the last turn; emotionlines: WA and UWA.",
        )
        parser.add_argument(
            "--labels",
            default=",".join(EMOTIONX_LABELS),
            help="With --task emotionlines: the labels scored (default EmotionX's neutral, "
            "joy, sadness, anger).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        dataset = Dataset.objects.filter(name=options["dataset"]).first()
        if dataset is None:
            raise CommandError(f"No data set {options['dataset']!r}; import it first.")
        task = options["task"]
        path: Path = options["predictions"]
        if not path.is_file():
            raise CommandError(f"{path}: no such file.")
        try:
            predicted = READERS[options["format"] or task](path)
        except DatasetError as exc:
            raise CommandError(f"{path.name}: {exc}") from None
        try:
            gold, guess = labels_paired(
                dataset_records(dataset), predicted, last_turn=task == "emocontext"
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        if task == "emocontext":
            table = emocontext_scores(gold, guess)
            self.stdout.write(f"EmoContext scores over {len(gold)} dialogues:")
            self.stdout.write(table.to_string(index=False, float_format="{:.3f}".format))
            return
        labels = [label.strip() for label in options["labels"].split(",") if label.strip()]
        if not labels:
            raise CommandError("--labels names no label.")
        wa, uwa, per_label = emotionlines_accuracy(gold, guess, labels)
        self.stdout.write(f"EmotionLines accuracy over {int(per_label['n'].sum())} utterances:")
        self.stdout.write(per_label.to_string(index=False, float_format="{:.3f}".format))
        self.stdout.write(f"WA {wa:.3f}  UWA {uwa:.3f}")
