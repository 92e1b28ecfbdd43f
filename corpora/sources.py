"""Readers of the published emotion-dialogue corpora, each in its released format.

- ``ed``: EmpatheticDialogues CSV (conv_id, utterance_idx, context, prompt, speaker_idx,
  utterance, selfeval, tags; commas inside fields written as ``_comma_``);
- ``emotionlines``: EmotionLines / EmotionX JSON (a list of dialogues, each a list of
  ``{speaker, utterance, emotion, annotation}``; ``annotation`` is the 5 workers' vote counts in
  the order neutral, joy, sadness, fear, anger, surprise, disgust);
- ``meld``: MELD CSV (Sr No., Utterance, Speaker, Emotion, Sentiment, Dialogue_ID,
  Utterance_ID, Season, Episode, StartTime, EndTime);
- ``emocontext``: SemEval-2019 Task 3 TSV (id, turn1, turn2, turn3, label);
- ``meena``: Meena's released conversation logs (Adiwardana et al. 2020: meena.txt,
  human.txt, mitsuku.txt …): blocks "<System> Conversation N" then "Speaker: text" lines,
  separated by blank lines.

Each reader returns ``DialogueRecord``s or raises ``DatasetError`` naming the file, the line
and what is wrong; a reader never returns part of a file.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from corpora.limits import file_bytes
from corpora.records import (
    EMOCONTEXT_LABELS,
    EMOTIONLINES_LABELS,
    DatasetError,
    DialogueRecord,
    Lines,
    UtteranceRecord,
    split_from_name,
    text_clean,
)

ED_COLUMNS = ("conv_id", "utterance_idx", "context", "prompt", "speaker_idx", "utterance")
MELD_COLUMNS = ("Utterance", "Speaker", "Emotion", "Dialogue_ID", "Utterance_ID")
MELD_EXTRA = ("Sr No.", "Sentiment", "Season", "Episode", "StartTime", "EndTime")


def file_text(path: Path) -> str:
    """Return a text file's content: UTF-8 (a BOM is dropped), else Windows-1252.

    Some corpus releases mix encodings (MELD's curly quotes); a file that is not valid UTF-8 is
    read as cp1252, which decodes every byte, rather than refused or garbled silently. A file
    over ``limits.FILES`` is refused before it is decoded.
    """
    data = file_bytes(path, str(path))
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace")


def text_lines(text: str) -> list[str]:
    """Split a file's text into lines at ``\n`` (a ``\r`` before it is dropped) and nowhere else.

    ``str.splitlines`` also splits at U+2028, U+0085, ``\x0b``, ``\x0c`` and others, which
    may stand inside a field; line numbers count ``\n`` as editors and ``Lines`` do.
    """
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def json_loads(text: str) -> Any:
    """Decode JSON, refusing NaN and Infinity; every failure is a ``ValueError``.

    Besides ``JSONDecodeError``, ``json`` raises ``ValueError`` for an integer past Python's
    digit limit and ``RecursionError`` for deep nesting.
    """
    try:
        return json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def json_error(exc: ValueError) -> str:
    """Return what is wrong with JSON that ``json_loads`` refused, for a message."""
    return exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)


def is_digits(value: str) -> bool:
    """Return whether ``value`` is ASCII digits only (``str.isdigit`` accepts ``²``, ``٣``)."""
    return value.isascii() and value.isdigit()


def _key(prefix: str, key: str) -> str:
    return f"{prefix}/{key}" if prefix else key


# --- EmpatheticDialogues ---------------------------------------------------------------------


def _ed_text(value: str) -> str:
    # The released ED CSV writes commas inside fields as "_comma_".
    return value.replace("_comma_", ",").strip()


def read_ed(path: Path) -> list[DialogueRecord]:
    """Read an EmpatheticDialogues CSV (Rashkin et al. 2019) in file order: the situation's
    author is the first speaker."""
    split = split_from_name(path.name)
    return [
        DialogueRecord(
            key=conv,
            utterances=[UtteranceRecord(speaker=s, text=text_clean(t)) for s, t in d["turns"]],
            split=split,
            emotion=d["emotion"],
            situation=text_clean(d["situation"]),
            situation_author=d["turns"][0][0],
            where=f"{path.name}, dialogue {conv}",
        )
        for conv, d in _ed_dialogues(path).items()
    ]


def _ed_dialogues(path: Path) -> dict[str, dict[str, Any]]:
    """Return conv_id → emotion, situation and (speaker, text) turns, checked line by line."""
    data = file_bytes(path, str(path))
    with io.TextIOWrapper(io.BytesIO(data), encoding="utf-8-sig", newline="") as handle:
        reader = csv.reader(handle)
        try:
            header = next(reader)
        except StopIteration:
            raise DatasetError(f"{path}: the file is empty") from None
        except (csv.Error, UnicodeDecodeError) as exc:
            raise DatasetError(f"{path}, line 1: {exc}") from None
        missing = [c for c in ED_COLUMNS if c not in header]
        if missing:
            raise DatasetError(f"{path}, line 1: missing column(s) {', '.join(missing)}")
        index = {c: header.index(c) for c in ED_COLUMNS}
        dialogues: dict[str, dict[str, Any]] = {}
        line = 1
        try:
            for line, row in enumerate(reader, start=2):
                if len(row) < len(header):
                    raise DatasetError(
                        f"{path}, line {line}: {len(row)} fields, expected {len(header)}"
                    )
                conv = row[index["conv_id"]].strip()
                try:
                    position = int(row[index["utterance_idx"]])
                except ValueError:
                    raise DatasetError(
                        f"{path}, line {line}: utterance_idx is not a number"
                    ) from None
                text = _ed_text(row[index["utterance"]])
                if not conv or not text:
                    raise DatasetError(f"{path}, line {line}: empty conv_id or utterance")
                d = dialogues.setdefault(
                    conv,
                    {
                        "emotion": row[index["context"]].strip(),
                        "situation": _ed_text(row[index["prompt"]]),
                        "turns": [],
                    },
                )
                if position != len(d["turns"]) + 1:
                    raise DatasetError(
                        f"{path}, line {line}: utterance_idx {position} of {conv} is out of order"
                    )
                d["turns"].append((row[index["speaker_idx"]].strip(), text))
        except (csv.Error, UnicodeDecodeError) as exc:
            raise DatasetError(f"{path}, line {line + 1}: {exc}") from None
    if not dialogues:
        raise DatasetError(f"{path}: no dialogues")
    return dialogues


# --- EmotionLines ----------------------------------------------------------------------------


def _json_array(
    text: str, pos: int, where: str, lines: Lines, *, whole: bool = False
) -> Iterator[tuple[int, Any]]:
    """Yield (offset, value) for each element of the JSON array starting at ``pos``.

    Elements are decoded one at a time so that an error can name the line of the element.
    With ``whole``, the array must be all of ``text``: anything but white space after its
    closing ``]`` is refused.
    """
    decoder = json.JSONDecoder(parse_constant=_no_constant)
    n = len(text)

    def skip(i: int) -> int:
        while i < n and text[i] in " \t\r\n":
            i += 1
        return i

    pos = skip(pos)
    if pos >= n or text[pos] != "[":
        raise DatasetError(f"{where}, line {lines.of(pos)}: expected a JSON list '['")
    pos = skip(pos + 1)
    if pos < n and text[pos] == "]":
        _json_array_end(text, skip(pos + 1), where, lines, whole)
        return
    while True:
        try:
            value, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{where}, line {exc.lineno}: not valid JSON ({exc.msg})") from None
        except (ValueError, RecursionError) as exc:  # a huge integer, NaN, deep nesting
            message = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
            raise DatasetError(
                f"{where}, line {lines.of(pos)}: not valid JSON ({message})"
            ) from None
        yield pos, value
        pos = skip(end)
        if pos < n and text[pos] == ",":
            pos = skip(pos + 1)
            continue
        if pos < n and text[pos] == "]":
            _json_array_end(text, skip(pos + 1), where, lines, whole)
            return
        raise DatasetError(f"{where}, line {lines.of(pos)}: expected ',' or ']'")


def _json_array_end(text: str, pos: int, where: str, lines: Lines, whole: bool) -> None:
    if whole and pos < len(text):
        raise DatasetError(
            f"{where}, line {lines.of(pos)}: unexpected text after the closing ']' of the "
            f"JSON list (trailing data: {text[pos : pos + 20]!r})"
        )


def read_emotionlines(path: Path, *, source: str = "") -> list[DialogueRecord]:
    """Read an EmotionLines JSON file; keys are ``<split>/<n>`` (n counts from 1)."""
    text = file_text(path)
    split = split_from_name(path.name)
    prefix = split or path.stem
    labels = set(EMOTIONLINES_LABELS) | {"non-neutral"}
    records = []
    lines = Lines(text)
    dialogues = _json_array(text, 0, path.name, lines, whole=True)
    for n, (offset, dialogue) in enumerate(dialogues, start=1):
        where = f"{path.name}, line {lines.of(offset)} (dialogue {n})"
        if not isinstance(dialogue, list) or not dialogue:
            raise DatasetError(f"{where}: a dialogue must be a non-empty list of utterances")
        utterances = []
        # Re-scan this dialogue's elements for their own lines.
        for m, (u_offset, u) in enumerate(_json_array(text, offset, path.name, lines), start=1):
            u_where = f"{path.name}, line {lines.of(u_offset)} (dialogue {n}, utterance {m})"
            utterances.append(_emotionlines_utterance(u, labels, u_where))
        records.append(
            DialogueRecord(
                key=_key(prefix, str(n)),
                utterances=utterances,
                source=source,
                split=split,
                where=where,
            )
        )
    if not records:
        raise DatasetError(f"{path.name}: no dialogues")
    return records


def _emotionlines_utterance(u: Any, labels: set[str], where: str) -> UtteranceRecord:
    if not isinstance(u, dict):
        raise DatasetError(f"{where}: an utterance must be an object")
    missing = [k for k in ("speaker", "utterance", "emotion") if k not in u]
    if missing:
        raise DatasetError(f"{where}: missing field(s) {', '.join(missing)}")
    speaker, utterance, emotion = u["speaker"], u["utterance"], u["emotion"]
    for name, value in (("speaker", speaker), ("utterance", utterance), ("emotion", emotion)):
        if not isinstance(value, str):
            raise DatasetError(
                f"{where}: {name!r} must be text, got {_json_type(value)} {_short(value)}"
            )
    if not utterance.strip():
        raise DatasetError(f"{where}: the utterance is empty")
    if emotion not in labels:
        raise DatasetError(
            f"{where}: unknown emotion {str(emotion)[:30]!r}; expected one of "
            f"{', '.join(EMOTIONLINES_LABELS)} or non-neutral"
        )
    annotations: dict[str, Any] = {}
    votes = u.get("annotation")
    if votes is not None:
        if not (isinstance(votes, str) and len(votes) == 7 and is_digits(votes)):
            raise DatasetError(
                f"{where}: 'annotation' must be 7 digits of vote counts "
                f"(neutral … disgust), got {_json_type(votes)} {_short(votes)}"
            )
        annotations["votes"] = dict(zip(EMOTIONLINES_LABELS, map(int, votes), strict=True))
    return UtteranceRecord(
        speaker=text_clean(speaker),
        text=text_clean(utterance),
        label=emotion,
        annotations=annotations,
    )


def _json_type(value: Any) -> str:
    names = {str: "text", bool: "true/false", int: "a number", float: "a number"}
    if value is None:
        return "null"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return names.get(type(value), type(value).__name__)


def _short(value: Any) -> str:
    return repr(json.dumps(value, ensure_ascii=False)[:30])


# --- MELD -------------------------------------------------------------------------------------


def read_meld(path: Path, *, source: str = "Friends") -> list[DialogueRecord]:
    """Read a MELD CSV; utterances are ordered by Utterance_ID (MELD has gaps, kept as ids)."""
    text = file_text(path)
    split = split_from_name(path.name)
    prefix = split or path.stem
    reader = csv.DictReader(io.StringIO(text, newline=""))
    header = reader.fieldnames or []
    missing = [c for c in MELD_COLUMNS if c not in header]
    if missing:
        raise DatasetError(f"{path.name}, line 1: missing column(s) {', '.join(missing)}")
    labels = set(EMOTIONLINES_LABELS)
    by_dialogue: dict[str, dict[int, tuple[str, UtteranceRecord]]] = {}
    line = 1
    try:
        for row in reader:
            line = reader.line_num
            where = f"{path.name}, line {line}"
            if None in row or any(row[c] is None for c in header):
                raise DatasetError(
                    f"{where}: the row does not have the header's {len(header)} fields"
                )
            dialogue_id, utterance_id = row["Dialogue_ID"].strip(), row["Utterance_ID"].strip()
            if not is_digits(dialogue_id) or not is_digits(utterance_id):
                raise DatasetError(f"{where}: Dialogue_ID and Utterance_ID must be whole numbers")
            emotion = row["Emotion"].strip().lower()
            if emotion not in labels:
                raise DatasetError(f"{where}: unknown Emotion {row['Emotion'][:30]!r}")
            utterance = text_clean(row["Utterance"])
            if not utterance:
                raise DatasetError(f"{where}: the utterance is empty")
            turns = by_dialogue.setdefault(dialogue_id, {})
            if int(utterance_id) in turns:
                raise DatasetError(
                    f"{where}: Utterance_ID {utterance_id} of dialogue {dialogue_id} appears twice"
                )
            extra = {c.strip(): row[c].strip() for c in MELD_EXTRA if c in row}
            extra["utterance_id"] = int(utterance_id)
            turns[int(utterance_id)] = (
                where,
                UtteranceRecord(
                    speaker=text_clean(row["Speaker"]),
                    text=utterance,
                    label=emotion,
                    annotations=extra,
                ),
            )
    except csv.Error as exc:
        raise DatasetError(f"{path.name}, line {line + 1}: {exc}") from None
    if not by_dialogue:
        raise DatasetError(f"{path.name}: no utterances")
    return [
        DialogueRecord(
            key=_key(prefix, dialogue_id),
            utterances=[turns[i][1] for i in sorted(turns)],
            source=source,
            split=split,
            where=turns[min(turns)][0],
        )
        for dialogue_id, turns in by_dialogue.items()
    ]


# --- EmoContext -------------------------------------------------------------------------------


def read_emocontext(path: Path) -> list[DialogueRecord]:
    """Read an EmoContext TSV; the label (when the file has one) is the last turn's."""
    text = file_text(path)
    lines = text_lines(text)
    if not lines:
        raise DatasetError(f"{path.name}: the file is empty")
    header = [h.strip() for h in lines[0].split("\t")]
    needed = ["id", "turn1", "turn2", "turn3"]
    if header[:4] != needed or len(header) > 5 or (len(header) == 5 and header[4] != "label"):
        raise DatasetError(
            f"{path.name}, line 1: the header must be id, turn1, turn2, turn3[, label] "
            f"separated by tabs; got {', '.join(header)[:80]}"
        )
    has_label = len(header) == 5
    split = split_from_name(path.name)
    records: list[DialogueRecord] = []
    seen: set[str] = set()
    for n, raw in enumerate(lines[1:], start=2):
        if not raw.strip():
            continue
        where = f"{path.name}, line {n}"
        fields = raw.split("\t")
        if len(fields) != len(header):
            raise DatasetError(
                f"{where}: {len(fields)} tab-separated fields, expected {len(header)}"
            )
        key = fields[0].strip()
        turns = [text_clean(t) for t in fields[1:4]]
        if not key or not all(turns):
            raise DatasetError(f"{where}: empty id or turn")
        if key in seen:
            raise DatasetError(f"{where}: the id {key!r} appears twice")
        seen.add(key)
        label = fields[4].strip().lower() if has_label else ""
        if has_label and label not in EMOCONTEXT_LABELS:
            raise DatasetError(
                f"{where}: unknown label {fields[4][:20]!r}; use {', '.join(EMOCONTEXT_LABELS)}"
            )
        speakers = ("user", "agent", "user")
        utterances = [
            UtteranceRecord(speaker=s, text=t) for s, t in zip(speakers, turns, strict=True)
        ]
        utterances[-1].label = label
        records.append(
            DialogueRecord(key=key, utterances=utterances, split=split, emotion=label, where=where)
        )
    if not records:
        raise DatasetError(f"{path.name}: no dialogues")
    return records


