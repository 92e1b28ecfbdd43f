"""``python manage.py mine_candidates``: pick the dialogues worth sending to EmoContext judges."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.items import campaign_items_from_dialogues
from annotation.mining import (
    candidates_mine,
    dialogue_text,
    minilm_embed,
    savings,
    synthetic_dialogues,
)
from annotation.models import Campaign
from annotation.protocols.emocontext import SPEAKERS
from corpora import DatasetError
from corpora.records import DialogueRecord, UtteranceRecord
from corpora.sources import EMOCONTEXT_LABELS, read_emocontext
from evalsite.errors import AnnotationError
from evalstats.spreadsheets import cell_safe

EMOTIONS = ("happy", "sad", "angry")


class Command(BaseCommand):
    help = (
        "Candidate mining (EmoContext): embed labeled seed dialogues and an unlabeled pool "
        "with MiniLM, keep the pool dialogues whose similarity to a class's seeds reaches the "
        "threshold, and write them (--out) or add them to an EmoContext campaign "
        "(--campaign). When the pool's labels are known (a labeled TSV, or --synthetic), "
        "print the emotional items found per judgment by mining and by random sampling."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--seeds", type=Path, help="EmoContext TSV of labeled seeds (id, turn1-3, label)."
        )
        parser.add_argument(
            "--pool", type=Path, help="EmoContext TSV of the pool (a label column is optional)."
        )
        parser.add_argument(
            "--synthetic",
            action="store_true",
            help="Use a generated pool and seeds with known labels instead of files.",
        )
        parser.add_argument("--pool-size", type=int, default=2000, help="With --synthetic.")
        parser.add_argument(
            "--emotion-share",
            type=float,
            default=0.1,
            help="With --synthetic: the share of emotional dialogues in the pool (0.1).",
        )
        parser.add_argument(
            "--seeds-per-class", type=int, default=300, help="Seeds used per class (300)."
        )
        parser.add_argument(
            "--threshold", type=float, default=0.6, help="Cosine similarity to reach (0.6)."
        )
        parser.add_argument("--k", type=int, default=10, help="Nearest seeds averaged (10).")
        parser.add_argument("--judges", type=int, default=7, help="Judges per item (7).")
        parser.add_argument("--out", type=Path, help="Write the candidates to this TSV.")
        parser.add_argument("--campaign", help="Add the candidates to this EmoContext campaign.")
        parser.add_argument("--seed", type=int, default=0, help="Random seed.")

    def handle(self, *args: Any, **options: Any) -> None:
        seeds, pool, labels, keys = self._inputs(options)
        if not 0 < options["judges"] <= 100 or options["k"] < 1:
            raise CommandError("--judges must be 1–100 and --k at least 1.")
        try:
            candidates = candidates_mine(
                seeds,
                [dialogue_text(t) for t in pool],
                threshold=options["threshold"],
                k=options["k"],
                embed=minilm_embed,
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"pool: {len(pool)} dialogues; candidates: {len(candidates)}")
        for name, n in candidates["class"].value_counts().items():
            self.stdout.write(f"  {name}: {n}")
        if labels is not None:
            found = [labels[i] for i in candidates["index"]]
            try:
                result = savings(
                    found, labels, emotions=EMOTIONS, judges=options["judges"], seed=options["seed"]
                )
            except ValueError as exc:
                raise CommandError(str(exc)) from None
            for line in result.lines():
                self.stdout.write(line)
        if options["out"]:
            self._write(options["out"], candidates, pool, keys)
        if options["campaign"]:
            self._add(options["campaign"], candidates, pool, keys)

    def _inputs(self, options: dict[str, Any]) -> tuple:
        per_class = options["seeds_per_class"]
        if per_class < 1:
            raise CommandError("--seeds-per-class must be at least 1.")
        if options["synthetic"]:
            if options["seeds"] or options["pool"]:
                raise CommandError("--synthetic makes its own seeds and pool; give no files.")
            if not 0 < options["emotion_share"] < 1 or options["pool_size"] < 1:
                raise CommandError("--emotion-share must be in (0, 1) and --pool-size ≥ 1.")
            made = synthetic_dialogues(per_class * 4, emotion_share=1.0, seed=options["seed"] + 1)
            seeds = {
                c: [dialogue_text(t) for t, lab in made if lab == c][:per_class] for c in EMOTIONS
            }
            drawn = synthetic_dialogues(
                options["pool_size"], emotion_share=options["emotion_share"], seed=options["seed"]
            )
            pool = [t for t, _ in drawn]
            return seeds, pool, [lab for _, lab in drawn], [f"syn-{i}" for i in range(len(pool))]
        if not options["seeds"] or not options["pool"]:
            raise CommandError("Give --seeds and --pool (EmoContext TSV files), or --synthetic.")
        try:
            seed_records = read_emocontext(options["seeds"])
            pool_records = read_emocontext(options["pool"])
        except DatasetError as exc:
            raise CommandError(str(exc)) from None
        seeds = {
            c: [
                dialogue_text([u.text for u in r.utterances])
                for r in seed_records
                if r.emotion == c
            ][:per_class]
            for c in EMOTIONS
        }
        missing = [c for c, texts in seeds.items() if not texts]
        if missing:
            raise CommandError(f"The seeds file has no dialogue labeled {', '.join(missing)}.")
        pool = [[u.text for u in r.utterances] for r in pool_records]
        known = all(r.emotion in EMOCONTEXT_LABELS for r in pool_records)
        labels = [r.emotion for r in pool_records] if known else None
        return seeds, pool, labels, [r.key for r in pool_records]

    def _write(self, out: Path, candidates: Any, pool: list, keys: list) -> None:
        try:
            with out.open("w", encoding="utf-8", newline="") as handle:
                writer = csv.writer(handle, delimiter="\t", lineterminator="\n")
                writer.writerow(["id", "turn1", "turn2", "turn3", "candidate", "similarity"])
                for i, name, score in zip(
                    candidates["index"], candidates["class"], candidates["similarity"], strict=True
                ):
                    row = [keys[i], *pool[i], name, f"{score:.4f}"]
                    writer.writerow([cell_safe(cell) for cell in row])
        except OSError as exc:
            raise CommandError(f"Cannot write {out}: {exc.strerror}") from None
        self.stdout.write(f"wrote {len(candidates)} candidates to {out}")

    def _add(self, slug: str, candidates: Any, pool: list, keys: list) -> None:
        campaign = Campaign.objects.filter(slug=slug).first()
        if campaign is None:
            raise CommandError(f"No campaign {slug!r}.")
        records = [
            DialogueRecord(
                key=keys[i],
                utterances=[UtteranceRecord(s, t) for s, t in zip(SPEAKERS, pool[i], strict=True)],
            )
            for i in candidates["index"]
        ]
        try:
            added = campaign_items_from_dialogues(campaign=campaign, records=records)
        except AnnotationError as exc:
            raise CommandError(exc.message) from None
        there = len(records) - added
        self.stdout.write(f"added {added} candidates to {slug} ({there} were there)")
