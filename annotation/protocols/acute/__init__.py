"""ACUTE-Eval: two whole conversations side by side, one speaker of each judged (Li, Weston &
Roller 2019, "ACUTE-EVAL: Improved Dialogue Evaluation with Optimized Questions and Multi-turn
Comparisons").

An item is a pair of conversations of two different models (``model_a``/``model_b``, as in the
A/B protocol); in each one speaker, the model's, is highlighted ("Speaker 1" in the conversation
shown first, "Speaker 2" in the other; who is shown first is drawn per worker and item and
stored). The worker answers each of the study's questions — by default the paper's four
optimized ones, editable — by choosing one of the two speakers (forced choice, no tie), and
gives a short written justification (required as in the paper, or optional, or not asked).
The report gives per question and model pair the wins, the win rate with its crossed
items × raters 95% CI, the two-sided sign test and Holm's adjustment over all of them.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from annotation.protocols.base import (
    ALLOCATION_PARAMETER_HELP,
    ALLOCATION_PARAMETERS,
    ModelPairs,
    Question,
    Reliability,
    Report,
    Simulated,
)
from annotation.protocols.pairwise import order_shown, outcome
from evalsite.errors import InvalidAnswer, InvalidParameters
from evalstats import adaptive, adaptive_rates, figures, ranking, reports, uncertainty

# The paper's four optimized questions (Li et al. 2019, Table 2), in its wording.
PUBLISHED: dict[str, tuple[str, str]] = {
    "engaging": (
        gettext_noop("Engagingness"),
        gettext_noop("Who would you prefer to talk to for a long conversation?"),
    ),
    "interesting": (
        gettext_noop("Interestingness"),
        gettext_noop(
            "If you had to say one of these speakers is interesting and one is boring, "
            "who would you say is more interesting?"
        ),
    ),
    "human": (gettext_noop("Humanness"), gettext_noop("Which speaker sounds more human?")),
    "knowledgeable": (
        gettext_noop("Knowledgeable"),
        gettext_noop(
            "If you had to say that one speaker is more knowledgeable and one is more "
            "ignorant, who is more knowledgeable?"
        ),
    ),
}
# Forced choice between the two highlighted speakers, as shown: no tie (the paper's design).
CHOICES: tuple[tuple[str, str], ...] = (
    ("first", gettext_noop("Speaker 1")),
    ("second", gettext_noop("Speaker 2")),
)
REASON = "reason"
JUSTIFICATION = ("required", "optional", "off")
MAX_QUESTIONS = 8
MAX_TURNS = 200
MAX_TEXT = 5000
MAX_REASON = 2000
_KEY = re.compile(r"[a-z][a-z0-9_]{0,31}")
TABLE_COLUMNS = [
    "question",
    "model_a",
    "model_b",
    "n",
    "a_wins",
    "b_wins",
    "win_rate",
    "ci_low",
    "ci_high",
    "ci_method",
    "sign_test_p",
    "holm_p",
    "significant",
]


def _question_clean(entry: Any, n: int) -> dict[str, str]:
    """Return one question of the parameters as {key, name, text}; a string names a published
    question by its key."""
    if isinstance(entry, str):
        if entry not in PUBLISHED:
            raise ValueError(
                f"question {n}: {entry[:40]!r} is no published ACUTE question "
                f"({', '.join(PUBLISHED)}); give an object {{key, name, text}} for your own"
            )
        name, text = PUBLISHED[entry]
        return {"key": entry, "name": name, "text": text}
    if not isinstance(entry, Mapping) or set(entry) - {"key", "name", "text"}:
        raise ValueError(f"question {n}: give a published key or an object {{key, name, text}}")
    key, question, label = entry.get("key"), entry.get("text"), entry.get("name") or ""
    if not isinstance(key, str) or not _KEY.fullmatch(key) or key == REASON:
        raise ValueError(
            f"question {n}: 'key' must be 1–32 lower-case letters, digits or '_', starting "
            f"with a letter, and not {REASON!r}"
        )
    if not isinstance(question, str) or not question.strip() or len(question) > 500:
        raise ValueError(f"question {n}: 'text' must be the question, 1–500 characters")
    if not isinstance(label, str) or len(label) > 60:
        raise ValueError(f"question {n}: 'name' must be a short name (at most 60 characters)")
    return {"key": key, "name": label.strip(), "text": question.strip()}


def _turns_clean(value: Any, side: str) -> list[dict[str, str]]:
    if not isinstance(value, list) or not 2 <= len(value) <= MAX_TURNS:
        raise InvalidParameters(f"'turns_{side}' must be a list of 2 to {MAX_TURNS} turns.")
    turns = []
    for n, turn in enumerate(value, start=1):
        speaker = turn.get("speaker") if isinstance(turn, Mapping) else None
        text = turn.get("text") if isinstance(turn, Mapping) else None
        if not isinstance(speaker, str) or not speaker.strip() or len(speaker) > 64:
            raise InvalidParameters(f"'turns_{side}' turn {n}: 'speaker' must be 1–64 characters.")
        if not isinstance(text, str) or not text.strip() or len(text) > MAX_TEXT:
            raise InvalidParameters(
                f"'turns_{side}' turn {n}: 'text' must be 1–{MAX_TEXT} characters."
            )
        turns.append({"speaker": speaker.strip(), "text": text.strip()})
    return turns


class AcuteProtocol(Simulated, ModelPairs):
    """Choose, for each question, the better of two speakers in two whole conversations."""

    name = "acute"
    text_questions = (REASON,)
    title = "ACUTE-Eval: two conversations compared"
    template_name = "acute/task.html"
    # No published instructions of its own: its page's card states them (acute/task.html).
    instructions = ""
    default_redundancy = 3
    default_items_per_assignment = 5
    report_payload_keys = ("model_a", "model_b")
    parameter_help = {
        "questions": "The paper's four optimized questions (Li et al. 2019, Table 2): "
        "engagingness, interestingness, humanness, knowledgeable. Keep some by key "
        '(["engaging"]) or give your own as {"key", "name", "text"}. The paper asks one '
        "question per run.",
        "justification": "A short written reason for the choice: required (as in the paper), "
        "optional, or off.",
        "min_judgments_per_pair": "Judgments per model pair and question below which the "
        "report adds a note (evalsite's choice, as for A/B).",
        "n_boot": "Bootstrap resamples for the agreement intervals (evalsite's choice).",
        **ALLOCATION_PARAMETER_HELP,
    }

    def default_parameters(self) -> dict[str, Any]:
        return {
            "questions": list(PUBLISHED),
            "justification": "required",
            "min_judgments_per_pair": 50,
            "n_boot": 1000,
            **ALLOCATION_PARAMETERS,
        }

    def clean_parameters(self, parameters: Mapping[str, Any]) -> dict[str, Any]:
        cleaned = self.parameters_merged(parameters)
        errors: dict[str, str] = {}
        questions = cleaned["questions"]
        if not isinstance(questions, list) or not 1 <= len(questions) <= MAX_QUESTIONS:
            errors["questions"] = f"Give 1 to {MAX_QUESTIONS} questions."
        else:
            try:
                cleaned["questions"] = [_question_clean(q, n) for n, q in enumerate(questions, 1)]
            except ValueError as exc:
                errors["questions"] = str(exc)[:1].upper() + str(exc)[1:] + "."
            else:
                keys = [q["key"] for q in cleaned["questions"]]
                if len(set(keys)) != len(keys):
                    errors["questions"] = "Each question needs its own key."
        if cleaned["justification"] not in JUSTIFICATION:
            errors["justification"] = f"Must be one of {', '.join(JUSTIFICATION)}."
        for key, low, high in (("min_judgments_per_pair", 1, 100_000), ("n_boot", 0, 100_000)):
            value = cleaned[key]
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                errors[key] = f"Must be a whole number from {low} to {high}."
        if errors:
            raise InvalidParameters("Invalid ACUTE-Eval parameters.", fields=errors)
        return cleaned

    def clean_item(self, payload: Mapping[str, Any]) -> dict[str, Any]:
        if not isinstance(payload, Mapping):
            raise InvalidParameters("An item must be a JSON object.")
        cleaned: dict[str, Any] = {}
        for side in ("a", "b"):
            model, speaker = payload.get(f"model_{side}"), payload.get(f"speaker_{side}")
            if not isinstance(model, str) or not model.strip() or len(model) > 200:
                raise InvalidParameters(f"'model_{side}' must be a model name (1–200 characters).")
            turns = _turns_clean(payload.get(f"turns_{side}"), side)
            if not isinstance(speaker, str) or not speaker.strip():
                raise InvalidParameters(f"'speaker_{side}' must name the speaker to judge.")
            if speaker.strip() not in {t["speaker"] for t in turns}:
                raise InvalidParameters(
                    f"'speaker_{side}' {speaker.strip()[:64]!r} never speaks in 'turns_{side}'."
                )
            dialogue = payload.get(f"dialogue_{side}", "")
            if not isinstance(dialogue, str) or len(dialogue) > 300:
                raise InvalidParameters(f"'dialogue_{side}' must be a dialogue key (a string).")
            cleaned |= {
                f"model_{side}": model.strip(),
                f"speaker_{side}": speaker.strip(),
                f"dialogue_{side}": dialogue,
                f"turns_{side}": turns,
            }
        if cleaned["model_a"] == cleaned["model_b"]:
            raise InvalidParameters("The two conversations of an ACUTE item need two models.")
        return cleaned

    def questions(self, parameters: Mapping[str, Any]) -> list[Question]:
        asked = [
            Question(key=q["key"], text=q["text"], choices=CHOICES, help=q["name"])
            for q in parameters["questions"]
        ]
        if parameters["justification"] != "off":
            text = gettext_noop("Briefly, why? (a sentence is enough)")
            if parameters["justification"] == "optional":
                text = gettext_noop("Briefly, why? (optional)")
            asked.append(Question(key=REASON, text=text, choices=()))
        return asked

    def presentation(
        self, parameters: Mapping[str, Any], payload: Mapping[str, Any], seed: str
    ) -> dict[str, Any]:
        return order_shown(seed)

    def judgment_winner(
        self,
        payload: Mapping[str, Any],
        question: str,
        value: Any,
        presentation: Mapping[str, Any] | None,
    ) -> str | None:
        """Return the model whose speaker was chosen (None for the justification)."""
        if value not in ("first", "second"):
            return None
        side = outcome(value, presentation)
        return str(payload.get(f"model_{side}", "")) or None

    def clean_answers(
        self, parameters: Mapping[str, Any], answers: Mapping[str, Any]
    ) -> dict[str, Any]:
        errors: dict[str, str] = {}
        cleaned: dict[str, Any] = {}
        keys = [q["key"] for q in parameters["questions"]]
        for key in keys:
            raw = answers.get(key)
            if raw is None or raw == "":
                errors[key] = _("Please choose one of the two speakers.")
            elif not isinstance(raw, str) or raw not in dict(CHOICES):
                errors[key] = f"Choose first or second, not {str(raw)[:20]!r}."
            else:
                cleaned[key] = raw
        asked = set(keys)
        if parameters["justification"] != "off":
            asked.add(REASON)
            reason = answers.get(REASON, "")
            if not isinstance(reason, str):
                errors[REASON] = "The reason must be text."
            elif len(reason) > MAX_REASON:
                errors[REASON] = _("Please keep the reason under %(n)s characters.") % {
                    "n": MAX_REASON
                }
            elif parameters["justification"] == "required" and not reason.strip():
                errors[REASON] = _("Please say briefly why you chose as you did.")
            else:
                cleaned[REASON] = reason.strip()
        for extra in sorted(map(str, set(answers) - asked)):
            errors[extra[:64]] = _("This study asks no such question.")
        if errors:
            raise InvalidAnswer(_("Some answers are missing or not valid."), fields=errors)
        return cleaned

    def report(
        self, parameters: Mapping[str, Any], items: pd.DataFrame, judgments: pd.DataFrame
    ) -> Report:
        report = Report(title="ACUTE-Eval: win rates per question and model pair")
        names = {q["key"]: q["name"] or q["key"] for q in parameters["questions"]}
        data = acute_outcomes(items, judgments, list(names))
        first = adaptive_rates.first_judgments(parameters)
        report.tables["win_rates"] = win_table(data, names, adaptive_first=first)
        if data.empty:
            report.notes.append("No judgments yet.")
            return report
        report.tables["agreement"] = reports.agreement_table(
            data.rename(columns={"question": "group"}).assign(value=data["outcome"]),
            level="nominal",
            names=names,
            n_boot=int(parameters["n_boot"]),
        )
        table = report.tables["win_rates"]
        n_min = int(parameters["min_judgments_per_pair"])
        few = table[table["n"] < n_min]
        if len(few):
            listed = ", ".join(
                f"{r.model_a} vs {r.model_b} on {r.question} ({r.n})" for r in few.itertuples()
            )
            report.notes.append(
                f"Fewer than {n_min} judgments (the study's minimum) for: {listed}."
            )
        report.notes.append(
            "Win rate = share of the judgments in which model_a's speaker was chosen (forced "
            "choice: every judgment is decisive); its 95% CI is crossed items×raters (a worker "
            "who judges many conversation pairs counted), Wilson on the effective size. "
            "sign_test_p: two-sided exact binomial test of the wins against 50%; holm_p: "
            "Holm's adjustment over every question and pair of this table; significant: "
            "holm_p < 0.05. Agreement: nominal Krippendorff's alpha of the chosen model per "
            "question, 95% bootstrap CI over conversation pairs."
        )
        report.notes.append(adaptive.allocation_note(parameters))
        report.figures["win_rates"] = acute_figure(table)
        return report

    def simulate_answers(
        self,
        parameters: Mapping[str, Any],
        payload: Mapping[str, Any],
        shown: Mapping[str, Any],
        truth: Mapping[str, Any] | None,
        reliability: Reliability,
        rng: random.Random,
    ) -> dict[str, str]:
        """Choose by the truth's ``quality`` per model (higher is better) plus noise; spammers
        choose at random. Answers are given as the worker saw them ("first" is the speaker of
        the conversation shown first)."""
        order = shown.get("order") or ["a", "b"]
        answers: dict[str, str] = {}
        for q in parameters["questions"]:
            if reliability == "spammer" or not truth:
                answers[q["key"]] = rng.choice(["first", "second"])
                continue
            noise = 0.3 if reliability == "good" else 1.0
            qa = float(truth["quality"][payload["model_a"]]) + rng.gauss(0, noise)
            qb = float(truth["quality"][payload["model_b"]]) + rng.gauss(0, noise)
            better = "a" if qa >= qb else "b"
            answers[q["key"]] = "first" if order[0] == better else "second"
        if parameters["justification"] != "off":
            answers[REASON] = "ok" if reliability == "spammer" else "Their replies followed on."
        return answers


def acute_outcomes(
    items: pd.DataFrame, judgments: pd.DataFrame, questions: list[str]
) -> pd.DataFrame:
    """Return one row per judgment of a question: ``question``, ``item``, ``rater``, ``a``,
    ``b`` (models) and ``outcome`` ("a" or "b": whose speaker was chosen)."""
    columns = ["question", "item", "rater", "a", "b", "outcome"]
    chosen = judgments[judgments["question"].isin(questions)] if len(judgments) else judgments
    if chosen.empty:
        return pd.DataFrame(columns=columns)
    payloads = items.set_index("item")["payload"]
    at = payloads.index.get_indexer(chosen["item"])
    if (at < 0).any():
        raise KeyError(f"judged items missing from the items: {chosen['item'][at < 0].iloc[0]}")
    frame = pd.DataFrame(
        {
            "question": chosen["question"].to_numpy(),
            "item": chosen["item"].to_numpy(),
            "rater": chosen["rater"].to_numpy(),
            "a": np.array([p["model_a"] for p in payloads], dtype=object)[at],
            "b": np.array([p["model_b"] for p in payloads], dtype=object)[at],
            "outcome": [
                outcome(v, p) for v, p in zip(chosen["value"], chosen["presentation"], strict=True)
            ],
        }
    )
    return frame[frame["outcome"].isin(["a", "b"])][columns].reset_index(drop=True)


def acute_figure(table: pd.DataFrame) -> figures.ReportFigure:
    """Draw per question and model pair the first model's win rate with its interval and n;
    the alt text names each question's most one-sided pair."""
    found = " ".join(
        figures.one_sided_text(part, n="n", on=f" on {question}")
        for question, part in table.groupby("question", sort=False)
    )
    return figures.win_rate_figure(
        table,
        question="question",
        title="ACUTE-Eval: win rate per question and model pair",
        alt=f"Dot plot of the first model's win rate per question and model pair. {found}",
        note=f"Error bars: {figures.ci_name()}, {figures.methods(table['ci_method'])}. "
        "n: the pair's judgments (forced choice: every one decisive); the dotted line is a "
        "draw (0.5). * Holm-adjusted sign test p < 0.05.",
        marked="significant",
    )


