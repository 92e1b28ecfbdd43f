"""A generic categorical label: any label set, one item = one text or one conversation.

For studies that are not one of the published protocols: the researcher names the labels (2 to
50) and the question; an item is ``{"text": ...}`` or ``{"context": [turns]}``; the worker
chooses one label. The report gives each item's label (the majority vote by default, or
Dawid–Skene or MACE by the report's ``aggregate`` option, with each rater's estimated
reliability), the label distribution, and the agreement: Fleiss' kappa (with the bootstrap
over items the emotion protocols use) and Krippendorff's nominal alpha (the bootstrap over
items of the other reports).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

import pandas as pd
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from annotation.protocols.base import (
    GoldChecks,
    Judged,
    Question,
    Reliability,
    Report,
    Simulated,
    context_clean,
    label_simulated,
)
from evalsite.errors import InvalidAnswer, InvalidParameters
from evalstats import reports
from evalstats.emotion_labels import distribution_figure, kappa_by_source

MAX_LABELS = 50
MAX_LABEL_CHARS = 100
MAX_TEXT_CHARS = 20_000


class CategoricalProtocol(GoldChecks, Simulated, Judged):
    """Choose one of the researcher's labels for a text or a conversation."""

    name = "categorical"
    title = "Categorical label (any label set)"
    template_name = "categorical/task.html"
    judge_prompt = "{questions}"
    judge_prompt_version = "categorical-v1"
    default_redundancy = 5
    parameter_help = {
        "labels": "The answers a worker chooses from: 2 to 50 different labels, as written "
        "(evalsite's generic protocol; no published default).",
        "question": "The one question asked about every item.",
        "instructions": "Optional: what to read and how to choose, shown before the study "
        "(Markdown) when the campaign has no instructions of its own.",
    }

    def default_parameters(self) -> dict[str, Any]:
        return {
            "labels": ["positive", "neutral", "negative"],
            "question": gettext_noop("Which label fits best?"),
            "instructions": "",
        }

    def default_instructions(self, parameters: Mapping[str, Any]) -> str:
        """Return the researcher's instructions of the parameters: a label set has no
        published wording."""
        return str(parameters.get("instructions") or "")

    def clean_parameters(self, parameters: Mapping[str, Any]) -> dict[str, Any]:
        cleaned = self.parameters_merged(parameters)
        errors: dict[str, str] = {}
        labels = cleaned["labels"]
        if not isinstance(labels, list) or not all(isinstance(x, str) for x in labels):
            errors["labels"] = "Give the labels as a list of texts."
        else:
            labels = [x.strip() for x in labels]
            if not all(labels):
                errors["labels"] = "A label must not be empty."
            elif len(set(labels)) != len(labels):
                twice = sorted({x for x in labels if labels.count(x) > 1})
                errors["labels"] = f"Labels must differ; given twice: {', '.join(twice)}."
            elif not 2 <= len(labels) <= MAX_LABELS:
                errors["labels"] = f"Give 2 to {MAX_LABELS} labels, not {len(labels)}."
            elif any(len(x) > MAX_LABEL_CHARS for x in labels):
                errors["labels"] = f"A label has at most {MAX_LABEL_CHARS} characters."
            cleaned["labels"] = labels
        if not isinstance(cleaned["question"], str) or not cleaned["question"].strip():
            errors["question"] = "Give the question's text."
        if not isinstance(cleaned["instructions"], str):
            errors["instructions"] = "Give the instructions as text (or leave them empty)."
        if errors:
            raise InvalidParameters("Invalid categorical-label parameters.", fields=errors)
        return cleaned

    def clean_item(self, payload: Mapping[str, Any]) -> dict[str, Any]:
        if not isinstance(payload, Mapping):
            raise InvalidParameters("An item must be a JSON object.")
        unknown = sorted(map(str, set(payload) - {"text", "context"}))
        if unknown:
            raise InvalidParameters(
                f"Unknown item key(s): {', '.join(unknown)}; an item is {{'text': ...}} or "
                "{'context': [turns]}."
            )
        if ("text" in payload) == ("context" in payload):
            raise InvalidParameters("An item has either 'text' or 'context' (a list of turns).")
        if "context" in payload:
            return {"context": context_clean(payload)}
        text = payload["text"]
        if not isinstance(text, str) or not text.strip() or len(text) > MAX_TEXT_CHARS:
            raise InvalidParameters(
                f"'text' must be non-empty text of at most {MAX_TEXT_CHARS} characters."
            )
        return {"text": text.strip()}

    def questions(self, parameters: Mapping[str, Any]) -> list[Question]:
        choices = tuple((label, label) for label in parameters["labels"])
        return [Question(key="label", text=parameters["question"], choices=choices)]

    def clean_answers(
        self, parameters: Mapping[str, Any], answers: Mapping[str, Any]
    ) -> dict[str, Any]:
        errors: dict[str, str] = {}
        label = answers.get("label")
        if label in (None, ""):
            errors["label"] = _("Please choose a label.")
        elif not isinstance(label, str) or label not in parameters["labels"]:
            errors["label"] = f"Choose one of {', '.join(parameters['labels'])}."
        for extra in sorted(map(str, set(answers) - {"label"})):
            errors[extra[:64]] = _("This study asks no such question.")
        if errors:
            raise InvalidAnswer(_("Please choose a label."), fields=errors)
        return {"label": label}

    def report(
        self, parameters: Mapping[str, Any], items: pd.DataFrame, judgments: pd.DataFrame
    ) -> Report:
        report = Report(title="Categorical labels")
        labels = list(parameters["labels"])
        votes = _votes(judgments, labels)
        aggregated, raters, method = reports.labels_aggregated(votes)
        n_items = len(aggregated)
        tied = int(aggregated["tied"].sum()) if n_items else 0
        counts = aggregated["label"].value_counts().reindex(labels, fill_value=0)
        shares = counts / max(n_items, 1) * 100
        report.tables["distribution"] = pd.DataFrame(
            [{"method": method, "items": n_items, **shares.to_dict(), "unlabeled": tied}]
        )
        report.tables["labels"] = aggregated.rename_axis("item").reset_index().assign(method=method)
        counts_table = _counts(votes, labels)
        by_source = kappa_by_source(counts_table.assign(source=""), labels)
        kappa = by_source.rename(columns={"utterances": "items"}).drop(columns="source")
        alpha = reports.agreement_table(votes.assign(group="label"), level="nominal")
        report.tables["agreement"] = pd.concat(
            [
                kappa.assign(statistic="Fleiss' kappa").rename(columns={"kappa": "value"}),
                alpha.assign(statistic="Krippendorff's alpha (nominal)").rename(
                    columns={"alpha": "value"}
                )[["statistic", "items", "value", "ci_low", "ci_high", "note"]],
            ],
            ignore_index=True,
        )[["statistic", "items", "value", "ci_low", "ci_high", "note"]]
        if raters is not None:
            report.tables["raters"] = raters
        report.notes.append(
            f"Each item's label: {method}; {tied} item(s) without a single best label are "
            "left unlabeled. Fleiss' kappa over items with the usual number of judges, "
            "Krippendorff's alpha over all; intervals by a bootstrap over items."
        )
        if n_items:
            report.figures["distribution"] = distribution_figure(
                report.tables["distribution"].assign(source="all"),
                labels=labels,
                count="items",
                agreement=by_source,
                title=f"Categorical labels of the items, by {method}",
            )
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
        """Answer the truth's ``label`` with a chance per reliability, else another label."""
        right = (truth or {}).get("label")
        return {"label": label_simulated(list(parameters["labels"]), right, reliability, rng)}


def _votes(judgments: pd.DataFrame, labels: list[str]) -> pd.DataFrame:
    if judgments.empty:
        return pd.DataFrame(columns=["item", "rater", "value"])
    part = judgments[(judgments["question"] == "label") & judgments["value"].isin(labels)]
    return part[["item", "rater", "value"]].reset_index(drop=True)


def _counts(votes: pd.DataFrame, labels: list[str]) -> pd.DataFrame:
    if votes.empty:
        return pd.DataFrame(columns=["item", *labels])
    table = votes.groupby(["item", "value"]).size().unstack("value", fill_value=0)
    table = table.reindex(columns=labels, fill_value=0).reset_index()
    table.columns.name = None
    return table
