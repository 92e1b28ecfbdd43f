"""Readers of dialogue corpora and static context sets in their published formats (the
import issue adds the rest). A malformed file is refused whole, naming the line and what is
wrong."""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ED_COLUMNS = ["conv_id", "utterance_idx", "context", "prompt", "speaker_idx", "utterance"]


class CorpusError(ValueError):
    """A corpus file that cannot be read; the message names the line."""


@dataclass(frozen=True)
class Dialogue:
    """One conversation: its id, emotion label, situation and (speaker, text) turns."""

    conv_id: str
    emotion: str
    situation: str
    turns: tuple[tuple[str, str], ...]


def _why(exc: Exception) -> str:
    """Say what is wrong with a JSON line (json raises RecursionError for deep nesting)."""
    if isinstance(exc, json.JSONDecodeError):
        return exc.msg
    return "nested too deeply" if isinstance(exc, RecursionError) else str(exc)


def _ed_text(value: str) -> str:
    # The released ED CSV writes commas inside fields as "_comma_".
    return value.replace("_comma_", ",").strip()


def read_empathetic_dialogues(path: Path) -> list[Dialogue]:
    """Read an EmpatheticDialogues CSV (Rashkin et al. 2019) into dialogues, in file order."""
    try:
        handle = path.open(encoding="utf-8-sig", newline="")
    except OSError as exc:
        raise CorpusError(f"{path}: cannot open: {exc.strerror}") from None
    with handle:
        reader = csv.reader(handle)
        try:
            header = next(reader)
        except StopIteration:
            raise CorpusError(f"{path}: the file is empty") from None
        except (csv.Error, UnicodeDecodeError) as exc:
            raise CorpusError(f"{path}, line 1: {exc}") from None
        missing = [c for c in ED_COLUMNS if c not in header]
        if missing:
            raise CorpusError(f"{path}, line 1: missing column(s) {', '.join(missing)}")
        index = {c: header.index(c) for c in ED_COLUMNS}
        dialogues: dict[str, dict] = {}
        line = 1
        try:
            for line, row in enumerate(reader, start=2):
                if len(row) < len(header):
                    raise CorpusError(
                        f"{path}, line {line}: {len(row)} fields, expected {len(header)}"
                    )
                conv = row[index["conv_id"]].strip()
                try:
                    position = int(row[index["utterance_idx"]])
                except ValueError:
                    raise CorpusError(
                        f"{path}, line {line}: utterance_idx is not a number"
                    ) from None
                text = _ed_text(row[index["utterance"]])
                if not conv or not text:
                    raise CorpusError(f"{path}, line {line}: empty conv_id or utterance")
                d = dialogues.setdefault(
                    conv,
                    {
                        "emotion": row[index["context"]].strip(),
                        "situation": _ed_text(row[index["prompt"]]),
                        "turns": [],
                    },
                )
                if position != len(d["turns"]) + 1:
                    raise CorpusError(
                        f"{path}, line {line}: utterance_idx {position} of {conv} is out of order"
                    )
                d["turns"].append((row[index["speaker_idx"]].strip(), text))
        except (csv.Error, UnicodeDecodeError) as exc:
            raise CorpusError(f"{path}, line {line + 1}: {exc}") from None
    if not dialogues:
        raise CorpusError(f"{path}: no dialogues")
    return [
        Dialogue(conv_id=c, emotion=d["emotion"], situation=d["situation"], turns=tuple(d["turns"]))
        for c, d in dialogues.items()
    ]


@dataclass(frozen=True)
class Context:
    """A fixed dialogue context to send to models: its key, 1–3 turns, maybe the human reply."""

    key: str
    turns: tuple[str, ...]
    reference: str | None = None


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
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise CorpusError(f"{path}: cannot open: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise CorpusError(f"{path}: not UTF-8 text (byte {exc.start})") from None
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
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise CorpusError(f"{path}: cannot open: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise CorpusError(f"{path}: not UTF-8 text (byte {exc.start})") from None
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
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise CorpusError(f"{path.name}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise CorpusError(f"{path.name}: cannot read: {exc.strerror}") from None
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
