"""De-identification of private chat logs before labeling (PROTOCOLS.md §4, EmotionLines).

Emails, URLs, IBANs, dates of birth, phone numbers and @handles are found by pattern; person
and location names come from a supplied list (a names file) and, optionally, from the
dialogue's own speaker names. Each is replaced by its type and an index, ``person_1``,
``location_2``, ``email_1``, the same original getting the same replacement throughout one
dialogue (and a new numbering in the next); a dialogue's situation (ED's prompt) shares its
dialogue's numbering. The replacements are returned so a reviewer can check them. Pure Python,
no ORM.

Maintained data where it exists and stays light (docs/datasets.md says what was measured and
why phonenumbers and presidio-analyzer were not taken): a bare domain counts when its last
label is a top-level domain of the public-suffix list bundled with ``tld`` (read offline, never
fetched); an IBAN when its ISO 13616 mod-97 checksum holds; listed names are found by one
Aho–Corasick automaton (``pyahocorasick``) per names list, which returns the same hits as one
regex alternation of all names at a fraction of its cost on long lists.

No statistical name detector ships offline with the platform's dependencies, so names not on
the list are not caught: build the list from the source's speaker and contact names.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import ahocorasick
from tld import is_tld

ENTITY_TYPES = ("person", "location", "organization")
SITUATION = "situation"  # Replacement.utterance of a span in the dialogue's situation

# Not phone numbers: dates (1990-05-12, 12/05/1990, 12.05.1990) and year ranges (1990-2000).
_NOT_PHONE = (
    r"(?:\d{4}[-./]\d{1,2}[-./]\d{1,2}|\d{1,2}[-./]\d{1,2}[-./]\d{4}|(?:19|20)\d\d-(?:19|20)\d\d)"
    r"(?!\d)"
)
# A group of digits: 2-5, or 1-5 in brackets (an area code, "(0)"), never the start of a date.
_PHONE_GROUP = rf"(?!{_NOT_PHONE})(?:\(\d{{1,5}}\)|\d{{2,5}})"
# An optional +country code (with a one-digit area code: "+33 1", "+61 2"), then groups with
# at most one space, dot or dash between them (so "3 - 2 - 1 - 0" is not a number); at least
# _PHONE_DIGITS digits in all.
_PHONE = (
    rf"(?<![\w+./-])(?:\+\d{{1,3}}(?:[ .-]?\d(?!\d))?|{_PHONE_GROUP})"
    rf"(?:[ .-]?{_PHONE_GROUP}){{1,6}}(?!\w)"
)
_PHONE_DIGITS = 7

# A date of birth is a day and a month (a year alone identifies no one) written within a few
# words after "born", "birthday", "b-day", "DOB" or "date of birth", in the same sentence. Only
# the date is replaced; a date elsewhere is left alone (conservative: most dates in chats are
# not birthdays).
_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
)
_DAY = r"\d{1,2}(?:st|nd|rd|th)?"
_DATE = (
    rf"\d{{4}}[-./]\d{{1,2}}[-./]\d{{1,2}}|\d{{1,2}}[-./]\d{{1,2}}[-./](?:\d{{4}}|\d{{2}})"
    rf"|{_DAY}(?: of)? {_MONTH},?(?: \d{{4}})?|{_MONTH} {_DAY}(?:,? \d{{4}})?"
)
_DOB = (
    r"\b(?:born|birthday|b-?day|dob|date of birth)\b[^\d.!?\n]{0,20}?"
    rf"\b(?P<span>{_DATE})(?![\d\w])"
)

# An IBAN: country, check digits, then up to 30 letters or digits, in groups of 4 or not.
_IBAN = r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?\b"

# Order matters: an email contains an @handle and a URL may contain digits like a phone number.
# Every repetition is bounded (RFC 5321's 64-character local part and 63-character labels), so
# each start position scans a bounded stretch: a long run like "1-1-1-…" costs linear time,
# not quadratic. A pattern with a ``span`` group replaces that group only.
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("email", re.compile(r"\b[\w.+-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63}){1,8}\b")),
    (
        "url",
        re.compile(
            r"\b(?:https?://|www\.)[^\s<>\"']+[^\s<>\"'.,;:!?)]"
            r"|\b[a-z0-9-]{1,63}(?:\.[a-z0-9-]{1,63}){0,8}\.(?P<tld>[a-z]{2,63})"
            r"(?:/[^\s]*)?\b",
            re.IGNORECASE,
        ),
    ),
    ("iban", re.compile(_IBAN)),
    ("dob", re.compile(_DOB, re.IGNORECASE)),
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

    @cached_property
    def _listed(self) -> _Names:
        """The names list's automaton: built once, used for every dialogue."""
        return _Names(self.names)

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
        finders = [self._listed]
        if self.speakers_are_persons:
            speaker_names = {s: "person" for s in speakers if s.strip()}
            names.update(speaker_names | dict(self.names))
            finders.append(_Names(speaker_names))
        lower_names = {k.lower(): v for k, v in names.items()}

        def replace(where: int | str, text: str) -> str:
            out, last = [], 0
            for start, end, kind, original in _spans(text, finders, lower_names):
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
    text: str, finders: Sequence[_Names], lower_names: Mapping[str, str]
) -> list[tuple[int, int, str, str]]:
    """Return the identifying spans of ``text`` (start, end, kind, original) in order; where
    matches overlap, the earlier pattern wins, and patterns win over names. A listed name's kind
    is the one listed."""
    found: list[tuple[int, int, str, str]] = []
    taken = [False] * len(text)

    def take(start: int, end: int, kind: str) -> None:
        if not any(taken[start:end]):
            found.append((start, end, kind, text[start:end]))
            taken[start:end] = [True] * (end - start)

    for kind, pattern in _PATTERNS:
        for m in pattern.finditer(text):
            if _accept(kind, m):
                take(*m.span("span" if "span" in pattern.groupindex else 0), kind)
    for start, end in _Names.matches(text, finders):
        take(start, end, lower_names[text[start:end].lower()])
    found.sort()
    return found


