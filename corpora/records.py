"""The record types every reader produces: dialogues of utterances, and contexts.

Readers turn a file into ``DialogueRecord``s (or raise ``DatasetError`` naming the line);
``annotation.services.datasets`` stores them in one transaction; writers turn records back into
files. A context set reads into ``Context``s, from which items are built. A leaf: pure Python,
no ORM, no import from the project, so protocols may use these types freely.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

# EmotionLines' seven labels in the order of its vote-count strings ("4100000").
EMOTIONLINES_LABELS: tuple[str, ...] = (
    "neutral",
    "joy",
    "sadness",
    "fear",
    "anger",
    "surprise",
    "disgust",
)
EMOCONTEXT_LABELS: tuple[str, ...] = ("happy", "sad", "angry", "others")
SPLIT_NAMES = {"train": "train", "dev": "valid", "valid": "valid", "val": "valid", "test": "test"}


class DatasetError(ValueError):
    """A data set file that cannot be imported; the message names the file and line."""


class CorpusError(DatasetError):
    """A context set, responses or items file that cannot be read; the message names the line."""


@dataclass
class UtteranceRecord:
    """One turn: who said it, the text, its label (if any) and source annotations."""

    speaker: str
    text: str
    label: str = ""
    annotations: dict[str, Any] = field(default_factory=dict)
    worker: str = ""  # a pseudonym on export; never a provider id

    def as_dict(self) -> dict[str, Any]:
        return {
            "speaker": self.speaker,
            "text": self.text,
            "label": self.label,
            "annotations": self.annotations,
            "worker": self.worker,
        }


@dataclass
class DialogueRecord:
    """One dialogue as read from or written to a file."""

    key: str
    utterances: list[UtteranceRecord]
    source: str = ""
    split: str = ""
    emotion: str = ""
    situation: str = ""
    situation_author: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    where: str = ""  # "file, line N": where the record started, for error messages

    def as_dict(self) -> dict[str, Any]:
        return {
            "dialogue": self.key,
            "source": self.source,
            "split": self.split,
            "emotion": self.emotion,
            "situation": self.situation,
            "situation_author": self.situation_author,
            "metadata": self.metadata,
            "utterances": [u.as_dict() for u in self.utterances],
        }


@dataclass(frozen=True)
class Context:
    """A fixed dialogue context to send to models: its key, 1–3 turns, maybe the human reply."""

    key: str
    turns: tuple[str, ...]
    reference: str | None = None


# Windows-1252 characters that some corpora carry as C1 control characters (EmotionLines'
# "company\u0092s"): decoding them as cp1252 gives the intended punctuation.
_C1 = {c: bytes([c]).decode("cp1252", errors="ignore") or None for c in range(0x80, 0xA0)}


def text_clean(text: str) -> str:
    """Return ``text`` with cp1252 punctuation stored as C1 controls fixed, and stripped."""
    if any(0x80 <= ord(ch) < 0xA0 for ch in text):
        text = text.translate(_C1)
    return text.strip()


def split_from_name(name: str) -> str:
    """Return train/valid/test when a file name says so (``friends_dev.json`` → valid)."""
    stem = name.lower().rsplit(".", 1)[0]
    for part in reversed(stem.replace("-", "_").split("_")):
        if part in SPLIT_NAMES:
            return SPLIT_NAMES[part]
    return ""


class Lines:
    """Turn character offsets of one text into 1-based line numbers (bisecting newlines)."""

    def __init__(self, text: str) -> None:
        self._newlines = [m.start() for m in re.finditer("\n", text)]

    def of(self, offset: int) -> int:
        return bisect.bisect_left(self._newlines, offset) + 1


def labels_paired(
    gold: Sequence[DialogueRecord], predicted: Sequence[DialogueRecord], *, last_turn: bool
) -> tuple[list[str], list[str]]:
    """Return the gold and predicted labels of the same utterances, matched by dialogue key
    and position (``last_turn``: only each dialogue's last turn, EmoContext's item).

    Raise ValueError naming the first gold dialogue or utterance the predictions miss, or a
    predicted dialogue not in the gold set; unlabeled gold utterances are not scored.
    """
    by_key = {r.key: r for r in predicted}
    unknown = sorted(set(by_key) - {r.key for r in gold})
    if unknown:
        raise ValueError(f"the predictions name dialogue {unknown[0]!r}, not in the gold set")
    g: list[str] = []
    p: list[str] = []
    for record in gold:
        guess = by_key.get(record.key)
        if guess is None:
            raise ValueError(f"no prediction for dialogue {record.key!r}")
        positions = [len(record.utterances) - 1] if last_turn else range(len(record.utterances))
        for i in positions:
            label = record.utterances[i].label
            if not label:
                continue
            if i >= len(guess.utterances) or not guess.utterances[i].label:
                raise ValueError(f"no predicted label for dialogue {record.key!r}, line {i + 1}")
            g.append(label)
            p.append(guess.utterances[i].label)
    if not g:
        raise ValueError("the gold set has no labeled utterances to score")
    return g, p
