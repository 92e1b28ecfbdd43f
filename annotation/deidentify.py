"""De-identification of private chat logs before labeling (PROTOCOLS.md §4, EmotionLines).

Emails, URLs, phone numbers and @handles are found by pattern; person and location names come
from a supplied list (a names file) and, optionally, from the dialogue's own speaker names.
Each is replaced by its type and an index, ``person_1``, ``location_2``, ``email_1``, the same
original getting the same replacement throughout one dialogue (and a new numbering in the
next); a dialogue's situation (ED's prompt) shares its dialogue's numbering. The replacements
are returned so a reviewer can check them. Pure Python, no ORM.

No statistical name detector ships offline with the platform's dependencies, so names not on
the list are not caught: build the list from the source's speaker and contact names.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ENTITY_TYPES = ("person", "location", "organization")
SITUATION = "situation"  # Replacement.utterance of a span in the dialogue's situation

# Not phone numbers: dates (1990-05-12, 12/05/1990, 12.05.1990) and year ranges (1990-2000).
_NOT_PHONE = (
    r"(?:\d{4}[-./]\d{1,2}[-./]\d{1,2}|\d{1,2}[-./]\d{1,2}[-./]\d{4}|(?:19|20)\d\d-(?:19|20)\d\d)"
    r"(?!\d)"
)
# A group of digits: 2-5, or 1-5 in brackets (an area code, "(0)"), never the start of a date.
_PHONE_GROUP = rf"(?!{_NOT_PHONE})(?:\(\d{{1,5}}\)|\d{{2,5}})"
# An optional +country code, then groups with at most one space, dot or dash between them (so
# "3 - 2 - 1 - 0" is not a number); at least _PHONE_DIGITS digits in all.
_PHONE = rf"(?<![\w+./-])(?:\+\d{{1,3}}|{_PHONE_GROUP})(?:[ .-]?{_PHONE_GROUP}){{1,6}}(?!\w)"
_PHONE_DIGITS = 7

# Order matters: an email contains an @handle and a URL may contain digits like a phone number.
# Every repetition is bounded (RFC 5321's 64-character local part and 63-character labels), so
# each start position scans a bounded stretch: a long run like "1-1-1-…" costs linear time,
# not quadratic.
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("email", re.compile(r"\b[\w.+-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63}){1,8}\b")),
    (
        "url",
        re.compile(
            r"\b(?:https?://|www\.)[^\s<>\"']+[^\s<>\"'.,;:!?)]"
            r"|\b[a-z0-9-]{1,63}(?:\.[a-z0-9-]{1,63}){0,8}\.(?:com|org|net|edu|gov|io|tw|uk|de)"
            r"(?:/[^\s]*)?\b",
            re.IGNORECASE,
        ),
    ),
    ("phone", re.compile(_PHONE)),
    ("handle", re.compile(r"(?<![\w@])@[A-Za-z_][\w.]{1,30}\w")),
)


@dataclass(frozen=True)
class Replacement:
    """One replaced span: where, what it was, its type and what replaced it."""

    utterance: int | str  # the utterance's index; -1: a speaker name; SITUATION: the situation
    kind: str
    original: str
    replacement: str

    def as_dict(self) -> dict[str, object]:
        return {
            "utterance": self.utterance,
            "type": self.kind,
            "original": self.original,
            "replacement": self.replacement,
        }


@dataclass(frozen=True)
class Deidentified:
    """One dialogue de-identified: its texts, speakers and situation, and what was replaced."""

    texts: list[str]
    speakers: list[str]
    situation: str
    replacements: list[Replacement]


def names_read(path: Path) -> dict[str, str]:
    """Read a names file: one name per line, optionally ``<TAB>person|location|organization``.

    Lines starting with ``#`` are comments; a name without a type is a person. Raise
    ValueError naming the line of an unknown type.
    """
    names: dict[str, str] = {}
    for n, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name, _, kind = line.partition("\t")
        kind = kind.strip().lower() or "person"
        if kind not in ENTITY_TYPES:
            raise ValueError(
                f"{path.name}, line {n}: unknown type {kind!r}; use {', '.join(ENTITY_TYPES)}"
            )
        if name.strip():
            names[name.strip()] = kind
    return names


@dataclass
class Deidentifier:
    """Replace identifying spans in one dialogue at a time."""

    names: Mapping[str, str] = field(default_factory=dict)  # name → entity type
    speakers_are_persons: bool = False

    def dialogue(
        self, texts: Sequence[str], speakers: Sequence[str] = ()
    ) -> tuple[list[str], list[str], list[Replacement]]:
        """Return the dialogue's texts and speakers de-identified, and what was replaced."""
        done = self.conversation(texts, speakers)
        return done.texts, done.speakers, done.replacements

    def conversation(
        self, texts: Sequence[str], speakers: Sequence[str] = (), *, situation: str = ""
    ) -> Deidentified:
        """De-identify a dialogue with its situation, numbering both as one.

        Speaker names are numbered first, then the situation (written before the dialogue),
        then the utterances in order.
        """
        tokens = _Tokens()
        names = dict(self.names)
        if self.speakers_are_persons:
            names.update({s: "person" for s in speakers if s.strip()} | dict(self.names))
        patterns = list(_PATTERNS)
        name_pattern = _names_pattern(names)
        if name_pattern is not None:
            patterns.append(("name", name_pattern))
        lower_names = {k.lower(): v for k, v in names.items()}

        def replace(where: int | str, text: str) -> str:
            out, last = [], 0
            for start, end, kind, original in _spans(text, patterns, lower_names):
                new = tokens.token(kind, original)
                tokens.replacements.append(Replacement(where, kind, original, new))
                out += [text[last:start], new]
                last = end
            out.append(text[last:])
            return "".join(out)

        new_speakers = []
        for s in speakers:
            kind = lower_names.get(s.strip().lower())
            if kind:
                new = tokens.token(kind, s.strip())
                tokens.replacements.append(Replacement(-1, kind, s, new))
                new_speakers.append(new)
            else:
                new_speakers.append(s)
        new_situation = replace(SITUATION, situation) if situation else situation
        new_texts = [replace(i, text) for i, text in enumerate(texts)]
        return Deidentified(new_texts, new_speakers, new_situation, tokens.replacements)


