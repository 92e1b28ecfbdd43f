"""GenericBot, Meena's calibration baseline (PROTOCOLS.md §6): "I don't know" to questions,
"ok" to statements."""

import re
import time
from collections.abc import Mapping, Sequence
from typing import Any

from modelhub.backends.base import Backend, Example


class GenericBot(Backend):
    """Answer every question with "I don't know" and everything else with "ok".

    A turn is a question when any sentence of it is (``is_question``), so "Really? Tell me
    more." gets "I don't know.", as does "How are you? 🙂" and "how about you".

    ``delay_s`` makes it pretend to be a slow model (it sleeps that long per example); tests and
    benchmarks use it to have generation jobs that run long enough to be interrupted.
    """

    name = "generic_bot"

    def __init__(self, delay_s: float = 0.0) -> None:
        if isinstance(delay_s, bool) or not isinstance(delay_s, int | float) or delay_s < 0:
            raise ValueError(f"generic_bot: 'delay_s' must be a number ≥ 0, not {delay_s!r}")
        self.delay_s = float(delay_s)

    def generate(self, examples: Sequence[Example], params: Mapping[str, Any]) -> list[str]:
        if self.delay_s:
            time.sleep(self.delay_s * len(examples))
        return ["I don't know." if e.turns and is_question(e.turns[-1]) else "ok" for e in examples]


# Question marks of English and of scripts a chat may switch to (full-width, Spanish, Arabic,
# interrobangs); one anywhere outside a link makes the turn a question.
_QUESTION_MARKS = re.compile("[?？¿؟‽⁇⁈⁉]")
_LINK = re.compile(r"(?:https?://|www\.)\S+|<REDACTED_LINK>", re.IGNORECASE)
# Sentences end at . ! … or a line break (the "?" case is already decided); clauses split at
# , ; : and dashes.
_SENTENCES = re.compile(r"([^.!…\n]*)([.!…\n]*)")
_CLAUSES = re.compile(r"[,;:]|\s[-–—]+\s")
_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Discourse markers that may precede a question: "oh where are you", "so what do you do".
_OPENERS = _words(
    "oh ah ahh aw aww so and but well ok okay hey hi um umm hmm hm yeah yes yea no nope cool "
    "nice great haha hahaha lol wow sure alright right anyway anyways then also"
)
_WH = _words("what who whom whose where when why how which")
_WH_CONTRACTED = _words(
    "what's who's where's when's why's how's what're who're where're how're what'd who'd "
    "where'd how'd why'd what've who've what'll who'll whats hows wheres whos"
)
_BE_MODAL = _words(
    "is are am was were can could will would should shall may might must "
    "isn't aren't wasn't weren't can't couldn't won't wouldn't shouldn't r"
)
_DO = _words("do does did don't doesn't didn't")
_HAVE = _words("have has had haven't hasn't hadn't")
_AUX = _BE_MODAL | _DO | _HAVE
_IMPERATIVE_DO = _words("do don't")
_WISH = _words("may might must")
# What may follow an auxiliary as its subject when the clause is a yes/no question.
_PRONOUNS = _words("you u ya y'all i we they he she there anyone anybody someone")
_DETERMINERS = _words("it this that these those the your my his her their our any")
_YOU = _words("you u ya your yourself")
_SUBJECTS = _PRONOUNS | _DETERMINERS | _YOU
# "what a day", "how cool" are exclamations; "what kind", "which airport" ask.
_FRAGMENT_WH = _words("what which whose")
_WH_PHRASE = _words("how what which whose")
_NOT_FRAGMENT = _words("a an")
# "any ideas", "any plans for the weekend" (but "any kind you like" is an answer).
_ANY_NOUNS = _words(
    "suggestion suggestions idea ideas plan plans thoughts recommendation recommendations "
    "advice news luck hobbies questions"
)
_AND_YOU = (["and", "you"], ["and", "yourself"], ["and", "u"])


def is_question(turn: str) -> bool:
    """Return whether a chat turn asks something (Meena's GenericBot answers it "I don't know").

    A turn is a question when it contains a question sentence:
    - any question mark outside a link, wherever it stands ("How are you? 🙂", "Really? Tell
      me more.", "Oooo the Mandalorian?!");
    - or a sentence or clause (split at . ! … , ; : and dashes, after leading markers such as
      "oh", "so", "well") that reads as an interrogative without one: an auxiliary before its
      subject ("are you at work", "did you see family", "does it hurt"); a wh-word before an
      auxiliary, possibly with one word between ("what do you think", "how many friends do
      you have", "where can i find coffee", "what's your work"); "how/what about …" and
      "and you(rself)"; a short what/which/whose fragment ("which airport", "what kind"); or a
      wh-word, auxiliary and "you" inside a clause ("glad to hear that what did you do"); "any"
      before a noun that asks ("any plans", "any suggestion …").
    Statements, requests ("tell me more") and exclamations ("what a day", "how cool", any
    sentence ending in "!" without a question mark: "What are the odds!") are not questions;
    neither is a wh-word opening a subordinate clause ("where I grew up, …", "Paris, which is
    lovely").
    """
    text = _LINK.sub(" ", turn)
    if _QUESTION_MARKS.search(text):
        return True
    text = text.lower().replace("’", "'").replace("‘", "'")
    for sentence, end in _SENTENCES.findall(text):
        if "!" in end:  # "What are the odds!", "How cool is that!"
            continue
        for position, clause in enumerate(_CLAUSES.split(sentence)):
            if _interrogative(_WORD.findall(clause), first_clause=position == 0):
                return True
    return False


def _interrogative(words: list[str], *, first_clause: bool) -> bool:
    if words[-2:] in _AND_YOU and len(words) <= 4:  # "and you", "fine thanks and you"
        return True
    start = 0
    while start < len(words) and words[start] in _OPENERS:
        start += 1
    words = words[start:]
    if not words:
        return False
    first, second = words[0], words[1] if len(words) > 1 else ""
    if first in _WH_CONTRACTED or (first in ("how", "what") and second == "about"):
        return True
    if first in _WH:
        # "how are you", "what did you", "how many friends do you", "how come".
        if first == "how" and second == "come":
            return True
        if second in _AUX:
            # After a comma "which is …" / "who was …" is a relative clause ("Paris, which is
            # lovely"), so there the auxiliary needs a subject after it ("ok, where are you").
            return first_clause or (len(words) > 2 and words[2] in _SUBJECTS)
        if first == "how" and len(words) > 2 and words[2] in _AUX:
            return second not in _SUBJECTS  # "how long have you", "how old is he"
        # "what kind of pizza do you like", "how many friends do you have", "which one is it";
        # not "what people do at home is …" (the auxiliary needs a subject after it).
        if (
            first in _WH_PHRASE
            and second not in _SUBJECTS
            and any(
                words[i] in _AUX and words[i + 1] in _SUBJECTS
                for i in range(2, min(len(words) - 1, 5))
            )
        ):
            return True
        return first in _FRAGMENT_WH and 2 <= len(words) <= 3 and second not in _NOT_FRAGMENT
    if first == "any" and second in _ANY_NOUNS:
        return True
    if first in _AUX and second in _PRONOUNS:
        return True
    if first in _AUX and second in _DETERMINERS:
        # Not "Do your best", "Do it now", "May the force …", "Had the best day".
        return first not in _HAVE | _IMPERATIVE_DO | _WISH
    # "glad to hear that what did you do yesterday": wh + auxiliary + you inside a clause.
    return any(
        w in _WH and words[i + 1] in _AUX and words[i + 2] in _YOU for i, w in enumerate(words[:-2])
    )
