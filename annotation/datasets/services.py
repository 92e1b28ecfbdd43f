"""Import data set files into the dialogue tables, and export dialogues to files.

An import reads and checks every file first, then stores everything in one transaction: a
malformed file changes nothing. Exports name workers only by pseudonym.
"""

from __future__ import annotations

import dataclasses
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from django.db import transaction

from annotation.datasets import READERS, SUFFIXES, WRITERS
from annotation.datasets.records import DatasetError, DialogueRecord
from annotation.deidentify import Deidentifier
from annotation.exceptions import Conflict, InvalidParameters
from annotation.models import Dataset, Dialogue, Situation, Utterance

_NAME = re.compile(r"^[-a-zA-Z0-9_]{1,64}$")
SPLITS = ("train", "valid", "test")


@dataclass(frozen=True)
class ImportResult:
    """What an import stored."""

    dataset: Dataset
    dialogues: int
    utterances: int
    replacements: int


def records_read(fmt: str, paths: Sequence[Path]) -> list[DialogueRecord]:
    """Read every file with the format's reader; a key in two files is refused."""
    reader = READERS.get(fmt)
    if reader is None:
        raise InvalidParameters(f"Unknown format {fmt!r}; use one of {', '.join(READERS)}.")
    if not paths:
        raise InvalidParameters("Name at least one file to import.")
    records: list[DialogueRecord] = []
    seen: dict[str, str] = {}
    for path in paths:
        if not Path(path).is_file():
            raise DatasetError(f"{path}: no such file")
        for record in reader(Path(path)):
            if record.key in seen:
                raise DatasetError(
                    f"{record.where}: the dialogue {record.key!r} is also in {seen[record.key]}"
                )
            seen[record.key] = record.where
            records.append(record)
    return records


def records_deidentify(records: Sequence[DialogueRecord], deidentifier: Deidentifier) -> int:
    """De-identify records in place; keep what was replaced in ``metadata``; return how many."""
    total = 0
    for record in records:
        texts, speakers, replaced = deidentifier.dialogue(
            [u.text for u in record.utterances], [u.speaker for u in record.utterances]
        )
        for u, text, speaker in zip(record.utterances, texts, speakers, strict=True):
            u.text, u.speaker = text, speaker
        if replaced:
            record.metadata["deidentification"] = [r.as_dict() for r in replaced]
        total += len(replaced)
    return total


@transaction.atomic
def dataset_import(
    *,
    name: str,
    fmt: str,
    paths: Sequence[Path],
    source: str = "",
    description: str = "",
    deidentifier: Deidentifier | None = None,
) -> ImportResult:
    """Read the files and store them as one new data set, all or nothing.

    ``source`` fills the sub-source of dialogues whose file does not name one (e.g. Friends).
    With a ``deidentifier``, texts and speaker names are de-identified before anything is
    stored, and each dialogue's replacements are kept in its ``metadata`` for review.
    """
    if not _NAME.match(name):
        raise InvalidParameters("The data set name must be 1–64 letters, digits, '-' or '_'.")
    if Dataset.objects.filter(name=name).exists():
        raise Conflict(f"A data set named {name!r} exists already; choose another name.")
    records = records_read(fmt, paths)
    replaced = records_deidentify(records, deidentifier) if deidentifier else 0
    for record in records:
        _record_check(record)
    dataset = Dataset.objects.create(name=name, source_format=fmt, description=description)
    situations = Situation.objects.bulk_create(
        [
            Situation(
                dataset=dataset, author=r.situation_author, emotion=r.emotion, text=r.situation
            )
            for r in records
            if r.situation
        ],
        batch_size=1000,
    )
    by_record = iter(situations)
    dialogues = Dialogue.objects.bulk_create(
        [
            Dialogue(
                dataset=dataset,
                key=r.key,
                source=r.source or source,
                split=r.split,
                emotion=r.emotion,
                situation=next(by_record) if r.situation else None,
                metadata=r.metadata,
            )
            for r in records
        ],
        batch_size=1000,
    )
    utterances = Utterance.objects.bulk_create(
        [
            Utterance(
                dialogue=d,
                index=i,
                speaker=u.speaker,
                text=u.text,
                label=u.label,
                annotations=u.annotations,
            )
            for d, r in zip(dialogues, records, strict=True)
            for i, u in enumerate(r.utterances)
        ],
        batch_size=2000,
    )
    return ImportResult(dataset, len(dialogues), len(utterances), replaced)


