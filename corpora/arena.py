"""The public arena vote format (Chatbot Arena / LMArena battles): read, checked, written, and
turned into ``evalstats.ranking``'s outcomes.

One record per vote: ``model_a``, ``model_b``, ``winner`` (``"model_a"``, ``"model_b"``,
``"tie"``, ``"tie (bothbad)"``), ``conversation_a``, ``conversation_b`` (lists of
``{"role": "user" | "assistant", "content": text}``), ``turn`` (exchanges so far, 1 or more),
``judge`` (the rater) and ``language``; optionally ``question_id`` (the conversation: votes on
its turns share it), ``tstamp`` (unix seconds) and ``anony`` (whether the models were hidden
when the vote was given). Other fields are kept as they are. Files are a JSON list or JSONL.

The decisions (docs/datasets.md, "The arena format"): "tie" is ranking's "both" (half a win
each way), "tie (bothbad)" its "neither" (left out of Bradley–Terry); a vote with ``anony``
false is not counted (its voter knew the models), one without ``anony`` is. Nothing here
imports Django.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from corpora.records import DatasetError, Lines
from corpora.sources import _json_array, file_text, json_error, json_loads, text_lines
from evalstats.style import STYLE_KEYS, style_features

logger = logging.getLogger(__name__)

# The public winner → ``evalstats.ranking``'s outcome.
ARENA_OUTCOMES: dict[str, str] = {
    "model_a": "a",
    "model_b": "b",
    "tie": "both",
    "tie (bothbad)": "neither",
}
# An arena campaign's "winner" answer (A is the left pane) → the public winner.
VOTE_WINNERS: dict[str, str] = {
    "a": "model_a",
    "b": "model_b",
    "tie": "tie",
    "both_bad": "tie (bothbad)",
}
REQUIRED_FIELDS = (
    "model_a",
    "model_b",
    "winner",
    "conversation_a",
    "conversation_b",
    "turn",
    "judge",
    "language",
)
ROLES = ("user", "assistant")
OUTCOME_COLUMNS = [
    "item",
    "rater",
    "a",
    "b",
    "outcome",
    "turn",
    *(f"{key}_{side}" for key in STYLE_KEYS for side in ("a", "b")),
]
NON_ANONYMOUS = "non_anonymous"  # the outcomes frame's attrs key: votes dropped for anony false


class ArenaError(DatasetError):
    """An arena file or record that cannot be read; the message names the record and field."""


# --- checks ---------------------------------------------------------------------------------


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _conversation_check(value: Any, name: str, where: str) -> None:
    if not isinstance(value, list) or not value:
        raise ArenaError(f"{where}: {name!r} must be a non-empty list of messages")
    for n, message in enumerate(value, start=1):
        if not isinstance(message, Mapping):
            raise ArenaError(f"{where}: {name!r} message {n} must be an object")
        if message.get("role") not in ROLES:
            raise ArenaError(
                f"{where}: {name!r} message {n}: 'role' must be 'user' or 'assistant', "
                f"not {_short(message.get('role'))}"
            )
        if not isinstance(message.get("content"), str):
            raise ArenaError(f"{where}: {name!r} message {n}: 'content' must be text")


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def arena_record_check(record: Any, where: str) -> dict[str, Any]:
    """Return ``record`` (one vote) if it is valid; raise ArenaError naming ``where`` (the
    file and record) and the field at fault."""
    if not isinstance(record, Mapping):
        raise ArenaError(f"{where}: a vote must be a JSON object")
    missing = [f for f in REQUIRED_FIELDS if f not in record]
    if missing:
        raise ArenaError(f"{where}: missing field(s) {', '.join(map(repr, missing))}")
    for name in ("model_a", "model_b", "judge"):
        if not isinstance(record[name], str) or not record[name].strip():
            raise ArenaError(f"{where}: {name!r} must be a non-empty text")
    if record["model_a"].strip() == record["model_b"].strip():
        raise ArenaError(f"{where}: 'model_a' and 'model_b' are the same model")
    if record["winner"] not in ARENA_OUTCOMES:
        raise ArenaError(
            f"{where}: 'winner' is {_short(record['winner'])}; expected one of "
            f"{', '.join(map(repr, ARENA_OUTCOMES))}"
        )
    for name in ("conversation_a", "conversation_b"):
        _conversation_check(record[name], name, where)
    if not _is_int(record["turn"]) or record["turn"] < 1:
        raise ArenaError(f"{where}: 'turn' must be a whole number, 1 or more")
    if not isinstance(record["language"], str):
        raise ArenaError(f"{where}: 'language' must be text")
    question = record.get("question_id")
    if "question_id" in record and not (
        (isinstance(question, str) and question.strip()) or _is_int(question)
    ):
        raise ArenaError(f"{where}: 'question_id' must be a non-empty text or a number")
    tstamp = record.get("tstamp")
    if "tstamp" in record and (isinstance(tstamp, bool) or not isinstance(tstamp, int | float)):
        raise ArenaError(f"{where}: 'tstamp' must be a number (unix seconds)")
    if "anony" in record and not isinstance(record["anony"], bool):
        raise ArenaError(f"{where}: 'anony' must be true or false")
    return dict(record)


# --- reading and writing ----------------------------------------------------------------------


def arena_read(path: Path) -> list[dict[str, Any]]:
    """Read an arena file (a JSON list, or JSONL: one vote a line) and check every vote.

    Raise ArenaError naming the file, the record (and its line) and what is wrong: bad JSON,
    a missing field, an unknown winner, a model compared with itself, … A BOM and blank lines
    are ignored. The votes come back as read, non-anonymous ones included.
    """
    text = file_text(path)
    is_list = re.match(r"[ \t\r\n]*\[", text) is not None
    votes = _read_list(text, path.name) if is_list else _read_lines(text, path.name)
    records = [arena_record_check(record, where) for record, where in votes]
    if not records:
        raise ArenaError(f"{path.name}: no votes")
    return records


def _read_list(text: str, name: str) -> Iterator[tuple[Any, str]]:
    lines = Lines(text)
    elements = _json_array(text, 0, name, lines, whole=True)
    n = 0
    while True:
        try:
            offset, value = next(elements)
        except StopIteration:
            return
        except DatasetError as exc:  # "name, line L: what": say which record too
            place, _, what = str(exc).removeprefix(f"{name}, ").partition(": ")
            raise ArenaError(f"{name}, record {n + 1} ({place}): {what}") from None
        n += 1
        yield value, f"{name}, record {n} (line {lines.of(offset)})"


def _read_lines(text: str, name: str) -> Iterator[tuple[Any, str]]:
    n = 0
    for line, raw in enumerate(text_lines(text), start=1):
        if not raw.strip():
            continue
        n += 1
        where = f"{name}, record {n} (line {line})"
        try:
            value = json_loads(raw)
        except ValueError as exc:
            raise ArenaError(f"{where}: not valid JSON ({json_error(exc)})") from None
        yield value, where


def arena_write(records: Iterable[Mapping[str, Any]], path: Path) -> int:
    """Write votes to ``path`` as JSONL, each checked as ``arena_read`` checks it; return how
    many were written. Raise ArenaError naming the first bad record (the file is then
    incomplete)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with path.open("w", encoding="utf-8", newline="\n") as out:
        for n, record in enumerate(records, start=1):
            checked = arena_record_check(record, f"{path.name}, record {n}")
            out.write(json.dumps(checked, ensure_ascii=False) + "\n")
    return n