@dataclass
class _Tokens:
    """One conversation's placeholders and what they replaced: an original always gets the
    same one (entity types case-insensitively), numbered per kind in order of appearance."""

    table: dict[tuple[str, str], str] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    replacements: list[Replacement] = field(default_factory=list)

    def token(self, kind: str, original: str) -> str:
        """Return the placeholder of ``original`` as a ``kind``: ``person_1``, ``url_2``, …"""
        key = (kind, original.lower() if kind in ENTITY_TYPES else original)
        if key not in self.table:
            self.counts[kind] = self.counts.get(kind, 0) + 1
            self.table[key] = f"{kind}_{self.counts[kind]}"
        return self.table[key]


def _spans(
    text: str, patterns: list[tuple[str, re.Pattern[str]]], lower_names: Mapping[str, str]
) -> list[tuple[int, int, str, str]]:
    """Return the identifying spans of ``text`` (start, end, kind, original) in order; where
    matches overlap, the earlier pattern wins. A listed name's kind is the one listed."""
    found: list[tuple[int, int, str, str]] = []
    taken = [False] * len(text)
    for kind, pattern in patterns:
        for m in pattern.finditer(text):
            if any(taken[m.start() : m.end()]) or not _accept(kind, m.group(0)):
                continue
            original = m.group(0)
            real_kind = lower_names[original.lower()] if kind == "name" else kind
            found.append((m.start(), m.end(), real_kind, original))
            taken[m.start() : m.end()] = [True] * (m.end() - m.start())
    found.sort()
    return found


def _accept(kind: str, span: str) -> bool:
    """Return whether a pattern's match is one (a phone number needs enough digits)."""
    return kind != "phone" or sum(c.isdigit() for c in span) >= _PHONE_DIGITS


def _names_pattern(names: Iterable[str]) -> re.Pattern[str] | None:
    """Match any of the names as whole words, case-insensitively, longest first."""
    words = sorted({n.strip() for n in names if n.strip()}, key=len, reverse=True)
    if not words:
        return None
    return re.compile(
        r"(?<!\w)(?:" + "|".join(re.escape(w) for w in words) + r")(?!\w)", re.IGNORECASE
    )