def _record_check(record: DialogueRecord) -> None:
    """Refuse values that do not fit the tables' columns, naming the record."""
    limits = {"key": 200, "source": 64, "split": 16, "emotion": 32, "situation_author": 128}
    for f, limit in limits.items():
        if len(getattr(record, f)) > limit:
            raise DatasetError(f"{record.where}: {f} is longer than {limit} characters")
    if not record.utterances:
        raise DatasetError(f"{record.where}: the dialogue has no utterances")
    for u in record.utterances:
        if len(u.speaker) > 64 or len(u.label) > 32:
            raise DatasetError(
                f"{record.where}: a speaker is longer than 64 or a label than 32 characters"
            )


# --- export ----------------------------------------------------------------------------------


def split_by_author(
    records: Sequence[DialogueRecord],
    *,
    fractions: tuple[float, float, float] = (0.8, 0.1, 0.1),
    seed: int = 0,
) -> dict[str, list[DialogueRecord]]:
    """Split dialogues train/valid/test by situation author: no author is in two splits.

    Authors are shuffled with ``seed`` and taken in turn into train until it holds
    ``fractions[0]`` of the dialogues, then valid, then test (ED's 80/10/10). A dialogue
    without an author counts as its own author.
    """
    if len(fractions) != 3 or any(f < 0 for f in fractions) or abs(sum(fractions) - 1) > 1e-9:
        raise InvalidParameters("Split fractions must be three non-negative numbers summing to 1.")
    by_author: dict[str, list[DialogueRecord]] = {}
    for r in records:
        by_author.setdefault(r.situation_author or f"dialogue:{r.key}", []).append(r)
    authors = sorted(by_author)
    random.Random(seed).shuffle(authors)
    total = len(records)
    bounds = (fractions[0] * total, (fractions[0] + fractions[1]) * total)
    splits: dict[str, list[DialogueRecord]] = {s: [] for s in SPLITS}
    taken = 0
    for author in authors:
        split = "train" if taken < bounds[0] else "valid" if taken < bounds[1] else "test"
        splits[split].extend(by_author[author])
        taken += len(by_author[author])
    return splits


def records_export(
    records: Sequence[DialogueRecord], *, fmt: str, out: Path, by_author: bool = False
) -> list[tuple[Path, int]]:
    """Write ``records`` to ``out`` (or, split by author, to ``<out>-train.<ext>`` …).

    Return (path, dialogues) per file written. ``deidentification`` originals never leave.
    """
    writer = WRITERS.get(fmt)
    if writer is None:
        raise InvalidParameters(f"Unknown format {fmt!r}; use one of {', '.join(WRITERS)}.")
    clean = [_without_originals(r) for r in records]
    out.parent.mkdir(parents=True, exist_ok=True)
    if not by_author:
        return [(out, writer(clean, out))]
    written = []
    stem = out.name[: -len(out.suffix)] if out.suffix else out.name
    for split, part in split_by_author(clean).items():
        for r in part:
            r.split = split
        path = out.with_name(f"{stem}-{split}.{SUFFIXES[fmt]}")
        written.append((path, writer(part, path)))
    return written


def _without_originals(record: DialogueRecord) -> DialogueRecord:
    replaced = record.metadata.get("deidentification")
    if not replaced:
        return record
    metadata = dict(record.metadata)
    metadata["deidentification"] = [
        {k: v for k, v in r.items() if k != "original"} for r in replaced
    ]
    return dataclasses.replace(record, metadata=metadata)
