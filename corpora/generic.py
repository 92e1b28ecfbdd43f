"""evalsite's own dialogue formats, read and written: JSONL, CSV, Parquet and ParlAI's format.

Every field of a ``DialogueRecord`` survives a write and a read, so import → export → import
gives the same dialogues and labels.

- ``jsonl``: one dialogue per line, ``{"dialogue", "source", "split", "emotion", "situation",
  "situation_author", "metadata", "utterances": [{"speaker", "text", "label", "annotations",
  "worker"}]}``; only ``dialogue`` (or ``id``) and ``utterances`` are required, and an
  utterance may be a plain string;
- ``csv`` and ``parquet``: one utterance per row, columns ``ROW_COLUMNS``; only ``dialogue``
  and ``text`` are required; dialogue-level columns repeat on each row and must agree;
  ``annotations`` and ``metadata`` hold JSON;
- ``parlai``: ParlAI's dialog text format (``ParlAIDialogTeacher``): per episode, lines of
  tab-separated ``field:value`` pairs, ``text`` and ``labels`` holding consecutive turns,
  ``episode_done:True`` on the last; our extra fields keep speakers, labels and the dialogue's
  emotion and situation.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from corpora.limits import parquet_check
from corpora.records import (
    DatasetError,
    DialogueRecord,
    UtteranceRecord,
    text_clean,
)
from corpora.sources import file_text, json_error, json_loads, text_lines
from evalstats.spreadsheets import cell_safe, cell_unsafe

DIALOGUE_FIELDS = ("source", "split", "emotion", "situation", "situation_author")
ROW_COLUMNS = (
    "dialogue",
    "utterance_idx",
    "speaker",
    "text",
    "label",
    "worker",
    "annotations",
    *DIALOGUE_FIELDS,
    "metadata",
)


def _text(value: Any, where: str, name: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise DatasetError(f"{where}: {name!r} must be text")
    return str(value)


def _json_object(value: Any, where: str, name: str) -> dict[str, Any]:
    if value is None or value == "" or (isinstance(value, float) and math.isnan(value)):
        return {}
    if isinstance(value, str):
        try:
            value = json_loads(value)
        except ValueError as exc:
            raise DatasetError(f"{where}: {name!r} is not valid JSON ({json_error(exc)})") from None
    if not isinstance(value, dict):
        raise DatasetError(f"{where}: {name!r} must be a JSON object")
    return value


def _utterance(raw: Any, where: str) -> UtteranceRecord:
    if isinstance(raw, str):
        raw = {"text": raw}
    if not isinstance(raw, Mapping):
        raise DatasetError(f"{where}: an utterance must be an object or a string")
    text = text_clean(_text(raw.get("text"), where, "text"))
    if not text:
        raise DatasetError(f"{where}: the utterance text is empty")
    return UtteranceRecord(
        speaker=text_clean(_text(raw.get("speaker"), where, "speaker")),
        text=text,
        label=_text(raw.get("label"), where, "label").strip(),
        annotations=_json_object(raw.get("annotations"), where, "annotations"),
        worker=_text(raw.get("worker"), where, "worker").strip(),
    )


def _unique(records: list[DialogueRecord], name: str) -> list[DialogueRecord]:
    if not records:
        raise DatasetError(f"{name}: no dialogues")
    seen: dict[str, str] = {}
    for r in records:
        if r.key in seen:
            raise DatasetError(f"{r.where}: the dialogue {r.key!r} appears twice")
        seen[r.key] = r.where
    return records


# --- JSONL ------------------------------------------------------------------------------------


def read_jsonl(path: Path) -> list[DialogueRecord]:
    """Read one dialogue per line."""
    records = []
    for n, raw in enumerate(text_lines(file_text(path)), start=1):
        if not raw.strip():
            continue
        where = f"{path.name}, line {n}"
        try:
            obj = json_loads(raw)
        except ValueError as exc:
            raise DatasetError(f"{where}: not valid JSON ({json_error(exc)})") from None
        if not isinstance(obj, dict):
            raise DatasetError(f"{where}: each line must be a JSON object")
        key = _text(obj.get("dialogue", obj.get("id")), where, "dialogue").strip()
        utterances = obj.get("utterances")
        if not key:
            raise DatasetError(f"{where}: needs a 'dialogue' id")
        if not isinstance(utterances, list) or not utterances:
            raise DatasetError(f"{where}: 'utterances' must be a non-empty list")
        records.append(
            DialogueRecord(
                key=key,
                utterances=[
                    _utterance(u, f"{where}, utterance {i}") for i, u in enumerate(utterances, 1)
                ],
                metadata=_json_object(obj.get("metadata"), where, "metadata"),
                where=where,
                **{f: text_clean(_text(obj.get(f), where, f)) for f in DIALOGUE_FIELDS},
            )
        )
    return _unique(records, path.name)


def write_jsonl(records: Iterable[DialogueRecord], path: Path) -> int:
    """Write one dialogue per line; return how many."""
    n = 0
    with path.open("w", encoding="utf-8") as handle:
        for r in records:
            handle.write(json.dumps(r.as_dict(), ensure_ascii=False) + "\n")
            n += 1
    return n


# --- CSV and Parquet: one utterance per row --------------------------------------------------


def records_rows(records: Iterable[DialogueRecord]) -> list[dict[str, Any]]:
    """Return one flat row per utterance (``ROW_COLUMNS``), JSON text for the dicts."""
    rows = []
    for r in records:
        for i, u in enumerate(r.utterances):
            rows.append(
                {
                    "dialogue": r.key,
                    "utterance_idx": i,
                    "speaker": u.speaker,
                    "text": u.text,
                    "label": u.label,
                    "worker": u.worker,
                    "annotations": json.dumps(u.annotations, ensure_ascii=False)
                    if u.annotations
                    else "",
                    **{f: getattr(r, f) for f in DIALOGUE_FIELDS},
                    "metadata": json.dumps(r.metadata, ensure_ascii=False) if r.metadata else "",
                }
            )
    return rows


def rows_records(rows: Iterable[tuple[str, Mapping[str, Any]]], name: str) -> list[DialogueRecord]:
    """Group (where, row) pairs into dialogues; refuse rows that contradict their dialogue."""
    dialogues: dict[str, DialogueRecord] = {}
    positions: dict[str, dict[int, UtteranceRecord]] = {}
    for where, row in rows:
        key = _text(row.get("dialogue"), where, "dialogue").strip()
        if not key:
            raise DatasetError(f"{where}: the 'dialogue' column is empty")
        fields = {f: text_clean(_text(row.get(f), where, f)) for f in DIALOGUE_FIELDS}
        metadata = _json_object(row.get("metadata"), where, "metadata")
        record = dialogues.get(key)
        if record is None:
            record = DialogueRecord(
                key=key, utterances=[], metadata=metadata, where=where, **fields
            )
            dialogues[key] = record
            positions[key] = {}
        else:
            for f, value in fields.items():
                if getattr(record, f) != value:
                    raise DatasetError(
                        f"{where}: {f} {value[:40]!r} differs from the dialogue's first row "
                        f"({record.where})"
                    )
        index = row.get("utterance_idx")
        turns = positions[key]
        if index is None or index == "" or (isinstance(index, float) and math.isnan(index)):
            position = len(turns)
        else:
            try:
                position = int(str(index).strip())
            except ValueError:
                raise DatasetError(f"{where}: utterance_idx {index!r} is not a number") from None
        if position in turns:
            raise DatasetError(f"{where}: utterance_idx {position} of {key!r} appears twice")
        turns[position] = _utterance(row, where)
    for key, record in dialogues.items():
        record.utterances = [positions[key][i] for i in sorted(positions[key])]
    return _unique(list(dialogues.values()), name)


def read_csv(path: Path) -> list[DialogueRecord]:
    """Read one utterance per row (a header with at least ``dialogue`` and ``text``)."""
    reader = csv.DictReader(io.StringIO(file_text(path), newline=""))
    header = reader.fieldnames or []
    missing = [c for c in ("dialogue", "text") if c not in header]
    if missing:
        raise DatasetError(f"{path.name}, line 1: missing column(s) {', '.join(missing)}")

    def rows() -> Iterable[tuple[str, Mapping[str, Any]]]:
        line = 1
        try:
            for row in reader:
                line = reader.line_num
                if None in row or None in row.values():
                    raise DatasetError(
                        f"{path.name}, line {line}: the row does not have the header's fields"
                    )
                yield f"{path.name}, line {line}", {k: cell_unsafe(v) for k, v in row.items()}
        except csv.Error as exc:
            raise DatasetError(f"{path.name}, line {line + 1}: {exc}") from None

    return rows_records(rows(), path.name)


def write_csv(records: Iterable[DialogueRecord], path: Path) -> int:
    """Write one utterance per row; return the number of dialogues."""
    records = list(records)
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=ROW_COLUMNS)
        writer.writeheader()
        writer.writerows({k: cell_safe(v) for k, v in row.items()} for row in records_rows(records))
    return len(records)


def read_parquet(path: Path) -> list[DialogueRecord]:
    """Read a Parquet file with the CSV format's columns, once ``parquet_check`` has bounded
    its rows and decoded size."""
    import pandas as pd

    parquet_check(path, path.name)
    try:
        frame = pd.read_parquet(path)
    except Exception as exc:  # pyarrow raises several types for a file that is not Parquet
        raise DatasetError(f"{path.name}: not a readable Parquet file ({exc})") from None
    missing = [c for c in ("dialogue", "text") if c not in frame.columns]
    if missing:
        raise DatasetError(f"{path.name}: missing column(s) {', '.join(missing)}")
    rows = frame.astype(object).where(frame.notna(), None).to_dict(orient="records")
    return rows_records(
        ((f"{path.name}, row {n}", row) for n, row in enumerate(rows, start=1)), path.name
    )


def write_parquet(records: Iterable[DialogueRecord], path: Path) -> int:
    """Write one utterance per row; return the number of dialogues."""
    import pandas as pd

    records = list(records)
    frame = pd.DataFrame(records_rows(records), columns=list(ROW_COLUMNS))
    frame["utterance_idx"] = frame["utterance_idx"].astype("int64")
    frame.to_parquet(path, index=False)
    return len(records)


# --- ParlAI's dialog text format -------------------------------------------------------------


# ParlAI's msg_to_str escapes tab as \t, newline as \n and the label separator | as __PIPE__,
# which alone is not reversible. We also escape the backslash (\\), carriage return (\r) and
# the first "_" of any "__PIPE" that would otherwise read back as a pipe (\_): in the text,
# "__PIPE__", or "__PIPE_" / "__PIPE" just before a "|" whose own "__PIPE__" completes it.
_PARLAI_ESCAPES = {"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r", "|": "__PIPE__", "_": "\\_"}
_PARLAI_UNESCAPES = {"\\": "\\", "t": "\t", "n": "\n", "r": "\r", "_": "_"}
_PARLAI_TO_ESCAPE = re.compile(r"[\\\t\n\r|]|_(?=_PIPE(?:__|_\||\|))")
_PARLAI_ESCAPED = re.compile(r"\\([\\tnr_])|__PIPE__")


def _parlai_escape(value: str) -> str:
    return _PARLAI_TO_ESCAPE.sub(lambda m: _PARLAI_ESCAPES[m.group(0)], value)


def _parlai_unescape(value: str) -> str:
    # The exact inverse of _parlai_escape, read left to right; a backslash before any other
    # character stays as it is, as in files ParlAI wrote (it leaves backslashes alone).
    return _PARLAI_ESCAPED.sub(
        lambda m: _PARLAI_UNESCAPES[m.group(1)] if m.group(1) else "|", value
    )


def _turn_fields(prefix: str, u: UtteranceRecord) -> list[tuple[str, str]]:
    fields = [(prefix, u.text), (f"{prefix}_speaker", u.speaker)]
    if u.label:
        fields.append((f"{prefix}_emotion", u.label))
    if u.worker:
        fields.append((f"{prefix}_worker", u.worker))
    if u.annotations:
        fields.append((f"{prefix}_annotations", json.dumps(u.annotations, ensure_ascii=False)))
    return fields


def write_parlai(records: Iterable[DialogueRecord], path: Path) -> int:
    """Write ParlAI episodes: turn 2k is ``text``, turn 2k+1 its ``labels``."""
    n = 0
    with path.open("w", encoding="utf-8") as handle:
        for r in records:
            turns = r.utterances
            for k in range(0, len(turns), 2):
                fields = _turn_fields("text", turns[k])
                if k + 1 < len(turns):
                    fields += _turn_fields("labels", turns[k + 1])
                if k == 0:
                    fields.append(("dialogue_id", r.key))
                    fields += [(f, getattr(r, f)) for f in DIALOGUE_FIELDS if getattr(r, f)]
                    if r.metadata:
                        fields.append(("metadata", json.dumps(r.metadata, ensure_ascii=False)))
                if k + 2 >= len(turns):
                    fields.append(("episode_done", "True"))
                handle.write("\t".join(f"{k_}:{_parlai_escape(v)}" for k_, v in fields) + "\n")
            n += 1
    return n


def _parlai_turn(fields: Mapping[str, str], prefix: str, where: str) -> UtteranceRecord:
    return _utterance(
        {
            "text": _parlai_unescape(fields[prefix]),
            "speaker": _parlai_unescape(fields.get(f"{prefix}_speaker", "")),
            "label": _parlai_unescape(fields.get(f"{prefix}_emotion", "")),
            "worker": _parlai_unescape(fields.get(f"{prefix}_worker", "")),
            "annotations": _parlai_unescape(fields.get(f"{prefix}_annotations", "")),
        },
        where,
    )


def read_parlai(path: Path) -> list[DialogueRecord]:
    """Read ParlAI episodes; a file without our extra fields gets keys ``episode-<n>``."""
    records: list[DialogueRecord] = []
    current: DialogueRecord | None = None
    for n, raw in enumerate(text_lines(file_text(path)), start=1):
        if not raw.strip():
            continue
        where = f"{path.name}, line {n}"
        fields: dict[str, str] = {}
        for part in raw.split("\t"):
            name, sep, value = part.partition(":")
            if not sep or not name:
                raise DatasetError(f"{where}: {part[:40]!r} is not a field:value pair")
            fields[name] = value
        if "text" not in fields:
            raise DatasetError(f"{where}: every line needs a 'text' field")
        if "|" in fields.get("labels", ""):
            raise DatasetError(f"{where}: several 'labels' candidates; a dialogue has one reply")
        if current is None:
            key = _parlai_unescape(fields.get("dialogue_id", "")) or f"episode-{len(records) + 1}"
            current = DialogueRecord(
                key=key,
                utterances=[],
                metadata=_json_object(
                    _parlai_unescape(fields.get("metadata", "")), where, "metadata"
                ),
                where=where,
                **{f: _parlai_unescape(fields.get(f, "")) for f in DIALOGUE_FIELDS},
            )
        current.utterances.append(_parlai_turn(fields, "text", where))
        if "labels" in fields:
            current.utterances.append(_parlai_turn(fields, "labels", where))
        done = fields.get("episode_done", "").strip().lower()
        if done not in ("", "true", "false"):
            raise DatasetError(f"{where}: episode_done must be True or False")
        if done == "true":
            records.append(current)
            current = None
    if current is not None:
        raise DatasetError(f"{path.name}: the last episode has no line with episode_done:True")
    return _unique(records, path.name)
