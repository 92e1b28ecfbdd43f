"""Import data set files into the dialogue tables, and export dialogues to files.

An import reads and checks every file first, then stores everything in one transaction: a
malformed file changes nothing, even one whose fault only the database finds. Exports name
workers only by pseudonym.
"""

from __future__ import annotations

import dataclasses
import json
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.db import DataError, IntegrityError, models, transaction

from annotation.deidentify import Deidentifier
from annotation.models import Dataset, Dialogue, Situation, Utterance
from corpora import READERS, SUFFIXES, WRITERS, Reader
from corpora.limits import FILES, Limits
from corpora.records import DatasetError, DialogueRecord
from evalsite.errors import Conflict, InvalidParameters

_NAME = re.compile(r"[-a-zA-Z0-9_]+")
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
        for record in _read(reader, Path(path)):
            if record.key in seen:
                raise DatasetError(
                    f"{record.where}: the dialogue {record.key!r} is also in {seen[record.key]}"
                )
            seen[record.key] = record.where
            records.append(record)
    return records


def _read(reader: Reader, path: Path) -> list[DialogueRecord]:
    """Run a reader; an exception a reader did not foresee still names the file, not a trace."""
    try:
        return reader(path)
    except DatasetError:
        raise
    except (ValueError, TypeError, KeyError, IndexError, AttributeError, RecursionError) as exc:
        raise DatasetError(
            f"{path.name}: cannot be read ({type(exc).__name__}: {str(exc)[:200]})"
        ) from None


def records_deidentify(records: Sequence[DialogueRecord], deidentifier: Deidentifier) -> int:
    """De-identify records in place; keep what was replaced in ``metadata``; return how many.

    The situation is de-identified with its dialogue: one original, one replacement in both.
    """
    total = 0
    for record in records:
        done = deidentifier.conversation(
            [u.text for u in record.utterances],
            [u.speaker for u in record.utterances],
            situation=record.situation,
        )
        for u, text, speaker in zip(record.utterances, done.texts, done.speakers, strict=True):
            u.text, u.speaker = text, speaker
        record.situation = done.situation
        if done.replacements:
            record.metadata["deidentification"] = [r.as_dict() for r in done.replacements]
        total += len(done.replacements)
    return total


def _max_length(model: type[models.Model], name: str) -> int:
    """Return a text column's length limit, read from the model so the two cannot drift."""
    column = model._meta.get_field(name)
    assert isinstance(column, models.CharField) and column.max_length is not None
    return column.max_length


@transaction.atomic
def dataset_import(
    *,
    name: str,
    fmt: str,
    paths: Sequence[Path],
    source: str = "",
    description: str = "",
    deidentifier: Deidentifier | None = None,
    limits: Limits = FILES,
) -> ImportResult:
    """Read the files and store them as one new data set, all or nothing.

    ``limits`` bound the utterances stored (``corpora.limits``: ``UPLOADS`` in a web request).

    ``source`` fills the sub-source of dialogues whose file does not name one (e.g. Friends).
    With a ``deidentifier``, texts, situations and speaker names are de-identified before
    anything is stored, and each dialogue's replacements are kept in its ``metadata`` for
    review. A name, source or value its column cannot hold is refused before anything is
    stored; what only the database refuses rolls the whole import back (``DatasetError``).
    """
    _arguments_check(name=name, source=source, description=description)
    if Dataset.objects.filter(name=name).exists():
        raise Conflict(f"A data set named {name!r} exists already; choose another name.")
    records = records_read(fmt, paths)
    if sum(len(r.utterances) for r in records) > limits.rows:
        # What storing them costs: a line of JSONL may hold thousands of utterances.
        raise DatasetError(f"More than {limits.rows:,} utterances; split the data set.")
    replaced = records_deidentify(records, deidentifier) if deidentifier else 0
    for record in records:
        _record_check(record)
    try:
        # Django's way to catch a database error inside atomic(): this savepoint is rolled
        # back, and the DatasetError raised below rolls back the import's whole transaction.
        with transaction.atomic():
            dataset, dialogues, utterances = _records_store(
                records, name=name, fmt=fmt, source=source, description=description
            )
    except (IntegrityError, DataError) as exc:
        # What the checks above missed (two imports racing for a name, a column limit
        # changed): the database refused it and nothing stays stored.
        raise DatasetError(
            f"The data could not be stored; the database refused it: {str(exc).strip()[:300]}"
        ) from None
    return ImportResult(dataset, dialogues, utterances, replaced)


