"""Empathetic dialogue collection between two live workers (PROTOCOLS.md §1; Rashkin et al.).

Stage 1: the worker picks one of 3 emotion labels (out of 32, offered by the balancing rule)
and writes a 1–3 sentence situation in which they felt it. Stage 2: the lobby pairs two
workers, who hold two conversations of 4–8 utterances, the Speaker opening about their own
situation and the Listener answering, then the roles swapped. Neither sees the other's label
or situation. The chat itself (websocket frames, the lobby, storage) is ``chat``;
this module holds the parameters, the checks of what workers write, the balancing rule and
the report.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from django.utils.translation import gettext, gettext_lazy, gettext_noop

from annotation.protocols.base import LiveChat, Question, Report
from evalsite.errors import InvalidAnswer, InvalidParameters
from evalstats import figures

# ED's published range of the shares of its labels, in % (Rashkin et al. 2019).
PUBLISHED_SHARES = (1.9, 5.1)
EMOTIONS: tuple[str, ...] = (
    gettext_noop("surprised"),
    gettext_noop("excited"),
    gettext_noop("angry"),
    gettext_noop("proud"),
    gettext_noop("sad"),
    gettext_noop("annoyed"),
    gettext_noop("grateful"),
    gettext_noop("lonely"),
    gettext_noop("afraid"),
    gettext_noop("terrified"),
    gettext_noop("guilty"),
    gettext_noop("impressed"),
    gettext_noop("disgusted"),
    gettext_noop("hopeful"),
    gettext_noop("confident"),
    gettext_noop("furious"),
    gettext_noop("anxious"),
    gettext_noop("anticipating"),
    gettext_noop("joyful"),
    gettext_noop("nostalgic"),
    gettext_noop("disappointed"),
    gettext_noop("prepared"),
    gettext_noop("jealous"),
    gettext_noop("content"),
    gettext_noop("devastated"),
    gettext_noop("embarrassed"),
    gettext_noop("caring"),
    gettext_noop("sentimental"),
    gettext_noop("trusting"),
    gettext_noop("ashamed"),
    gettext_noop("apprehensive"),
    gettext_noop("faithful"),
)
ROLES = ("speaker", "listener")
# A candidate sentence end: a run of . ! ? … (closing quotes or brackets after it) followed by
# a space or the end, so "3.5" and "example.com" never end a sentence.
_SENTENCE_END = re.compile(r"(?<![.!?…])([.!?…]+)[\"')\]’”]*(?=\s|$)")
_NEXT_WORD = re.compile(r"\s*[\"'(\[‘“]*(\w)")
# Abbreviations that never end a sentence: titles before a name, Latin "e.g." and the like.
_NEVER_END = frozenset(
    re.findall(
        r"\w+",
        "dr mr mrs ms mx prof rev fr sr jr st mt capt lt sgt col gen gov sen rep hon "
        "eg ie cf vs viz approx ca",
    )
)
# Abbreviations that end a sentence only when a capitalised word follows ("at 5 p.m. on
# Monday" vs "at 5 p.m. Then …"); dotted ones ("p.m.", "U.S.") are recognised by their dots.
_MAYBE_END = frozenset(
    re.findall(
        r"\w+",
        "am pm etc inc ltd co corp dept min mins hr hrs sec no jan feb mar apr jun jul aug "
        "sep sept oct nov dec mon tue tues wed thu thur thurs fri sat sun",
    )
)
_WORD = re.compile(r"\w+(?:['’]\w+)?")

# Parameter → (lowest, highest) for the whole-number parameters.
_RANGES: dict[str, tuple[int, int]] = {
    "labels_offered": (1, 32),
    "situation_min_words": (0, 200),
    "situation_max_words": (5, 500),
    "situation_max_sentences": (1, 10),
    "min_utterances": (2, 50),
    "max_utterances": (2, 50),
    "utterance_max_chars": (20, 5000),
    "lobby_timeout_s": (5, 3600),
    "heartbeat_s": (1, 120),
    "reconnect_grace_s": (2, 600),
}


def words(text: str) -> list[str]:
    """Return the words of ``text``."""
    return _WORD.findall(text)


def sentences(text: str) -> int:
    """Count the sentences of ``text``: runs ending in . ! ? or … plus an unterminated tail.

    A full stop after an abbreviation or an initial is not an end: "Dr. Smith", "J. K.
    Rowling", "e.g. this" never; "p.m.", "etc.", "U.S." and other dotted abbreviations only
    when a capitalised word follows. "3.5" is one number, and an ellipsis before a lowercase
    word ("I was... happy") continues the sentence.
    """
    text = text.strip()
    if not text:
        return 0
    ends = [m for m in _SENTENCE_END.finditer(text) if _ends_sentence(text, m)]
    tail = text[ends[-1].end() :].strip() if ends else text
    return len(ends) + (1 if words(tail) else 0)


def _ends_sentence(text: str, match: re.Match[str]) -> bool:
    marks = match.group(1)
    following = _NEXT_WORD.match(text, match.end())
    if following is None:  # the end of the text
        return True
    capitalised = following.group(1).isupper()
    if "!" in marks or "?" in marks:
        return True
    if marks != ".":  # an ellipsis
        return capitalised
    start = match.start()
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] in "._"):
        start -= 1  # back over the word before: no earlier end lies inside it
    token = text[start : match.start()]
    bare = token.replace(".", "").lower()
    if bare in _NEVER_END or (len(bare) == 1 and bare.isalpha() and token[-1:].isupper()):
        return False  # "Dr. Smith", "J. K. Rowling"
    if "." in token.strip(".") or bare in _MAYBE_END:
        return capitalised  # "5 p.m. Then", "the U.S. and"
    return True


def labels_offer(
    emotions: Sequence[str],
    overall: Mapping[str, int],
    mine: Mapping[str, int],
    *,
    k: int,
    rng: random.Random,
) -> list[str]:
    """Return the ``k`` labels to offer by ED's balancing rule.

    A first-time worker (nothing in ``mine``) gets the labels chosen least often ``overall``;
    a returning worker gets labels they have not chosen before (least chosen overall first),
    topped up with the ones they have chosen least once fewer than ``k`` are left. Ties are
    broken at random, so equally rare labels share the offers.
    """
    order = {e: rng.random() for e in emotions}
    if not any(mine.get(e, 0) for e in emotions):
        return sorted(emotions, key=lambda e: (overall.get(e, 0), order[e]))[:k]
    unused = sorted(
        (e for e in emotions if not mine.get(e, 0)), key=lambda e: (overall.get(e, 0), order[e])
    )
    used = sorted(
        (e for e in emotions if mine.get(e, 0)),
        key=lambda e: (mine[e], overall.get(e, 0), order[e]),
    )
    return (unused + used)[:k]


class EmpatheticChatProtocol(LiveChat):
    """Two workers write situations and hold two conversations with the roles swapped."""

    name = "empathetic_chat"
    title = "Empathetic dialogue collection (two live workers)"
    template_name = "annotation/chat.html"
    instructions = gettext_lazy(
        "1. Pick a feeling and describe, in 1 to 3 sentences, a situation in "
        "which you felt that way.\n2. Wait in the lobby while we pair you with another worker "
        "(keep the page open; it may take a few minutes).\n3. Chat **twice** with that worker: "
        "once about your situation (you speak first) and once about theirs (you listen and "
        "reply)."
    )
    chat_mode = "pair"
    seats_needed = 2  # two conversations per pair, roles swapped
    # "Frequent workers were limited to 100 conversations" (PROTOCOLS.md §1).
    default_max_items_per_worker = 100

    def default_parameters(self) -> dict[str, Any]:
        return {
            "emotions": list(EMOTIONS),
            "labels_offered": 3,
            # Not in the protocol (ED asks for 1–3 sentences only): 0 = no minimum.
            "situation_min_words": 0,
            "situation_max_words": 80,
            "situation_max_sentences": 3,
            "min_utterances": 4,
            "max_utterances": 8,
            "utterance_max_chars": 600,
            "lobby_timeout_s": 300,
            "heartbeat_s": 10,
            # Not in the protocol: how long a partner whose connection dropped (a train, a
            # phone changing networks) may take to come back before the pair ends. A page
            # that closes (the tab, a navigation) is gone after half a heartbeat.
            "reconnect_grace_s": 30,
        }

    def clean_parameters(self, parameters: Mapping[str, Any]) -> dict[str, Any]:
        cleaned = self.parameters_merged(parameters)
        errors = _ranges_check(cleaned, _RANGES)
        emotions = cleaned["emotions"]
        if (
            not isinstance(emotions, list)
            or not all(isinstance(e, str) and re.fullmatch(r"[a-z_-]{1,32}", e) for e in emotions)
            or len(set(emotions)) != len(emotions)
        ):
            errors["emotions"] = "Give a list of distinct lowercase labels (up to 32 letters)."
        elif not errors.get("labels_offered") and len(emotions) < cleaned["labels_offered"]:
            errors["emotions"] = "There must be at least as many labels as are offered."
        if not errors and cleaned["min_utterances"] > cleaned["max_utterances"]:
            errors["min_utterances"] = "Must not exceed max_utterances."
        if not errors and cleaned["situation_min_words"] > cleaned["situation_max_words"]:
            errors["situation_min_words"] = "Must not exceed situation_max_words."
        if errors:
            raise InvalidParameters("Invalid ED collection parameters.", fields=errors)
        return cleaned

    def clean_item(self, payload: Mapping[str, Any]) -> dict[str, Any]:
        raise InvalidParameters(
            "ED collection has no items to add: workers write the situations and dialogues."
        )

    def questions(self, parameters: Mapping[str, Any]) -> list[Question]:
        return []

    def clean_answers(
        self, parameters: Mapping[str, Any], answers: Mapping[str, Any]
    ) -> dict[str, Any]:
        raise InvalidAnswer("ED collection takes no answers to items; it is a live chat.")

    def clean_situation(
        self, parameters: Mapping[str, Any], offered: Sequence[str], emotion: Any, text: Any
    ) -> tuple[str, str]:
        """Return the chosen label and the situation text; raise InvalidAnswer naming each
        problem (a label not offered, too few or many words or sentences)."""
        errors: dict[str, str] = {}
        if emotion not in offered:
            errors["emotion"] = gettext("Choose one of the three feelings offered.")
        if not isinstance(text, str) or not text.strip():
            errors["situation"] = gettext("Describe a situation in which you felt that way.")
        else:
            text = " ".join(text.split())
            n_words, n_sentences = len(words(text)), sentences(text)
            low, high = parameters["situation_min_words"], parameters["situation_max_words"]
            most = parameters["situation_max_sentences"]
            if n_words < low:
                errors["situation"] = gettext(
                    "Please write at least %(least)s words (you wrote %(n)s)."
                ) % {"least": low, "n": n_words}
            elif n_words == 0:
                errors["situation"] = gettext(
                    "Please describe it in words (1 to %(most)s sentences)."
                ) % {"most": most}
            elif n_words > high:
                errors["situation"] = gettext(
                    "Please keep it to %(most)s words (you wrote %(n)s)."
                ) % {"most": high, "n": n_words}
            elif n_sentences > most:
                errors["situation"] = gettext(
                    "Please write 1 to %(most)s sentences (you wrote %(n)s)."
                ) % {"most": most, "n": n_sentences}
        if errors:
            raise InvalidAnswer(gettext("Please check your situation."), fields=errors)
        return str(emotion), str(text)

    def report(
        self, parameters: Mapping[str, Any], items: pd.DataFrame, judgments: pd.DataFrame
    ) -> Report:
        return Report(title="Empathetic dialogue collection")

    def report_dialogues(
        self, parameters: Mapping[str, Any], report: Report, dialogues: pd.DataFrame
    ) -> None:
        report.tables["conversations"] = conversations_table(dialogues)
        if dialogues.empty:
            report.notes.append("No conversations yet.")
            return
        labels = dialogues.drop_duplicates("situation")["emotion"] if len(dialogues) else []
        counts = pd.Series(Counter(labels), dtype=float).reindex(
            parameters["emotions"], fill_value=0
        )
        total = counts.sum()
        report.tables["labels"] = pd.DataFrame(
            {
                "emotion": counts.index,
                "situations": counts.astype(int).to_numpy(),
                "pct": (counts / total * 100 if total else counts).to_numpy(),
            }
        )
        report.notes.append(
            "ED's balancing rule aims at an even label distribution (published: every label "
            f"between {PUBLISHED_SHARES[0]}% and {PUBLISHED_SHARES[1]}%). Partial "
            "conversations (a partner left) are kept, flagged and counted apart; pasted text "
            "is flagged for review, never rejected by itself."
        )
        report.figures["collection"] = collection_figure(report.tables["labels"], dialogues)


def collection_figure(labels: pd.DataFrame, dialogues: pd.DataFrame) -> figures.ReportFigure:
    """Draw the situations per emotion (ED's published range of shares shaded) and the
    conversations per number of utterances by status, each bar with its n; the alt text
    names the most and least common emotions and the lengths."""
    fig = figures.figure_new(11.0, 2.2 + 0.2 * max(len(labels), 8))
    emotions, lengths = fig.subplots(1, 2, width_ratios=(3, 2))
    total = int(labels["situations"].sum())
    _emotions_draw(emotions, labels, total)
    span = _lengths_draw(lengths, dialogues)
    for ax in (emotions, lengths):
        ax.spines[["top", "right"]].set_visible(False)
    status_counts = dialogues["status"].value_counts()
    return figures.figure_finish(
        fig,
        title="Empathetic dialogue collection: emotions and conversation lengths",
        alt=f"{len(dialogues)} conversations ("
        + ", ".join(f"{n} {status}" for status, n in sorted(status_counts.items()))
        + f") over {total} situations. {_emotions_found(labels, total)}. "
        f"Conversations have {span[0]}–{span[-1]} utterances, median "
        f"{figures.number(float(dialogues['utterances'].median()), 0)}.",
        note="Counts of the collected data (a census: no interval). Shaded: ED's published "
        f"range of shares per emotion ({PUBLISHED_SHARES[0]}–{PUBLISHED_SHARES[1]}%). "
        "n: situations per emotion; conversations per length and status.",
    )


def _emotions_draw(ax: Any, labels: pd.DataFrame, total: int) -> None:
    """Situations per emotion as bars with their n, ED's published range shaded."""
    rows = labels.sort_values("situations", kind="stable")
    y = np.arange(len(rows))
    ax.barh(y, rows["situations"], color=figures.PALETTE[0], edgecolor=figures.INK, linewidth=0.5)
    low, high = (total * share / 100 for share in PUBLISHED_SHARES)
    ax.axvspan(low, high, color=figures.PALETTE[4], alpha=0.25, linewidth=0)
    ax.text(
        high, len(rows) - 0.5, " ED's published range", fontsize=7, va="bottom", color=figures.INK
    )
    for yi, n in zip(y, rows["situations"], strict=True):
        ax.annotate(
            f"n={n}",
            (n, yi),
            xytext=(2, 0),
            textcoords="offset points",
            va="center",
            fontsize=6.5,
            color=figures.INK,
            annotation_clip=False,
        )
    ax.set_yticks(y, rows["emotion"], fontsize=7)
    ax.set_xlabel(f"situations (of {total}), one emotion each")


def _lengths_draw(ax: Any, dialogues: pd.DataFrame) -> np.ndarray:
    """Conversations per number of utterances, one bar per status; return the lengths."""
    statuses = sorted(set(dialogues["status"]))
    span = np.arange(int(dialogues["utterances"].min()), int(dialogues["utterances"].max()) + 1)
    width = 0.8 / len(statuses)
    for i, status in enumerate(statuses):
        counts = dialogues.loc[dialogues["status"] == status, "utterances"].value_counts()
        heights = counts.reindex(span, fill_value=0).to_numpy()
        at = span + (i - (len(statuses) - 1) / 2) * width
        ax.bar(
            at,
            heights,
            width,
            label=f"{status} (n={int(heights.sum())})",
            color=figures.PALETTE[(i + 1) % len(figures.PALETTE)],
            edgecolor=figures.INK,
            linewidth=0.5,
        )
        drawn = heights > 0
        figures.n_labels(ax, at[drawn], heights[drawn], list(heights[drawn]), vertical=False)
    ax.set_xticks(span)
    ax.set_xlabel("utterances in the conversation")
    ax.set_ylabel("conversations")
    ax.legend(fontsize="small", frameon=False)
    return span


def _emotions_found(labels: pd.DataFrame, total: int) -> str:
    """The alt text's sentence on the most and least common emotions."""
    if not total:
        return "No situation has one of the study's emotions"
    shares = labels.set_index("emotion")["situations"]
    empty = int((shares == 0).sum())
    least = (
        f"{empty} of {len(shares)} emotions have none"
        if empty
        else (f"least common: {shares.idxmin()} ({shares.min()} situations)")
    )
    return (
        f"Most common emotion: {shares.idxmax()} ({shares.max()} situations, "
        f"{figures.number(100 * shares.max() / total, 1)}%); {least}"
    )


def conversations_table(dialogues: pd.DataFrame) -> pd.DataFrame:
    """Return per status: conversations, flagged, mean utterances and words per utterance."""
    columns = ["status", "conversations", "flagged", "utterances_mean", "words_per_utterance"]
    if dialogues.empty:
        return pd.DataFrame(columns=columns)
    rows = []
    for status, part in dialogues.groupby("status", sort=True):
        utterances = part["utterances"].sum()
        rows.append(
            {
                "status": status,
                "conversations": len(part),
                "flagged": int(part["flagged"].sum()),
                "utterances_mean": part["utterances"].mean(),
                "words_per_utterance": part["words"].sum() / utterances if utterances else 0.0,
            }
        )
    return pd.DataFrame(rows, columns=columns)


def _ranges_check(values: Mapping[str, Any], ranges: Mapping[str, tuple[int, int]]) -> dict:
    """Return an error per whole-number parameter outside its range."""
    errors = {}
    for key, (low, high) in ranges.items():
        value = values[key]
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            errors[key] = f"Must be a whole number from {low} to {high}."
    return errors
