"""A judge's answer: a model's reply read as JSON, or one option chosen by log-likelihood, then
validated by the protocol's ``clean_answers`` exactly like a worker's.

Nothing is guessed: a reply that is not one JSON object of valid answers is refused with the
reason (``Refused``), which the next attempt is told; after the last attempt the item is
recorded as a failure. In ``choice`` mode a tie between the best options is refused too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from annotation.protocols.base import Protocol, Question
from evalsite.errors import InvalidAnswer

MAX_REPLY_CHARS = 20_000
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)


class Refused(ValueError):
    """The judge's reply is not a valid answer; the message says why (told to the model)."""


def reply_json(reply: str) -> dict[str, Any]:
    """Return the one JSON object in ``reply`` (a fenced block or the text from its first
    ``{`` to its last ``}``); raise Refused when there is none or it is not an object."""
    if not isinstance(reply, str) or not reply.strip():
        raise Refused("the reply is empty")
    if len(reply) > MAX_REPLY_CHARS:
        raise Refused(f"the reply is longer than {MAX_REPLY_CHARS} characters")
    fenced = _FENCE.search(reply)
    text = fenced.group(1) if fenced else reply
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end < start:
        raise Refused("the reply holds no JSON object")
    try:
        value = json.loads(text[start : end + 1])
    except ValueError as exc:
        raise Refused(f"the reply's JSON is not valid ({exc})") from None
    if not isinstance(value, dict):
        raise Refused("the reply's JSON is not an object")
    return value


def answers_clean(
    protocol: Protocol,
    parameters: Mapping[str, Any],
    questions: Sequence[Question],
    answers: Mapping[str, Any],
) -> dict[str, Any]:
    """Return the stored values of a judge's answers, validated as a worker's are; raise
    Refused naming each bad field. Every question of the item must be answered (a worker's
    page asks them all; a line left out of EmotionLines is refused here)."""
    needed = [q.key for q in questions if q.only_if is None]
    missing = [key for key in needed if answers.get(key) in (None, "")]
    if missing:
        raise Refused(f"no answer for {', '.join(map(repr, missing))}")
    try:
        return protocol.clean_answers(parameters, answers)
    except InvalidAnswer as exc:
        fields = "; ".join(f"{key}: {problem}" for key, problem in exc.fields.items())
        raise Refused(f"{exc.message}{' (' + fields + ')' if fields else ''}") from None


def correction(problem: str, questions: Sequence[Question]) -> str:
    """Return the message that asks the model again, saying what was wrong."""
    keys = ", ".join(f'"{q.key}"' for q in questions)
    return (
        f"Your answer could not be used: {problem}. Answer again with one JSON object only, "
        f"with the keys {keys} and one allowed answer for each."
    )


def choice_best(scores: Sequence[float], options: Sequence[str]) -> str:
    """Return the option with the highest log-likelihood; raise Refused on a tie at the top
    (the model cannot tell the best options apart: choosing one would be a guess)."""
    if not options or len(scores) != len(options):
        raise ValueError("one score per option is needed")
    ranked = sorted(zip(scores, options, strict=True), key=lambda pair: -pair[0])
    if len(ranked) > 1 and ranked[0][0] == ranked[1][0]:
        raise Refused(f"the options {ranked[0][1]!r} and {ranked[1][1]!r} score the same")
    return ranked[0][1]
