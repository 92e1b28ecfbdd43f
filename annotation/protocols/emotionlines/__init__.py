"""Emotion labeling of whole dialogues (PROTOCOLS.md §4; Chen et al. 2018, EmotionLines).

One item is one dialogue. The worker reads the whole dialogue and labels every utterance with
one of the label set (neutral, joy, sadness, fear, anger, surprise, disgust by default); each
answer counts only after the worker has had the utterance in front of them for at least
``min_seconds_per_utterance`` (3 s). Five workers per dialogue. An utterance's gold label is
the label with an absolute majority of its votes (3 of 5), otherwise ``non-neutral`` — the
rule as the released data applies it (``aggregation.emotionlines_labels``). Pay is by
dialogue length (``pay_buckets``, §4's defaults), paid through the launch's pay buckets.

Answers are one judgment per utterance: question ``u<i>`` (0-based), value the label.

The 3-second rule is enforced twice. The page shows one utterance's choices at a time and
refuses (with a visible message) a choice made sooner than 3 s after the utterance became
current; it sends each utterance's shown/answered times (ms since the page loaded) in
``timing``. The server checks those times (each ≥ 3 s, in order, none later than the time
the server has measured since it gave the dialogue to the worker) and, whatever the page
sends, that the server-measured time covers 3 s per utterance — the part no client can fake.
"""

from __future__ import annotations

import json
import math
import random
import re
from collections.abc import Mapping, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any

import pandas as pd
from django.utils.translation import gettext, gettext_lazy, gettext_noop

from annotation.protocols.base import (
    DialogueItems,
    GoldChecks,
    Judged,
    Planned,
    Question,
    Reliability,
    Report,
    Simulated,
)
from annotation.protocols.emotionlines.planner import kappa_design
from corpora.records import EMOTIONLINES_LABELS, DialogueRecord, UtteranceRecord
from evalsite.errors import InvalidAnswer, InvalidParameters
from evalstats import aggregation
from evalstats.emotion_labels import (
    distribution_figure,
    gold_labels,
    kappa_by_source,
    label_distribution,
    label_rates,
    utterance_judgments,
    utterance_votes,
)
from evalstats.planner import KappaDesign

NON_NEUTRAL = aggregation.NON_NEUTRAL
PAY_BUCKETS = [[5, 9, "0.10"], [10, 14, "0.15"], [15, 19, "0.20"], [20, 24, "0.25"]]
MAX_UTTERANCES = 100
# Client and server clocks differ and the page loads after the server leased the item.
TIMING_SLACK_MS = 2000
_KEY = re.compile(r"^u(\d{1,3})$")
_SIM_ACCURACY = {"good": 0.85, "noisy": 0.55}
# The labels as a worker reads them (translated on the page; a researcher's own as written).
LABEL_NAMES = (
    gettext_noop("neutral"),
    gettext_noop("joy"),
    gettext_noop("sadness"),
    gettext_noop("fear"),
    gettext_noop("anger"),
    gettext_noop("surprise"),
    gettext_noop("disgust"),
)
# Stored with each judgment's presentation, in English; the page shows its translation
# (emotionlines/task.html).
INSTRUCTIONS = (
    "Read the whole conversation. Then, line by line, choose the emotion the speaker expresses "
    "in that line, in the context of the conversation. Take at least {seconds:g} seconds to "
    "think about each line: an answer given sooner is not accepted."
)


def utterance_key(index: int) -> str:
    """Return the question key of the utterance at ``index`` (0-based)."""
    return f"u{index}"