def _accept(kind: str, m: re.Match[str]) -> bool:
    """Return whether a pattern's match is one: a phone number needs enough digits, a bare
    domain a real top-level domain not capitalised like a sentence ("go.You"), an IBAN its
    checksum."""
    if kind == "phone":
        return sum(c.isdigit() for c in m.group(0)) >= _PHONE_DIGITS
    if kind == "url" and m.group("tld"):
        tld = m.group("tld")
        return not tld.istitle() and bool(is_tld(tld.lower()))
    if kind == "iban":
        return _iban_valid(m.group(0).replace(" ", ""))
    return True


def _iban_valid(iban: str) -> bool:
    """Return whether ``iban`` (no spaces) passes ISO 13616's check: moved the first four
    characters to the end and read letters as 10-35, the number is 1 modulo 97."""
    if not 15 <= len(iban) <= 34:
        return False
    digits = "".join(str(int(c, 36)) for c in iban[4:] + iban[:4])
    return int(digits) % 97 == 1


def _lower(text: str) -> str:
    """Lower-case ``text`` character for character, so offsets stay those of ``text`` (a few
    characters, such as "İ", lower-case to two and are kept as they are)."""
    low = text.lower()
    if len(low) == len(text):
        return low
    return "".join(c.lower() if len(c.lower()) == 1 else c for c in text)


def _is_word(c: str) -> bool:
    """Return whether ``c`` is a regex word character (``\\w``: alphanumeric or underscore)."""
    return c.isalnum() or c == "_"


class _Names:
    """A names list as one Aho–Corasick automaton: every listed name in a text in one pass.

    A name counts as a whole word, case-insensitively; of names starting at one place the
    longest wins, then the search goes on after it: the hits of one regex alternation of the
    names, longest first, between ``(?<!\\w)`` and ``(?!\\w)`` (bench/deidentify.py compares).
    """

    def __init__(self, names: Iterable[str]) -> None:
        self.automaton: ahocorasick.Automaton | None = None
        words = {_lower(n.strip()) for n in names if n.strip()}
        if words:
            self.automaton = ahocorasick.Automaton()
            for word in words:
                self.automaton.add_word(word, len(word))
            self.automaton.make_automaton()

    @staticmethod
    def matches(text: str, finders: Iterable[_Names]) -> Iterator[tuple[int, int]]:
        """Yield the (start, end) of the names of any of ``finders`` in ``text``, in order."""
        low, n = _lower(text), len(text)
        hits = []
        for finder in finders:
            if finder.automaton is None:
                continue
            for last, length in finder.automaton.iter(low):
                start, end = last - length + 1, last + 1
                if (start == 0 or not _is_word(text[start - 1])) and (
                    end == n or not _is_word(text[end])
                ):
                    hits.append((start, -length))
        done = 0
        for start, minus_length in sorted(hits):
            if start >= done:
                done = start - minus_length
                yield start, done