def _arguments_check(*, name: str, source: str, description: str) -> None:
    """Refuse a name, source or description that its column cannot hold."""
    name_max = _max_length(Dataset, "name")
    if len(name) > name_max:
        raise InvalidParameters(
            f"The data set name is {len(name)} characters long; at most {name_max} fit."
        )
    if not _NAME.fullmatch(name):
        raise InvalidParameters(
            f"The data set name {name[:40]!r} must be 1–{name_max} letters, digits, '-' or '_'."
        )
    source_max = _max_length(Dialogue, "source")
    if len(source) > source_max:
        raise InvalidParameters(
            f"The source {source[:20]!r}… is {len(source)} characters long; at most "
            f"{source_max} fit."
        )
    for what, value in (("source", source), ("description", description)):
        problem = _text_problem(value)
        if problem:
            raise InvalidParameters(f"The {what} {problem}.")


def _records_store(
    records: Sequence[DialogueRecord], *, name: str, fmt: str, source: str, description: str
) -> tuple[Dataset, int, int]:
    """Store checked records as a new data set; return it and the dialogues and utterances."""
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
    return dataset, len(dialogues), len(utterances)


def _text_problem(value: str) -> str:
    """Return why a database cannot hold ``value`` as text (PostgreSQL refuses NUL), or ''."""
    if "\x00" in value:
        return "holds a NUL character (\\u0000)"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "holds a lone surrogate (an unpaired \\ud800–\\udfff), which is not text"
    return ""


def _json_problem(value: Any) -> str:
    """Return why a JSON column cannot hold ``value`` (PostgreSQL's jsonb), or ''."""
    try:
        # allow_nan=False: NaN and Infinity are not JSON; jsonb refuses them.
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        return f"is not JSON ({exc})"
    except RecursionError:
        return "is nested too deeply"
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack += list(item.keys()) + list(item.values())
        elif isinstance(item, list):
            stack += item
        elif isinstance(item, str) and _text_problem(item):
            return _text_problem(item)
    return ""


def _record_check(record: DialogueRecord) -> None:
    """Refuse values that do not fit the tables' columns, naming the record."""
    limits = {
        "key": _max_length(Dialogue, "key"),
        "source": _max_length(Dialogue, "source"),
        "split": _max_length(Dialogue, "split"),
        "emotion": _max_length(Dialogue, "emotion"),
        "situation_author": _max_length(Situation, "author"),
    }
    for f, limit in limits.items():
        if len(getattr(record, f)) > limit:
            raise DatasetError(f"{record.where}: {f} is longer than {limit} characters")
    if not record.utterances:
        raise DatasetError(f"{record.where}: the dialogue has no utterances")
    speaker_max, label_max = _max_length(Utterance, "speaker"), _max_length(Utterance, "label")
    for u in record.utterances:
        if len(u.speaker) > speaker_max or len(u.label) > label_max:
            raise DatasetError(
                f"{record.where}: a speaker is longer than {speaker_max} or a label than "
                f"{label_max} characters"
            )
    texts = [(f, getattr(record, f)) for f in (*limits, "situation")]
    for i, u in enumerate(record.utterances, start=1):
        texts += [(f"utterance {i}'s {f}", getattr(u, f)) for f in ("speaker", "text", "label")]
    for what, value in texts:
        problem = _text_problem(value)
        if problem:
            raise DatasetError(f"{record.where}: the {what} {problem}")
    values = [("metadata", record.metadata)]
    values += [
        (f"utterance {i}'s annotations", u.annotations) for i, u in enumerate(record.utterances, 1)
    ]
    for what, value in values:
        problem = _json_problem(value)
        if problem:
            raise DatasetError(f"{record.where}: the {what} {problem}")


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