class EmotionLinesProtocol(DialogueItems, GoldChecks, Simulated, Judged, Planned):
    """Label every utterance of a dialogue with an emotion."""

    name = "emotionlines"
    title = "Emotion labeling of whole dialogues (EmotionLines)"
    template_name = "emotionlines/task.html"
    instructions = gettext_lazy(
        "Read the whole conversation. Then, line by line, choose the emotion the "
        "speaker expresses in that line, in the context of the conversation. Take at least "
        "{seconds:g} seconds to think about each line: an answer given sooner is not accepted."
    )
    judge_prompt = "Label every line.\n{questions}"
    judge_prompt_version = "emotionlines-v1"
    planner_sizing = "dialogue"
    planner_words = ("kappa",)
    planner_design_type = KappaDesign
    default_redundancy = 5
    default_items_per_assignment = 1  # one HIT = one dialogue (§4)

    def default_parameters(self) -> dict[str, Any]:
        return {
            "labels": list(EMOTIONLINES_LABELS),
            "min_seconds_per_utterance": 3.0,
            "vote_threshold": None,
            "fallback_label": NON_NEUTRAL,
            "pay_buckets": [list(b) for b in PAY_BUCKETS],
            "n_boot": 1000,
        }

    def default_instructions(self, parameters: Mapping[str, Any]) -> str:
        seconds = float(parameters.get("min_seconds_per_utterance", 3))
        return str(self.instructions).format(seconds=seconds)

    def planner_design(
        self,
        parameters: Mapping[str, Any],
        *,
        redundancy: int,
        sizes: Mapping[str, int],
        n_boot: int,
    ) -> KappaDesign:
        return kappa_design(parameters, redundancy=redundancy, sizes=sizes, n_boot=n_boot)

    def clean_parameters(self, parameters: Mapping[str, Any]) -> dict[str, Any]:
        cleaned = self.parameters_merged(parameters)
        errors: dict[str, str] = {}
        labels = cleaned["labels"]
        if (
            not isinstance(labels, list)
            or not 2 <= len(labels) <= 20
            or not all(isinstance(x, str) and x.strip() and len(x) <= 32 for x in labels)
            or len(set(labels)) != len(labels)
        ):
            errors["labels"] = "Give 2 to 20 different labels of at most 32 characters."
        fallback = cleaned["fallback_label"]
        if not isinstance(fallback, str) or not fallback.strip() or len(fallback) > 32:
            errors["fallback_label"] = "Give the label of utterances without a majority."
        elif isinstance(labels, list) and fallback in labels:
            errors["fallback_label"] = "The fallback label must not be one of the labels."
        seconds = cleaned["min_seconds_per_utterance"]
        if (
            isinstance(seconds, bool)
            or not isinstance(seconds, int | float)
            or not 0 <= seconds <= 60
        ):
            errors["min_seconds_per_utterance"] = "Must be a number of seconds from 0 to 60."
        threshold = cleaned["vote_threshold"]
        if threshold is not None and (
            isinstance(threshold, bool) or not isinstance(threshold, int) or threshold < 1
        ):
            errors["vote_threshold"] = "Must be empty (absolute majority) or at least 1 vote."
        try:
            cleaned["pay_buckets"] = _buckets_clean(cleaned["pay_buckets"])
        except ValueError as exc:
            errors["pay_buckets"] = str(exc)
        n_boot = cleaned["n_boot"]
        if isinstance(n_boot, bool) or not isinstance(n_boot, int) or not 0 <= n_boot <= 100_000:
            errors["n_boot"] = "Must be a whole number from 0 to 100000."
        if errors:
            raise InvalidParameters("Invalid EmotionLines parameters.", fields=errors)
        cleaned["min_seconds_per_utterance"] = float(seconds)
        return cleaned

    def clean_item(self, payload: Mapping[str, Any]) -> dict[str, Any]:
        if not isinstance(payload, Mapping):
            raise InvalidParameters("An item must be a JSON object.")
        utterances = payload.get("utterances")
        if not isinstance(utterances, list) or not 1 <= len(utterances) <= MAX_UTTERANCES:
            raise InvalidParameters(
                f"'utterances' must be a list of 1 to {MAX_UTTERANCES} utterances."
            )
        clean = []
        for n, u in enumerate(utterances, start=1):
            if isinstance(u, str):
                u = {"speaker": "", "text": u}
            if not isinstance(u, Mapping) or not isinstance(u.get("text"), str):
                raise InvalidParameters(f"Utterance {n} must be text or {{speaker, text}}.")
            if not u["text"].strip():
                raise InvalidParameters(f"Utterance {n} is empty.")
            speaker = u.get("speaker") or ""
            if not isinstance(speaker, str):
                raise InvalidParameters(f"Utterance {n}: the speaker must be text.")
            clean.append({"speaker": speaker.strip(), "text": u["text"].strip()})
        item: dict[str, Any] = {"utterances": clean}
        for key in ("dialogue", "source"):
            value = payload.get(key)
            if value not in (None, ""):
                if not isinstance(value, str) or len(value) > 200:
                    raise InvalidParameters(f"'{key}' must be text of at most 200 characters.")
                item[key] = value
        return item

    def items_from_dialogues(
        self, parameters: Mapping[str, Any], dialogues: Sequence[DialogueRecord]
    ) -> list[tuple[str, dict[str, Any]]]:
        """One item per dialogue: its utterances with speakers, its key and source
        (``items_add`` checks each payload, naming the dialogue it refuses)."""
        return [
            (
                record.key,
                {
                    "utterances": [
                        {"speaker": u.speaker, "text": u.text} for u in record.utterances
                    ],
                    "dialogue": record.key,
                    "source": record.source,
                },
            )
            for record in dialogues
        ]

    def questions(self, parameters: Mapping[str, Any]) -> list[Question]:
        # The questions are the item's utterances (u0, u1, …); the page draws them itself.
        return []

    def presentation(
        self, parameters: Mapping[str, Any], payload: Mapping[str, Any], seed: str
    ) -> dict[str, Any]:
        return {
            "labels": list(parameters["labels"]),
            "min_seconds": parameters["min_seconds_per_utterance"],
            "instructions": INSTRUCTIONS.format(seconds=parameters["min_seconds_per_utterance"]),
        }

    def clean_answers(
        self, parameters: Mapping[str, Any], answers: Mapping[str, Any]
    ) -> dict[str, Any]:
        errors: dict[str, str] = {}
        values: dict[int, str] = {}
        labels = parameters["labels"]
        for key, value in answers.items():
            match = _KEY.match(str(key))
            if key == "timing":
                continue
            if match is None:
                errors[str(key)[:64]] = gettext("This study asks no such question.")
            elif value in (None, ""):
                errors[str(key)] = gettext("Please choose an emotion for this line.")
            elif value not in labels:
                errors[str(key)] = f"Choose one of {', '.join(labels)}, not {str(value)[:20]!r}."
            else:
                values[int(match[1])] = value
        if not values and not errors:
            errors["u0"] = gettext("Please choose an emotion for every line.")
        if errors:
            raise InvalidAnswer(gettext("Some lines have no valid emotion."), fields=errors)
        return {utterance_key(i): values[i] for i in sorted(values)}

    def item_min_seconds(self, parameters: Mapping[str, Any], payload: Mapping[str, Any]) -> float:
        return float(parameters["min_seconds_per_utterance"]) * len(payload["utterances"])

    def check_item_answers(
        self,
        parameters: Mapping[str, Any],
        payload: Mapping[str, Any],
        answers: Mapping[str, Any],
        *,
        spent_ms: int,
    ) -> None:
        """Refuse a dialogue not labeled line by line, or labeled faster than the rule allows."""
        n = len(payload["utterances"])
        keys = {utterance_key(i) for i in range(n)}
        given = {k for k in answers if _KEY.match(str(k))}
        errors = {
            k: gettext("Please choose an emotion for this line.") for k in sorted(keys - given)
        }
        errors |= {k: gettext("This conversation has no such line.") for k in sorted(given - keys)}
        if errors:
            raise InvalidAnswer(gettext("Please choose an emotion for every line."), fields=errors)
        min_ms = float(parameters["min_seconds_per_utterance"]) * 1000
        if spent_ms < n * min_ms:
            raise InvalidAnswer(
                gettext(
                    "You labeled %(n)s lines in %(spent).1f s. Please take at least "
                    "%(least)g s to think about each line before answering."
                )
                % {"n": n, "spent": spent_ms / 1000, "least": min_ms / 1000}
            )
        timing = answers.get("timing")
        if timing not in (None, ""):
            _timing_check(timing, n, min_ms, spent_ms)

    def clean_gold(
        self, parameters: Mapping[str, Any], gold: Mapping[str, Any]
    ) -> dict[str, list[Any]]:
        if not isinstance(gold, Mapping) or not gold:
            raise InvalidParameters("Gold answers must be a non-empty object {u<i>: [labels]}.")
        cleaned: dict[str, list[Any]] = {}
        for key, accepted in gold.items():
            if not _KEY.match(str(key)):
                raise InvalidParameters(f"Gold answers name {key!r}; use u0, u1, … per line.")
            values = accepted if isinstance(accepted, list) else [accepted]
            bad = [v for v in values if v not in parameters["labels"]]
            if not values or bad:
                raise InvalidParameters(f"Gold answers for {key!r} must be labels of the study.")
            cleaned[str(key)] = list(values)
        return cleaned

    def report(
        self, parameters: Mapping[str, Any], items: pd.DataFrame, judgments: pd.DataFrame
    ) -> Report:
        report = Report(title="Emotion labels of dialogue utterances (EmotionLines)")
        labels = list(parameters["labels"])
        counts = utterance_votes(items, judgments, labels)
        gold = gold_labels(counts, labels, parameters)
        report.tables["distribution"] = label_distribution(
            gold, labels, fallback=parameters["fallback_label"]
        )
        votes = utterance_judgments(judgments, labels)
        report.tables["label_rates"] = label_rates(
            gold,
            labels,
            votes=votes,
            fallback=parameters["fallback_label"],
            threshold=parameters["vote_threshold"],
            n_boot=parameters["n_boot"],
        )
        report.tables["agreement"] = kappa_by_source(
            counts, labels, n_boot=parameters["n_boot"], votes=votes
        )
        threshold = parameters["vote_threshold"]
        need = f"at least {threshold}" if threshold else "an absolute majority (more than half)"
        report.notes.append(
            f"An utterance's label is the one with {need} of its votes, otherwise "
            f"{parameters['fallback_label']} (EmotionLines' rule as its data "
            "applies it). Fleiss' kappa per source over utterances with the usual number of "
            "votes; 95% CI (ci_method) by a bootstrap over dialogues (a dialogue's utterances "
            "share its context and workers), and over workers too when they label several "
            "dialogues (the pigeonhole bootstrap, docs/statistics.md). label_rates: each "
            "label's % of utterances (the distribution's shares) with a 95% CI by the same "
            "rule (ci_method)."
        )
        if not report.tables["distribution"].empty:
            report.figures["distribution"] = distribution_figure(
                report.tables["distribution"],
                labels=[*labels, parameters["fallback_label"]],
                count="utterances",
                agreement=report.tables["agreement"],
                title="Emotion labels of the utterances, per source",
            )
        return report

    def labeled_dialogues(
        self, parameters: Mapping[str, Any], items: pd.DataFrame, judgments: pd.DataFrame
    ) -> list[DialogueRecord]:
        """Return the items' dialogues with gold labels and every worker's vote (pseudonyms)."""
        labels = list(parameters["labels"])
        counts = utterance_votes(items, judgments, labels)
        gold = gold_labels(counts, labels, parameters).set_index(["item", "utterance"])
        by_worker: dict[tuple[str, int], dict[str, str]] = {}
        for row in judgments.itertuples():
            match = _KEY.match(str(row.question))
            if match:
                by_worker.setdefault((row.item, int(match[1])), {})[row.rater] = row.value
        records = []
        for item, payload in zip(items["item"], items["payload"], strict=True):
            utterances = []
            for i, u in enumerate(payload["utterances"]):
                votes = by_worker.get((item, i), {})
                label = gold.loc[(item, i), "label"] if (item, i) in gold.index else ""
                tally = {k: v for k, v in pd.Series(list(votes.values())).value_counts().items()}
                annotations = {"votes": tally, "workers": votes} if votes else {}
                utterances.append(
                    UtteranceRecord(u["speaker"], u["text"], label=label, annotations=annotations)
                )
            records.append(
                DialogueRecord(
                    key=payload.get("dialogue") or item,
                    utterances=utterances,
                    source=payload.get("source", ""),
                    metadata={"campaign_item": item},
                )
            )
        return records

    def simulate_answers(
        self,
        parameters: Mapping[str, Any],
        payload: Mapping[str, Any],
        shown: Mapping[str, Any],
        truth: Mapping[str, Any] | None,
        reliability: Reliability,
        rng: random.Random,
    ) -> dict[str, str]:
        """Label each line from the truth's ``labels``, right with a chance per reliability."""
        labels = list(parameters["labels"])
        true = list((truth or {}).get("labels", []))
        answers = {}
        for i in range(len(payload["utterances"])):
            right = true[i] if i < len(true) and true[i] in labels else None
            if reliability == "spammer" or right is None:
                answers[utterance_key(i)] = rng.choice(labels)
            elif rng.random() < _SIM_ACCURACY[reliability]:
                answers[utterance_key(i)] = right
            else:  # a confusion: neutral for an emotion, a near emotion otherwise
                others = [x for x in labels if x != right]
                answers[utterance_key(i)] = (
                    labels[0] if right != labels[0] and rng.random() < 0.5 else rng.choice(others)
                )
        return answers


