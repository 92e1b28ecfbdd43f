"""Contextual emotion labeling of a 3-turn dialogue (PROTOCOLS.md §5; SemEval-2019 EmoContext).

One item is a dialogue of three turns (user, agent, user); the worker labels the last turn as
happy, sad, angry or others, in the context of the first two. Seven judges per item; the label
is the majority (a tie stays unlabeled and is counted in the report, never broken at random).
The report gives the label distribution and Fleiss' kappa with a bootstrap CI (published 0.58
train / 0.59 evaluation). Items usually come from candidate mining (``annotation.mining``),
which sends only likely emotional dialogues to the judges.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, gettext_noop

from annotation.protocols.base import (
    DialogueItems,
    GoldChecks,
    Judged,
    Question,
    Reliability,
    Report,
    Simulated,
    label_simulated,
)
from corpora.records import EMOCONTEXT_LABELS, DialogueRecord, UtteranceRecord
from evalsite.errors import InvalidAnswer, InvalidParameters
from evalstats import aggregation, reports
from evalstats.emotion_labels import distribution_figure, kappa_by_source, label_rates
from evalstats.options import report_options

QUESTION = gettext_noop(
    "Read the conversation. Which emotion does the user express in their last message, given "
    "the conversation before it?"
)
SPEAKERS = ("user", "agent", "user")
# The labels as a worker reads them (translated on the page; a researcher's own as written).
LABEL_NAMES = (
    gettext_noop("Happy"),
    gettext_noop("Sad"),
    gettext_noop("Angry"),
    gettext_noop("Others"),
)


class EmoContextProtocol(DialogueItems, GoldChecks, Simulated, Judged):
    """Label the last turn of a 3-turn dialogue: happy, sad, angry or others."""

    name = "emocontext"
    title = "Contextual emotion of a 3-turn dialogue (EmoContext)"
    template_name = "emocontext/task.html"
    instructions = gettext_lazy(
        "Read the short conversation between a user and a chat agent. Choose the "
        "emotion the **user** expresses in their **last message**: happy, sad, angry, or others "
        "when it is none of these."
    )
    judge_prompt = "{questions}"
    judge_prompt_version = "emocontext-v1"
    default_redundancy = 7

    def default_parameters(self) -> dict[str, Any]:
        return {"labels": list(EMOCONTEXT_LABELS), "question": QUESTION, "n_boot": 1000}

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
        if not isinstance(cleaned["question"], str) or not cleaned["question"].strip():
            errors["question"] = "Give the question's text."
        n_boot = cleaned["n_boot"]
        if isinstance(n_boot, bool) or not isinstance(n_boot, int) or not 0 <= n_boot <= 100_000:
            errors["n_boot"] = "Must be a whole number from 0 to 100000."
        if errors:
            raise InvalidParameters("Invalid EmoContext parameters.", fields=errors)
        return cleaned

    def clean_item(self, payload: Mapping[str, Any]) -> dict[str, Any]:
        if not isinstance(payload, Mapping):
            raise InvalidParameters("An item must be a JSON object.")
        turns = payload.get("turns")
        if (
            not isinstance(turns, list)
            or len(turns) != 3
            or not all(isinstance(t, str) and t.strip() for t in turns)
        ):
            raise InvalidParameters("'turns' must be the dialogue's 3 non-empty turns.")
        item: dict[str, Any] = {"turns": [t.strip() for t in turns]}
        dialogue = payload.get("dialogue")
        if dialogue not in (None, ""):
            if not isinstance(dialogue, str) or len(dialogue) > 200:
                raise InvalidParameters("'dialogue' must be text of at most 200 characters.")
            item["dialogue"] = dialogue
        return item

    def items_from_dialogues(
        self, parameters: Mapping[str, Any], dialogues: Sequence[DialogueRecord]
    ) -> list[tuple[str, dict[str, Any]]]:
        """One item per 3-turn dialogue (user, agent, user): the last turn is labeled."""
        items = []
        for record in dialogues:
            if len(record.utterances) != 3:
                raise InvalidParameters(
                    f"Dialogue {record.key!r} has {len(record.utterances)} turns; an EmoContext "
                    "item is a 3-turn dialogue."
                )
            turns = [u.text for u in record.utterances]
            items.append((record.key, {"turns": turns, "dialogue": record.key}))
        return items

    def questions(self, parameters: Mapping[str, Any]) -> list[Question]:
        choices = tuple((label, label.capitalize()) for label in parameters["labels"])
        return [Question(key="label", text=parameters["question"], choices=choices)]

    def clean_answers(
        self, parameters: Mapping[str, Any], answers: Mapping[str, Any]
    ) -> dict[str, Any]:
        errors: dict[str, str] = {}
        label = answers.get("label")
        if label in (None, ""):
            errors["label"] = _("Please choose the emotion of the last message.")
        elif label not in parameters["labels"]:
            errors["label"] = f"Choose one of {', '.join(parameters['labels'])}."
        for extra in sorted(set(answers) - {"label"}):
            errors[str(extra)[:64]] = _("This study asks no such question.")
        if errors:
            raise InvalidAnswer(_("Please choose an emotion."), fields=errors)
        return {"label": label}

    def report(
        self, parameters: Mapping[str, Any], items: pd.DataFrame, judgments: pd.DataFrame
    ) -> Report:
        report = Report(title="Emotion of the last turn (EmoContext)")
        labels = list(parameters["labels"])
        votes = _votes(judgments)
        gold, raters, method = (
            reports.labels_aggregated(votes)
            if len(votes)
            else (emocontext_labels(judgments), None, "")
        )
        n_items = len(gold)
        tied = int(gold["tied"].sum()) if n_items else 0
        shares = gold["label"].value_counts().reindex(labels, fill_value=0) / max(n_items, 1) * 100
        report.tables["distribution"] = pd.DataFrame(
            [{"source": "all", "items": n_items, **shares.to_dict(), "tied": tied}]
        )
        if n_items:
            report.tables["label_rates"] = _rates(gold, votes, labels, parameters["n_boot"])
        counts = _counts(judgments, labels)
        report.tables["agreement"] = kappa_by_source(
            counts.assign(source=""), labels, n_boot=parameters["n_boot"], votes=votes
        ).replace({"source": {"(none)": "all"}})
        report.tables["gold"] = gold.rename_axis("item").reset_index().assign(method=method)
        if raters is not None:
            report.tables["raters"] = raters
        report.notes.append(
            f"Each item's label: {method or 'majority vote'}; "
            f"{tied} item(s) without a single best label have none. Fleiss' kappa over items "
            "with the usual number of judges; 95% CI (ci_method) by a bootstrap over items, and "
            "over workers too when they judge several items (the pigeonhole bootstrap)."
        )
        if n_items:
            report.figures["distribution"] = distribution_figure(
                report.tables["distribution"],
                labels=labels,
                count="items",
                agreement=report.tables["agreement"],
                title="EmoContext: the label of each conversation's last turn",
            )
        return report

    def labeled_dialogues(
        self, parameters: Mapping[str, Any], items: pd.DataFrame, judgments: pd.DataFrame
    ) -> list[DialogueRecord]:
        """Return the items' dialogues with the label (by the report options' ``aggregate``:
        the majority by default) and every judge's vote."""
        gold = emocontext_labels(judgments)
        records = []
        for item, payload in zip(items["item"], items["payload"], strict=True):
            votes = judgments[judgments["item"] == item]
            label = ""
            if item in gold.index and not gold.loc[item, "tied"]:
                label = str(gold.loc[item, "label"])
            utterances = [
                UtteranceRecord(s, t) for s, t in zip(SPEAKERS, payload["turns"], strict=True)
            ]
            utterances[-1].label = label
            if len(votes):
                utterances[-1].annotations = {
                    "votes": {str(k): int(v) for k, v in votes["value"].value_counts().items()},
                    "workers": dict(zip(votes["rater"], votes["value"], strict=True)),
                }
            records.append(
                DialogueRecord(
                    key=payload.get("dialogue") or item,
                    utterances=utterances,
                    emotion=label,
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
        """Answer the truth's ``label`` with a chance per reliability, else another label."""
        right = (truth or {}).get("label")
        return {"label": label_simulated(list(parameters["labels"]), right, reliability, rng)}


def emocontext_labels(judgments: pd.DataFrame) -> pd.DataFrame:
    """Return per item the ``label`` (missing when tied), ``tied`` and ``n_votes``.

    The label is the majority's, or Dawid–Skene's or MACE's by the report options'
    ``aggregate`` (``aggregation.labels_aggregate``).
    """
    if judgments.empty:
        return pd.DataFrame(columns=["label", "tied", "n_votes"]).rename_axis("item")
    options = report_options()
    labels, _ = aggregation.labels_aggregate(
        _votes(judgments), options.aggregate, seed=options.seed
    )
    return labels


def _rates(gold: pd.DataFrame, votes: pd.DataFrame, labels: list[str], n_boot: int) -> pd.DataFrame:
    """Return ``label_rates`` of the items' labels (the distribution's shares, ``tied`` for
    none): the two-way interval re-labels resampled crowds by the majority, so it is used
    only with the majority vote; Dawid-Skene's and MACE's shares get the item bootstrap."""
    items = gold.rename_axis("item").reset_index()
    items = items.assign(
        utterance=0,
        source="",
        label=items["label"].where(~items["tied"].astype(bool), "tied").astype(str),
    )
    majority = report_options().aggregate == "majority"
    return label_rates(
        items,
        labels,
        votes=votes.assign(utterance=0) if majority else None,
        fallback="tied",
        threshold=1,
        n_boot=n_boot,
    ).replace({"source": {"(none)": "all"}})


def _votes(judgments: pd.DataFrame) -> pd.DataFrame:
    if judgments.empty:
        return pd.DataFrame(columns=["item", "rater", "value"])
    return judgments[judgments["question"] == "label"][["item", "rater", "value"]]


def _counts(judgments: pd.DataFrame, labels: list[str]) -> pd.DataFrame:
    if judgments.empty:
        return pd.DataFrame(columns=["item", *labels])
    votes = judgments[(judgments["question"] == "label") & judgments["value"].isin(labels)]
    table = votes.groupby(["item", "value"]).size().unstack("value", fill_value=0)
    table = table.reindex(columns=labels, fill_value=0).reset_index()
    table.columns.name = None
    return table
