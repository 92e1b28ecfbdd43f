"""Readers of judgments collected elsewhere: MTurk batch results, Prolific exports, long files.

Each file becomes a list of ``Work`` (one real worker's unit of work: an MTurk assignment, a
Prolific submission, or every line of one worker in a long file), each with its answers per
item, still raw: ``services.imports.judgments_import`` validates them with the protocol and
stores them. A ``JudgmentMap`` says which column holds the item key, which columns (or long
file questions) are which of the protocol's questions, how raw answers translate, and, to
create items from the file, which columns make a payload. docs/datasets.md, "Importing
judgments", describes the formats. A malformed line refuses the whole file with a
``CorpusError`` naming the line. Nothing here imports Django.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corpora.readers import _text, _why
from corpora.records import CorpusError

FORMATS = ("mturk-batch", "prolific", "long")

# MTurk's AssignmentStatus and Prolific's Status → the assignment's status; others are skipped.
MTURK_STATUSES = {"Submitted": "submitted", "Approved": "approved", "Rejected": "rejected"}
PROLIFIC_STATUSES = {
    "APPROVED": "approved",
    "AWAITING REVIEW": "submitted",
    "PARTIALLY APPROVED": "approved",
    "REJECTED": "rejected",
}
PROLIFIC_PARTICIPANT = ("Participant id", "PROLIFIC_PID", "participant_id")
PROLIFIC_SUBMISSION = ("Submission id", "SESSION_ID", "submission_id")
PROLIFIC_STUDY = ("Study id", "STUDY_ID", "study_id")
PROLIFIC_STATUS = ("Status", "status")
PROLIFIC_SECONDS = ("Time taken", "time_taken")
LONG_COLUMNS = ("item", "worker", "question", "value")
MAP_KEYS = ("item", "questions", "values", "set", "seconds", "payload", "presentation")


@dataclass(frozen=True)
class JudgmentMap:
    """How a file's columns become items and the protocol's answers.

    ``item``: the column of the item key (``{n}`` in it and in question columns: one row holds
    items 1, 2, … while that column exists); ``questions``: column (wide files) or question
    name (long files) → the protocol's question; ``values``: question → raw text → value;
    ``set``: answers the same for every judgment; ``seconds``: the column of the time spent
    (a wide row's time is split over its items); ``payload``: item field → column(s), to
    create items; ``presentation``: a column of JSON objects (what the worker was shown, e.g.
    ``{"order": ["b", "a"]}``).
    """

    item: str = ""
    questions: dict[str, str] = field(default_factory=dict)
    values: dict[str, dict[str, Any]] = field(default_factory=dict)
    set: dict[str, Any] = field(default_factory=dict)
    seconds: str = ""
    payload: dict[str, str | list[str]] = field(default_factory=dict)
    presentation: str = ""


@dataclass(frozen=True)
class Answer:
    """One worker's raw answers to one item, and where they came from."""

    line: int
    item: str
    answers: dict[str, Any]
    seconds: float | None = None
    payload: dict[str, Any] | None = None
    presentation: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Work:
    """One real worker's unit of work: their provider id, the provider's assignment and HIT
    ids (empty when the file has none), its status and its answers."""

    line: int
    provider: str
    worker: str
    assignment: str
    hit: str
    status: str
    answers: tuple[Answer, ...]


@dataclass(frozen=True)
class JudgmentFile:
    """A file read: its units of work, and the rows skipped by status (status → rows)."""

    works: list[Work]
    skipped: dict[str, int]


def map_read(path: Path) -> JudgmentMap:
    """Read a JSON mapping file (keys as ``JudgmentMap``'s); raise CorpusError naming it."""
    text = _text(path, path.name)
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise CorpusError(f"{path.name}: not valid JSON ({_why(exc)})") from None
    return map_from(data, where=path.name)


def map_from(data: Any, *, where: str = "the mapping") -> JudgmentMap:
    """Return the mapping that ``data`` (a dict as in a mapping file) describes."""
    if not isinstance(data, dict):
        raise CorpusError(f"{where}: a mapping is an object with {', '.join(MAP_KEYS)}")
    unknown = sorted(set(data) - set(MAP_KEYS))
    if unknown:
        raise CorpusError(f"{where}: unknown key {unknown[0]!r}; known: {', '.join(MAP_KEYS)}")
    for key in ("item", "seconds", "presentation"):
        if not isinstance(data.get(key, ""), str):
            raise CorpusError(f"{where}: {key!r} is a column name")
    for key in ("questions", "values", "set", "payload"):
        if not isinstance(data.get(key, {}), dict):
            raise CorpusError(f"{where}: {key!r} is an object")
    questions = data.get("questions", {})
    if not all(isinstance(v, str) and v for v in questions.values()):
        raise CorpusError(f"{where}: 'questions' maps columns to question names")
    values = data.get("values", {})
    if not all(isinstance(v, dict) for v in values.values()):
        raise CorpusError(f"{where}: 'values' maps each question to {{raw: value}}")
    payload = data.get("payload", {})
    for name, columns in payload.items():
        if not (
            isinstance(columns, str)
            or (isinstance(columns, list) and all(isinstance(c, str) for c in columns))
        ):
            raise CorpusError(f"{where}: payload field {name!r}: a column or a list of columns")
    return JudgmentMap(
        item=data.get("item", ""),
        questions=dict(questions),
        values={q: {str(k): v for k, v in m.items()} for q, m in values.items()},
        set=dict(data.get("set", {})),
        seconds=data.get("seconds", ""),
        payload=dict(payload),
        presentation=data.get("presentation", ""),
    )


def read_judgments(
    path: Path,
    *,
    fmt: str,
    mapping: JudgmentMap,
    questions: Sequence[str],
    provider: str = "local",
    rejected: bool = False,
) -> JudgmentFile:
    """Read a file of judgments in ``fmt`` (``FORMATS``) with ``mapping``.

    ``questions`` are the protocol's question keys: a wide file's ``Answer.<question>``
    (MTurk) or ``<question>`` (Prolific) columns are taken without a mapping. ``provider``
    is the workers' provider in a long file (MTurk and Prolific files name their own).
    Rejected work is skipped unless ``rejected``; returned, timed-out and active work always.
    """
    if fmt not in FORMATS:
        raise CorpusError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
    text = _text(path, path.name)
    if fmt == "long":
        return _long(path, text, mapping, provider)
    try:
        rows, header = _csv(text)
    except csv.Error as exc:
        raise CorpusError(f"{path.name}: not valid CSV ({exc})") from None
    return _wide(path.name, rows, header, fmt, mapping, questions, rejected)


def _csv(text: str) -> tuple[list[tuple[int, dict[str, str]]], list[str]]:
    reader = csv.DictReader(io.StringIO(text))
    header = list(reader.fieldnames or [])
    rows = []
    for record in reader:
        if None in record:
            raise CorpusError(f"line {reader.line_num}: more fields than the header has")
        rows.append((reader.line_num, {k: (v or "") for k, v in record.items()}))
    return rows, header


def _pick(header: Sequence[str], names: Sequence[str], where: str, *, required: bool) -> str:
    for name in names:
        if name in header:
            return name
    if required:
        raise CorpusError(f"{where}, line 1: no column {' or '.join(map(repr, names))}")
    return ""


@dataclass(frozen=True)
class _WideLayout:
    """Where a wide file (an MTurk batch, a Prolific export) keeps the ids, the status (and
    what its values mean), the seconds, the item keys and the answers (column → question)."""

    provider: str
    ids: dict[str, str]
    status_column: str
    statuses: Mapping[str, str]
    seconds: str
    item_column: str
    columns: dict[str, str]


def _wide_layout(
    name: str, header: list[str], fmt: str, mapping: JudgmentMap, questions: Sequence[str]
) -> _WideLayout:
    """Find the columns of a wide file in its header, or say which one is missing."""
    if fmt == "mturk-batch":
        for column in ("HITId", "AssignmentId", "WorkerId", "AssignmentStatus"):
            _pick(header, [column], name, required=True)
        ids = {"worker": "WorkerId", "assignment": "AssignmentId", "hit": "HITId"}
        status_column, statuses = "AssignmentStatus", MTURK_STATUSES
        prefix, provider = "Answer.", "mturk"
        seconds = mapping.seconds or "WorkTimeInSeconds"
    else:
        ids = {
            "worker": _pick(header, PROLIFIC_PARTICIPANT, name, required=True),
            "assignment": _pick(header, PROLIFIC_SUBMISSION, name, required=False),
            "hit": _pick(header, PROLIFIC_STUDY, name, required=False),
        }
        status_column = _pick(header, PROLIFIC_STATUS, name, required=False)
        statuses, prefix, provider = PROLIFIC_STATUSES, "", "prolific"
        seconds = mapping.seconds or _pick(header, PROLIFIC_SECONDS, name, required=False)
    item_column = mapping.item or _pick(
        header, ["Input.key", "Input.item", "item"], name, required=False
    )
    if not item_column:
        raise CorpusError(f"{name}: name the column of the item keys (--item or the mapping)")
    columns = dict(mapping.questions) or {
        f"{prefix}{q}": q for q in questions if _present(header, f"{prefix}{q}", 1)
    }
    if not columns:
        raise CorpusError(f"{name}: no answer columns; map them (--map COLUMN=QUESTION)")
    for column in [*columns, *_payload_columns(mapping)]:
        if not _present(header, column, 1):
            raise CorpusError(f"{name}, line 1: no column {column.format(n=1)!r}")
    for column in (seconds, mapping.presentation):
        if column and column not in header:
            raise CorpusError(f"{name}, line 1: no column {column!r}")
    return _WideLayout(provider, ids, status_column, statuses, seconds, item_column, columns)


def _wide(
    name: str,
    rows: list[tuple[int, dict[str, str]]],
    header: list[str],
    fmt: str,
    mapping: JudgmentMap,
    questions: Sequence[str],
    rejected: bool,
) -> JudgmentFile:
    """Read a wide file's rows, one assignment each; count by status the work left out."""
    layout = _wide_layout(name, header, fmt, mapping, questions)
    ids, status_column, seconds = layout.ids, layout.status_column, layout.seconds
    works: list[Work] = []
    skipped: dict[str, int] = {}
    seen: set[str] = set()
    for line, row in rows:
        where = f"{name}, line {line}"
        raw_status = row.get(status_column, "").strip() if status_column else ""
        status = layout.statuses.get(raw_status) if status_column else "submitted"
        if status is None or (status == "rejected" and not rejected):
            skipped[raw_status or "(none)"] = skipped.get(raw_status or "(none)", 0) + 1
            continue
        worker = row[ids["worker"]].strip()
        if not worker:
            raise CorpusError(f"{where}: no worker id in {ids['worker']!r}")
        assignment = row[ids["assignment"]].strip() if ids["assignment"] else ""
        if assignment:
            if assignment in seen:
                raise CorpusError(f"{where}: the assignment {assignment!r} appears twice")
            seen.add(assignment)
        answers = _row_answers(
            where, row, header, line, mapping, layout.item_column, layout.columns
        )
        total = _number(row.get(seconds, ""), where, seconds) if seconds else None
        share = None if total is None else total / len(answers)
        works.append(
            Work(
                line=line,
                provider=layout.provider,
                worker=worker,
                assignment=assignment,
                hit=row[ids["hit"]].strip() if ids["hit"] else "",
                status=status,
                answers=tuple(
                    Answer(a.line, a.item, a.answers, share, a.payload, a.presentation)
                    for a in answers
                ),
            )
        )
    return JudgmentFile(works=works, skipped=skipped)


def _present(header: Sequence[str], column: str, n: int) -> bool:
    """Tell whether ``column`` (for item ``n``) is in the file, itself or as one-hot columns
    (MTurk's crowd-html radio groups: ``Answer.q.label`` = true)."""
    name = column.format(n=n) if "{n}" in column else column
    return name in header or any(h.startswith(f"{name}.") for h in header)


def _payload_columns(mapping: JudgmentMap) -> list[str]:
    return [c for v in mapping.payload.values() for c in ([v] if isinstance(v, str) else v)]


def _row_answers(
    where: str,
    row: Mapping[str, str],
    header: Sequence[str],
    line: int,
    mapping: JudgmentMap,
    item_column: str,
    columns: Mapping[str, str],
) -> list[Answer]:
    """Return a wide row's answers: one item, or items 1, 2, … with ``{n}`` columns."""
    numbered = "{n}" in item_column
    answers: list[Answer] = []
    n = 1
    while not numbered or item_column.format(n=n) in header:
        key = row[item_column.format(n=n) if numbered else item_column].strip()
        if not key:
            if not numbered:
                raise CorpusError(f"{where}: no item key in {item_column!r}")
            break
        values: dict[str, Any] = {}
        for column, question in columns.items():
            raw = _cell(row, header, column.format(n=n) if "{n}" in column else column, where)
            if raw != "":
                values[question] = _value(mapping, question, raw, where)
        payload = None
        if mapping.payload:
            payload = {
                f: (
                    row[c.format(n=n)].strip()
                    if isinstance(c, str)
                    else [row[x.format(n=n)].strip() for x in c if row[x.format(n=n)].strip()]
                )
                for f, c in mapping.payload.items()
            }
        answers.append(
            Answer(
                line=line,
                item=key,
                answers=values | mapping.set,
                payload=payload,
                presentation=_shown(row, mapping.presentation, where),
            )
        )
        if not numbered:
            break
        n += 1
    if not answers:
        raise CorpusError(f"{where}: no item key in {item_column.format(n=1)!r}")
    return answers


def _cell(row: Mapping[str, str], header: Sequence[str], column: str, where: str) -> str:
    if column in row:
        return row[column].strip()
    chosen = [
        h[len(column) + 1 :]
        for h in header
        if h.startswith(f"{column}.") and row[h].strip().lower() == "true"
    ]
    if len(chosen) > 1:
        raise CorpusError(f"{where}: {column!r} has {len(chosen)} options ticked")
    return chosen[0] if chosen else ""


def _value(mapping: JudgmentMap, question: str, raw: Any, where: str) -> Any:
    table = mapping.values.get(question)
    if table is None:
        return raw
    key = raw if isinstance(raw, str) else json.dumps(raw)
    if key not in table:
        raise CorpusError(f"{where}: no value for {question!r} answered {key[:40]!r} in the map")
    return table[key]


def _number(raw: str, where: str, column: str) -> float | None:
    raw = raw.strip()
    if raw == "":
        return None
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 <= value < 10**7:
        raise CorpusError(f"{where}: {column!r} must be a number of seconds, not {raw[:20]!r}")
    return value


def _shown(row: Mapping[str, Any], column: str, where: str) -> dict[str, Any]:
    if not column or row.get(column) in ("", None):
        return {}
    raw = row[column]
    try:
        value = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise CorpusError(f"{where}: {column!r} must be a JSON object")
    return value


def _long_rows(path: Path, text: str) -> list[tuple[int, dict[str, Any]]]:
    if path.suffix.lower() == ".jsonl":
        rows = []
        for n, raw in enumerate(text.split("\n"), start=1):
            if not raw.strip():
                continue
            try:
                record = json.loads(raw)
            except (ValueError, RecursionError) as exc:
                raise CorpusError(f"{path.name}, line {n}: not valid JSON ({_why(exc)})") from None
            if not isinstance(record, dict):
                raise CorpusError(f"{path.name}, line {n}: each line is an object")
            rows.append((n, record))
        return rows
    try:
        rows_csv, _header = _csv(text)
    except csv.Error as exc:
        raise CorpusError(f"{path.name}: not valid CSV ({exc})") from None
    except CorpusError as exc:
        raise CorpusError(f"{path.name}, {exc}") from None
    return [(n, dict(r)) for n, r in rows_csv]


def _long(path: Path, text: str, mapping: JudgmentMap, provider: str) -> JudgmentFile:
    """One ``Work`` per worker: their lines grouped by item, in the file's order."""
    rows = _long_rows(path, text)
    if not rows:
        raise CorpusError(f"{path.name}: the file has no judgments")
    by_worker: dict[str, dict[str, Answer]] = {}
    first: dict[str, int] = {}
    for line, row in rows:
        where = f"{path.name}, line {line}"
        missing = [c for c in LONG_COLUMNS if row.get(c) in (None, "")]
        if missing:
            raise CorpusError(f"{where}: needs {', '.join(map(repr, LONG_COLUMNS))}")
        item, worker = str(row["item"]).strip(), str(row["worker"]).strip()
        asked = str(row["question"]).strip()
        question = mapping.questions.get(asked, asked)
        value = _value(mapping, question, row["value"], where)
        seconds = row.get("seconds")
        spent = _number(str(seconds), where, "seconds") if seconds not in (None, "") else None
        answers = by_worker.setdefault(worker, {})
        first.setdefault(worker, line)
        known = answers.get(item)
        if known is None:
            answers[item] = Answer(
                line,
                item,
                {question: value} | mapping.set,
                spent,
                None,
                _shown(row, mapping.presentation, where),
            )
        elif question in known.answers and question not in mapping.set:
            raise CorpusError(f"{where}: a second answer of {worker!r} to {question!r} on {item!r}")
        else:
            known.answers[question] = value
    works = [
        Work(
            line=first[worker],
            provider=provider,
            worker=worker,
            assignment="",
            hit="",
            status="submitted",
            answers=tuple(answers.values()),
        )
        for worker, answers in by_worker.items()
    ]
    return JudgmentFile(works=works, skipped={})


def items_of(works: Sequence[Work], *, source: str) -> list[tuple[str, dict[str, Any]]]:
    """Return the items the file's payload columns describe, (key, payload) once per key;
    raise CorpusError naming the line where a key comes back with other columns."""
    payloads: dict[str, dict[str, Any]] = {}
    for work in works:
        for answer in work.answers:
            known = payloads.setdefault(answer.item, answer.payload or {})
            if known != (answer.payload or {}):
                raise CorpusError(
                    f"{source}, line {answer.line}: the item {answer.item!r} has other "
                    "contents than on an earlier line"
                )
    return list(payloads.items())