_MEENA_HEADER = re.compile(r"([A-Za-z][A-Za-z0-9]*) Conversation ([0-9]+)")
_MEENA_TURN = re.compile(r"([A-Za-z][A-Za-z0-9]*(?: [0-9]+)?): (.*)")


def read_meena(path: Path) -> list[DialogueRecord]:
    """Read Meena-style conversation logs: one dialogue per "<System> Conversation N" block.

    The key is ``<system>-<N>`` (lower case), the source the system ("Meena", "Mitsuku",
    "Human" for human–human logs), speakers as written ("Human", "Meena", "Human 1"). The
    released placeholders (``<REDACTED_TERM>``) stay as they are.
    """
    records: list[DialogueRecord] = []
    current: DialogueRecord | None = None
    for n, raw in enumerate(text_lines(file_text(path)), start=1):
        line = raw.strip()
        where = f"{path.name}, line {n}"
        if not line:
            current = None  # a blank line ends a conversation
            continue
        header = _MEENA_HEADER.fullmatch(line)
        if header:
            system, number = header.groups()
            current = DialogueRecord(
                key=f"{system.lower()}-{int(number)}",
                utterances=[],
                source=system,
                metadata={"system": system, "conversation": int(number)},
                where=where,
            )
            records.append(current)
            continue
        turn = _MEENA_TURN.fullmatch(line)
        if current is None:
            raise DatasetError(f"{where}: expected a header like 'Meena Conversation 1'")
        if turn is None or not turn.group(2).strip():
            raise DatasetError(f"{where}: expected 'Speaker: text', got {line[:40]!r}")
        speaker, text = turn.groups()
        current.utterances.append(UtteranceRecord(speaker=speaker, text=text_clean(text)))
    if not records:
        raise DatasetError(f"{path.name}: no conversations")
    seen: set[str] = set()
    for record in records:
        if not record.utterances:
            raise DatasetError(f"{record.where}: the conversation has no turns")
        if record.key in seen:
            raise DatasetError(f"{record.where}: {record.key!r} appears twice")
        seen.add(record.key)
    return records