def win_table(
    data: pd.DataFrame, names: Mapping[str, str], *, adaptive_first: int | None = None
) -> pd.DataFrame:
    """Return per question and model pair (oriented by name): judgments, wins each way, the
    win rate of ``model_a`` with its CI, the sign test and Holm's adjustment over the table.

    Under adaptive allocation (``adaptive_first``: the pairs' outcome-free first judgments,
    ``adaptive_rates.first_judgments``) a column ``win_rate_corrected`` follows: the raw rate
    leans toward the winner there (evalstats/adaptive_rates.py)."""
    columns = (
        [*TABLE_COLUMNS, "win_rate_corrected"] if adaptive_first is not None else TABLE_COLUMNS
    )
    rows = []
    for key in names:
        part = data[data["question"] == key]
        if part.empty:
            continue
        pairs = ranking.pair_table(part)
        merged = pairs.merge(ranking.win_rates(part), on=["model_a", "model_b"], how="left")
        if adaptive_first is not None:
            corrected = adaptive_rates.pair_rates(part, first=adaptive_first)
            corrected = corrected.rename(columns={"corrected": "win_rate_corrected"})
            merged = merged.merge(
                corrected[["model_a", "model_b", "win_rate_corrected"]],
                on=["model_a", "model_b"],
                how="left",
            )
        rows.append(merged.assign(question=names[key]))
    if not rows:
        return pd.DataFrame(columns=columns)
    table = pd.concat(rows, ignore_index=True)
    table["holm_p"] = uncertainty.holm(table["sign_test_p"].to_numpy(dtype=float))
    table["significant"] = table["holm_p"] < 0.05
    return table[columns]
