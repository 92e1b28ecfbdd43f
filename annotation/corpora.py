"""Readers of dialogue corpora in their published formats (the demo's; the import issue
adds the rest). A malformed file is refused whole, naming the line and what is wrong."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

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


def _ed_text(value: str) -> str:
    # The released ED CSV writes commas inside fields as "_comma_".
    return value.replace("_comma_", ",").strip()


def read_empathetic_dialogues(path: Path) -> list[Dialogue]:
    """Read an EmpatheticDialogues CSV (Rashkin et al. 2019) into dialogues, in file order."""
    try:
        handle = path.open(encoding="utf-8", newline="")
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
