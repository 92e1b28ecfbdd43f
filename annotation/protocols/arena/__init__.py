"""Arena: a worker chats with two anonymous models side by side and votes (docs/protocols.md,
"Arena"; Chatbot Arena / LMArena, Chiang et al. 2024; compar:IA).

The worker writes a message; the two models drawn for this conversation answer it in two
panes, streamed, labelled only "A" (left) and "B" (right): which model is A is drawn at
random with the pair, so the side says nothing of the model. The worker votes A better, B
better, tie or both bad, with an optional reason, after every exchange (``vote: "each"``) or
once at the end (``"end"``), and may go on for more exchanges within ``min_turns`` –
``max_turns``. Each side's model sees its own history only. When the conversation ends the
models are revealed (``reveal``); the conversation is then over, so no vote is ever given
after a reveal.

The votes are held on the conversation while it runs and become Items (one per voted
exchange: both replies, both conversations so far, their style features) and Judgments when
it completes (``chat.arena``). A conversation in which a model failed is ended early, the
worker paid, and its votes never become judgments: failures cannot bias the ranking
through which conversations got votes.

Pairs are drawn per conversation (``chat.arena.pair_next``): uniformly (fewest conversations
first) or adaptively, by the Bradley–Terry uncertainty of each pair (``evalstats.adaptive``),
with a per-worker cap per pair and a minimum exposure per model. The report ranks the models
by Bradley–Terry with conversations as clusters and workers as raters (the design-aware
intervals of ``evalstats.ranking``), gives the win-rate matrix and votes per pair, and a
length-controlled ranking (``evalstats.style``, the public arenas' "style control").
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import pandas as pd
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, gettext_noop

from annotation.protocols.arena.checks import (
    MAX_REASON,
    STYLE_SIDES,
    arena_parameters_check,
    arena_payload_clean,
)
from annotation.protocols.arena.report import arena_report, models_table
from annotation.protocols.base import (
    ALLOCATION_PARAMETER_HELP,
    ALLOCATION_PARAMETERS,
    Battles,
    GoldChecks,
    LiveChat,
    ModelPairs,
    Question,
    Reliability,
    Report,
    Simulated,
)
from corpora.arena import VOTE_WINNERS
from evalsite.errors import InvalidAnswer, InvalidParameters

WINNER = "winner"
REASON = "reason"
# The four votes, as the worker sees them (A is always the left pane).
CHOICES: tuple[tuple[str, str], ...] = (
    ("a", gettext_noop("A is better")),
    ("b", gettext_noop("B is better")),
    ("tie", gettext_noop("Tie")),
    ("both_bad", gettext_noop("Both are bad")),
)
# A vote as an outcome of ``evalstats.ranking``: a tie is half a win each way, "both bad"
# says nothing of which is better and is left out of Bradley–Terry (as A/B's "neither").
OUTCOME = {"a": "a", "b": "b", "tie": "both", "both_bad": "neither"}
VOTE_MODES = ("each", "end")
# An attention check in place of one side's answer (``attention_rate``): the worker reads it
# and votes for that side; a model never wrote it and never sees it.
ATTENTION_TEXT = gettext_noop(
    "Attention check: this is not a chatbot's answer. To show that you read both answers, "
    'please vote "%(side)s is better" this time.'
)


class ArenaProtocol(LiveChat, ModelPairs, Simulated, Battles, GoldChecks):
    """Chat with two anonymous models at once and vote for the better one."""

    name = "arena"
    title = "Arena (two anonymous models side by side, voted)"
    template_name = "annotation/chat.html"
    chat_mode = "side_by_side"
    dialogues_per_conversation = 2
    text_questions = (REASON,)
    battle_question = WINNER
    report_payload_keys = ("model_a", "model_b", "example", "turn", *STYLE_SIDES)
    default_max_items_per_worker = 20
    instructions = gettext_lazy(
        "Write a message to **two chatbots at once**. Their answers appear side by side as "
        "**A** and **B**; you are not told which chatbots they are. Read both, then say which "
        "answer is better, or that they are tied, or that both are bad. You may go on talking "
        "for a few turns; each chatbot sees only its own side of the conversation. The names "
        "are revealed when the conversation ends."
    )
    parameter_help = {
        "models": "The registered models to compare (at least two); each conversation draws "
        "two of them (evalsite's choice of design: Chatbot Arena's anonymous battle).",
        "conversations": "Conversations to collect in all; arrivals beyond it are told there is "
        "nothing to do (evalsite's choice).",
        "vote": "'each': a vote after every exchange (compar:IA's per-turn reactions); 'end': "
        "one vote when the conversation ends (Chatbot Arena).",
        "reveal": "Show the two models' names when the conversation ends (Chatbot Arena does, "
        "after the vote); votes are only taken before.",
        "min_turns": "Exchanges (a message and both replies) before the conversation may end.",
        "max_turns": "Most exchanges in one conversation.",
        "min_seconds": "Least time a conversation takes before it may end (0: none).",
        "reply_deadline_s": "A reply not finished within this many seconds counts as a model "
        "failure: the conversation ends, the worker is paid, its votes are not counted.",
        "messages_per_minute": "Most messages a worker may send per minute (a rate limit).",
        "moderation": "The name of a moderation hook configured in EVALSITE_MODERATION that "
        "may refuse a message before the models see it ('': none).",
        "max_pair_per_worker": "Most conversations one worker has with the same pair of models.",
        "min_exposure": "Conversations every model gets before adaptive allocation steers.",
        "style_control": "Also rank with reply length and Markdown as covariates (the public "
        "arenas' style control).",
        "attention_rate": "Share of exchanges (0–0.5) in which one side's answer is an attention "
        "check instead of a model's: its text asks for a vote for that side; the vote is a "
        "hidden attention check, never a vote counted (needs vote 'each'; 0: none).",
        "attention_text": "The attention check's text; %(side)s is the side's label, A or B.",
        "n_boot": "Bootstrap resamples for the agreement intervals (evalsite's choice).",
        **ALLOCATION_PARAMETER_HELP,
    }

    def default_parameters(self) -> dict[str, Any]:
        return {
            "models": [],
            "conversations": 200,
            "question": gettext_noop("Which answer is better?"),
            "vote": "each",
            "reveal": True,
            "reason": True,
            "min_turns": 1,
            "max_turns": 5,
            "min_seconds": 0,
            "reply_deadline_s": 60,
            "utterance_max_chars": 1000,
            "heartbeat_s": 10,
            "messages_per_minute": 6,
            "moderation": "",
            "max_pair_per_worker": 2,
            "min_exposure": 10,
            "style_control": True,
            "attention_rate": 0.0,
            "attention_text": ATTENTION_TEXT,
            "n_boot": 1000,
            **ALLOCATION_PARAMETERS,
        }

    def clean_parameters(self, parameters: Mapping[str, Any]) -> dict[str, Any]:
        cleaned = self.parameters_merged(parameters)
        errors = arena_parameters_check(cleaned)
        if errors:
            raise InvalidParameters("Invalid arena parameters.", fields=errors)
        cleaned["models"] = [m.strip() for m in cleaned["models"]]
        return cleaned

    def clean_item(self, payload: Mapping[str, Any]) -> dict[str, Any]:
        """Return a voted exchange's item (made by the chat when a conversation completes)."""
        return arena_payload_clean(payload)

    def questions(self, parameters: Mapping[str, Any]) -> list[Question]:
        return [Question(key=WINNER, text=parameters["question"], choices=CHOICES)]

    def clean_answers(
        self, parameters: Mapping[str, Any], answers: Mapping[str, Any]
    ) -> dict[str, Any]:
        errors: dict[str, str] = {}
        cleaned: dict[str, Any] = {}
        raw = answers.get(WINNER)
        if raw is None or raw == "":
            errors[WINNER] = _("Please say which answer is better, or tie, or both bad.")
        elif not isinstance(raw, str) or raw not in OUTCOME:
            errors[WINNER] = f"Vote a, b, tie or both_bad, not {str(raw)[:20]!r}."
        else:
            cleaned[WINNER] = raw
        asked = {WINNER}
        if parameters["reason"]:
            asked.add(REASON)
            reason = answers.get(REASON, "")
            if reason is None:
                reason = ""
            if not isinstance(reason, str):
                errors[REASON] = "The reason must be text."
            elif len(reason) > MAX_REASON:
                errors[REASON] = _("Please keep the reason under %(n)s characters.") % {
                    "n": MAX_REASON
                }
            elif "\x00" in reason:
                errors[REASON] = "The reason contains a NUL character."
            elif reason.strip():  # an empty reason is no answer: nothing is stored
                cleaned[REASON] = reason.strip()
        for extra in sorted(map(str, set(answers) - asked)):
            errors[extra[:64]] = _("This study asks no such question.")
        if errors:
            raise InvalidAnswer(_("Some answers are missing or not valid."), fields=errors)
        return cleaned

    def judgment_winner(
        self,
        payload: Mapping[str, Any],
        question: str,
        value: Any,
        presentation: Mapping[str, Any] | None,
    ) -> str | None:
        """Return the model voted for, or "tie" / "both_bad"."""
        if question != WINNER:
            return None
        if value in ("a", "b"):
            return str(payload.get(f"model_{value}", "")) or None
        return str(value) if value in OUTCOME else None

    def battle_record(
        self, payload: Mapping[str, Any], judge: str, vote: Any, at: datetime
    ) -> dict[str, Any]:
        """Return one vote in the public arena format. ``question_id`` is the conversation's
        key (``example``): its votes share it. The reason, which the format has no field
        for, stays in evalsite's own exports."""
        if vote not in VOTE_WINNERS:
            raise ValueError(
                f"unknown arena vote {vote!r}; expected one of {', '.join(VOTE_WINNERS)}"
            )
        return {
            "question_id": payload["example"],
            "model_a": payload["model_a"],
            "model_b": payload["model_b"],
            "winner": VOTE_WINNERS[vote],
            "judge": judge,
            "conversation_a": payload["conversation_a"],
            "conversation_b": payload["conversation_b"],
            "turn": payload["turn"],
            "anony": True,  # votes are only taken before the reveal
            "language": payload.get("language", ""),
            "tstamp": at.timestamp(),
        }

    def report(
        self, parameters: Mapping[str, Any], items: pd.DataFrame, judgments: pd.DataFrame
    ) -> Report:
        return arena_report(parameters, items, judgments)

    def report_dialogues(
        self, parameters: Mapping[str, Any], report: Report, dialogues: pd.DataFrame
    ) -> None:
        table, notes = models_table(parameters, dialogues)
        report.tables["models"] = table
        report.notes.extend(notes)

    def simulate_answers(
        self,
        parameters: Mapping[str, Any],
        payload: Mapping[str, Any],
        shown: Mapping[str, Any],
        truth: Mapping[str, Any] | None,
        reliability: Reliability,
        rng: random.Random,
    ) -> dict[str, str]:
        """Vote by the truth's ``quality`` per model, with noise by reliability; a spammer,
        or a worker with no truth to go by, votes at random."""
        if reliability == "spammer" or not truth:
            return {WINNER: rng.choice([c for c, _ in CHOICES])}
        noise = 0.4 if reliability == "good" else 1.2
        qa = float(truth["quality"].get(payload["model_a"], 0.5)) + rng.gauss(0, noise)
        qb = float(truth["quality"].get(payload["model_b"], 0.5)) + rng.gauss(0, noise)
        if abs(qa - qb) < 0.2:
            return {WINNER: "tie" if min(qa, qb) > 0.4 else "both_bad"}
        return {WINNER: "a" if qa > qb else "b"}