def _buckets_clean(buckets: Any) -> list[list[Any]]:
    """Return pay buckets as [[low, high, "pay"]] sorted; raise ValueError saying what is wrong."""
    if not isinstance(buckets, list):
        raise ValueError("Give a list of [lowest, highest, pay] (utterances → pay per dialogue).")
    clean = []
    for b in buckets:
        if not (isinstance(b, list | tuple) and len(b) == 3):
            raise ValueError(f"{b!r} is not [lowest, highest, pay].")
        low, high, pay = b
        try:
            amount = Decimal(str(pay))
        except InvalidOperation:
            raise ValueError(f"{pay!r} is not an amount of money.") from None
        if (
            not all(isinstance(x, int) and not isinstance(x, bool) for x in (low, high))
            or not 1 <= low <= high
            or amount <= 0
        ):
            raise ValueError(f"{b!r}: need 1 ≤ lowest ≤ highest and pay > 0.")
        clean.append([low, high, f"{amount.quantize(Decimal('0.01'))}"])
    clean.sort()
    for (_, high, _), (low, _, _) in zip(clean, clean[1:], strict=False):
        if low <= high:
            raise ValueError("Pay buckets overlap.")
    return clean


def _timing_check(timing: Any, n: int, min_ms: float, spent_ms: int) -> None:
    """Check the page's [[shown_ms, answered_ms], …] per utterance; raise InvalidAnswer."""
    if isinstance(timing, str):
        try:
            timing = json.loads(timing)
        except json.JSONDecodeError:
            raise InvalidAnswer(
                gettext("The page sent unreadable answer times; please reload.")
            ) from None
    if (
        not isinstance(timing, list)
        or len(timing) != n
        or not all(
            isinstance(t, list)
            and len(t) == 2
            and all(
                isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)
                for x in t
            )
            for t in timing
        )
    ):
        raise InvalidAnswer(gettext("The page sent answer times that do not fit the conversation."))
    errors = {}
    previous = 0.0
    for i, (shown, answered) in enumerate(timing):
        if answered - shown < min_ms:
            errors[utterance_key(i)] = gettext(
                "Line %(line)s was answered %(after).1f s after it was shown; please take at "
                "least %(least)g s."
            ) % {"line": i + 1, "after": max(answered - shown, 0) / 1000, "least": min_ms / 1000}
        elif shown < previous or answered > spent_ms + TIMING_SLACK_MS:
            errors[utterance_key(i)] = gettext(
                "The time of line %(line)s is not possible; please reload."
            ) % {"line": i + 1}
        previous = answered
    if errors:
        raise InvalidAnswer(
            gettext("Please take at least %(least)g s to think about each line.")
            % {"least": min_ms / 1000},
            fields=errors,
        )