# --- outcomes ---------------------------------------------------------------------------------


def conversation_style(messages: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Return the style features (``evalstats.style.STYLE_KEYS``) summed over a conversation's
    assistant messages."""
    total = dict.fromkeys(STYLE_KEYS, 0)
    for message in messages:
        if message.get("role") == "assistant":
            for key, value in style_features(str(message.get("content", ""))).items():
                total[key] += value
    return total


def conversation_id(record: Mapping[str, Any]) -> str:
    """Return the vote's conversation: its ``question_id``, else one made from the two models
    and the first user message (the votes on later turns of a conversation share these)."""
    if record.get("question_id") is not None:
        return str(record["question_id"])
    first = next((m["content"] for m in record["conversation_a"] if m["role"] == "user"), "")
    key = json.dumps([record["model_a"], record["model_b"], first], ensure_ascii=False)
    return "conv-" + hashlib.sha256(key.encode()).hexdigest()[:16]


def arena_outcomes(records: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """Return one row per anonymous vote: ranking's ``item`` (the conversation, a cluster),
    ``rater`` (the judge), ``a``, ``b``, ``outcome``, then ``turn`` and each side's style
    (``chars_a``, ``chars_b``, ``headers_a``, …, from its assistant messages).

    Votes with ``anony`` false are dropped; how many is in ``frame.attrs["non_anonymous"]``
    (and logged).
    """
    rows = []
    dropped = 0
    for record in records:
        if record.get("anony", True) is False:
            dropped += 1
            continue
        style = {side: conversation_style(record[f"conversation_{side}"]) for side in ("a", "b")}
        rows.append(
            {
                "item": conversation_id(record),
                "rater": str(record["judge"]),
                "a": str(record["model_a"]).strip(),
                "b": str(record["model_b"]).strip(),
                "outcome": ARENA_OUTCOMES[record["winner"]],
                "turn": int(record["turn"]),
                **{f"{key}_{side}": style[side][key] for key in STYLE_KEYS for side in "ab"},
            }
        )
    frame = pd.DataFrame(rows, columns=OUTCOME_COLUMNS)
    frame.attrs[NON_ANONYMOUS] = dropped
    if dropped:
        logger.info("left out %d non-anonymous arena vote(s)", dropped)
    return frame


def arena_min_votes(outcomes: pd.DataFrame, min_votes: int) -> tuple[pd.DataFrame, dict[str, int]]:
    """Return the outcomes without the models that have fewer than ``min_votes`` votes, and
    those models with their counts. Leaving a model out takes its votes with it, which may
    bring another model under the bar: repeated until every model left has enough."""
    left_out: dict[str, int] = {}
    while not outcomes.empty:
        votes = pd.concat([outcomes["a"], outcomes["b"]]).value_counts()
        few = votes[votes < min_votes]
        if few.empty:
            break
        left_out.update({str(m): int(n) for m, n in few.items()})
        outcomes = outcomes[~outcomes["a"].isin(few.index) & ~outcomes["b"].isin(few.index)]
    return outcomes, left_out
