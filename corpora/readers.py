"""Readers of the files that campaign items are built from: static context sets, model
responses, and JSONL items and gold checks (dialogue data sets are read by ``sources`` and
``generic``). A malformed file is refused whole with a ``CorpusError`` naming the line and
what is wrong.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from typing import Any

from corpora.limits import file_bytes
from corpora.records import Context, CorpusError, DatasetError


def _why(exc: Exception) -> str:
    """Say what is wrong with a JSON line (json raises RecursionError for deep nesting)."""
    if isinstance(exc, json.JSONDecodeError):
        return exc.msg
    return "nested too deeply" if isinstance(exc, RecursionError) else str(exc)


def _text(path: Path, name: str) -> str:
    """Return the file's UTF-8 text (a BOM dropped) once within ``limits.FILES``; raise
    CorpusError naming it as ``name``."""
    try:
        return file_bytes(path, name).decode("utf-8-sig")
    except DatasetError as exc:
        raise CorpusError(str(exc)) from None
    except UnicodeDecodeError as exc:
        raise CorpusError(f"{name}: not UTF-8 text (byte {exc.start})") from None


def read_contexts(path: Path, *, max_turns: int = 3) -> list[Context]:
    """Read a static context set (Meena's Mini-Turing Benchmark style), by file suffix.

    - ``.jsonl``: one object per line, ``{"id": ..., "context": [turns], "reference": ...}``
      (``context`` may be one string; ``id`` and ``reference`` are optional);
    - ``.csv``: a header with ``turn_1`` … ``turn_<max_turns>`` (later ones may be empty) and
      optional ``id`` and ``reference`` columns;
    - ``.txt``: one context per line, turns separated by tab characters.
    Keys default to ``ctx-<line number>``. A malformed line refuses the whole file.
    """
    readers = {".jsonl": _contexts_jsonl, ".csv": _contexts_csv, ".txt": _contexts_txt}
    reader = readers.get(path.suffix.lower())
    if reader is None:
        raise CorpusError(f"{path}: use a .jsonl, .csv or .txt file of contexts")
    text = _text(path, str(path))
    try:
        rows = reader(text)
    except (CorpusError, csv.Error) as exc:
        raise CorpusError(f"{path.name}, {exc}") from None
    contexts: list[Context] = []
    seen: set[str] = set()
    for line, key, turns, reference in rows:
        where = f"{path.name}, line {line}"
        if not turns or not all(isinstance(t, str) and t.strip() for t in turns):
            raise CorpusError(f"{where}: a context needs 1 to {max_turns} non-empty turns")
        if len(turns) > max_turns:
            raise CorpusError(f"{where}: {len(turns)} turns; at most {max_turns} allowed")
        if reference is not None and (not isinstance(reference, str) or not reference.strip()):
            raise CorpusError(f"{where}: 'reference' must be non-empty text")
        key = str(key if key not in (None, "") else f"ctx-{line}").strip()
        if key in seen:
            raise CorpusError(f"{where}: the id {key!r} appears twice")
        seen.add(key)
        clean = tuple(t.strip() for t in turns)
        contexts.append(Context(key, clean, reference.strip() if reference else None))
    if not contexts:
        raise CorpusError(f"{path}: no contexts in the file")
    return contexts


_Row = tuple[int, object, list, object]


def _contexts_jsonl(text: str) -> list[_Row]:
    rows = []
    for n, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except (ValueError, RecursionError) as exc:
            raise CorpusError(f"line {n}: not valid JSON ({_why(exc)})") from None
        if not isinstance(record, dict) or "context" not in record:
            raise CorpusError(f"line {n}: each line must be an object with a 'context'")
        turns = record["context"]
        turns = [turns] if isinstance(turns, str) else turns
        if not isinstance(turns, list):
            raise CorpusError(f"line {n}: 'context' must be a list of turns or one string")
        rows.append((n, record.get("id"), turns, record.get("reference")))
    return rows


def _contexts_csv(text: str) -> list[_Row]:
    reader = csv.DictReader(io.StringIO(text))
    columns = reader.fieldnames or []
    turn_columns = sorted(
        (c for c in columns if re.fullmatch(r"turn_\d+", c)), key=lambda c: int(c[5:])
    )
    if "turn_1" not in turn_columns:
        raise CorpusError("line 1: the header needs turn_1 (and turn_2, turn_3 if used)")
    rows = []
    for record in reader:
        n = reader.line_num
        if None in record:
            raise CorpusError(f"line {n}: more fields than the header has")
        turns = [record[c] for c in turn_columns if (record[c] or "").strip()]
        reference = record.get("reference") or None
        rows.append((n, record.get("id"), turns, reference))
    return rows


def _contexts_txt(text: str) -> list[_Row]:
    return [
        (n, None, raw.split("\t"), None)
        for n, raw in enumerate(text.splitlines(), start=1)
        if raw.strip()
    ]


def read_responses(path: Path) -> dict[str, dict[str, str]]:
    """Read model responses from JSONL lines ``{"id", "model", "response"}``.

    Returns model → context id → response. A malformed line or a repeated (model, id) refuses
    the whole file, naming the line.
    """
    text = _text(path, str(path))
    responses: dict[str, dict[str, str]] = {}
    for n, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        where = f"{path.name}, line {n}"
        try:
            record = json.loads(raw)
        except (ValueError, RecursionError) as exc:
            raise CorpusError(f"{where}: not valid JSON ({_why(exc)})") from None
        fields = ("id", "model", "response")
        if not isinstance(record, dict) or not all(
            isinstance(record.get(f), str) and record[f].strip() for f in fields
        ):
            raise CorpusError(f"{where}: needs non-empty text fields 'id', 'model', 'response'")
        by_id = responses.setdefault(record["model"].strip(), {})
        if record["id"] in by_id:
            raise CorpusError(
                f"{where}: a second response of {record['model']!r} to {record['id']!r}"
            )
        by_id[record["id"]] = record["response"].strip()
    return responses


def read_jsonl_objects(path: Path, needs: tuple[str, ...]) -> list[dict[str, Any]]:
    """Read a JSONL file of objects with the ``needs`` keys (items, gold checks), naming the
    first bad line; raise CorpusError."""
    text = _text(path, path.name)
    records = []
    for n, raw in enumerate(text.split("\n"), start=1):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except (ValueError, RecursionError) as exc:
            raise CorpusError(f"{path.name}, line {n}: not valid JSON ({_why(exc)})") from None
        if not isinstance(record, dict) or not set(needs) <= set(record):
            raise CorpusError(f"{path.name}, line {n}: needs {', '.join(map(repr, needs))}")
        records.append(record)
    if not records:
        raise CorpusError(f"{path.name}: the file has no records")
    return records


def read_gold_lines(path: Path) -> list[tuple[str, Any, Any, bool]]:
    """Read hidden checks, one JSON object a line: ``key``, ``payload``, ``gold`` (accepted
    answers) and optionally ``"check": "attention"`` (an explicit attention check) → (key,
    payload, gold, is attention), as ``services.items_add`` takes them; raise CorpusError."""
    records = read_jsonl_objects(path, ("key", "payload", "gold"))
    for n, r in enumerate(records, start=1):
        if r.get("check", "gold") not in ("gold", "attention"):
            raise CorpusError(f'{path.name}, gold item {n}: "check" is "gold" or "attention".')
    return [(r["key"], r["payload"], r["gold"], r.get("check") == "attention") for r in records]


def read_training_lines(path: Path) -> list[tuple[str, Any, Any, Any]]:
    """Read training items, one JSON object a line: ``key``, ``payload``, ``answers``
    (expected) and optionally ``explanation`` → as ``services.training_items_add`` takes
    them; raise CorpusError."""
    records = read_jsonl_objects(path, ("key", "payload", "answers"))
    return [(r["key"], r["payload"], r["answers"], r.get("explanation", "")) for r in records]
