"""Likert ratings of single model responses (PROTOCOLS.md §2; Rashkin et al. 2019).

A worker sees a dialogue context and one model response and rates empathy, relevance and
fluency on 1–5. The report gives mean ± SEM and n per model and aspect, marks the reference
model and highlights models more than ``highlight_sem`` SEMs above it.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, gettext_noop

from annotation.protocols.base import (
    GoldChecks,
    Judged,
    Planned,
    Question,
    Reliability,
    Report,
    ResponseItems,
    Simulated,
    context_clean,
)
from annotation.protocols.likert.planner import likert_design
from evalsite.errors import InvalidAnswer, InvalidParameters
from evalstats import figures, reports, uncertainty
from evalstats.planner import LikertDesign

# The paper-convention columns say what they are.
PAPER_LABEL = "± 1 SEM, as in the paper; does not account for raters"
# How often the 2-SEM mark and Holm's decision call a model better when it is not (per
# comparison; 100 items per model, 3 aspects, a pool of 10 workers): bench/planner.py at
# 1,000 studies, docs/statistics.md, "Planner".
PAPER_FALSE_POSITIVES = 0.075
HOLM_FALSE_POSITIVES = 0.004

# The published wording (Rashkin et al. 2019, §5.2 and the crowdsourcing appendix); marked
# for translation and translated on the worker's page, where a researcher's own wording
# stays as written (docs/protocols.md, "Languages").
ASPECTS: list[dict[str, str]] = [
    {
        "key": "empathy",
        "name": gettext_noop("Empathy/Sympathy"),
        "question": gettext_noop(
            "Did the responses show understanding of the feelings of the person "
            "talking about their experience?"
        ),
    },
    {
        "key": "relevance",
        "name": gettext_noop("Relevance"),
        "question": gettext_noop(
            "Did the responses seem appropriate to the conversation? Were they on-topic?"
        ),
    },
    {
        "key": "fluency",
        "name": gettext_noop("Fluency"),
        "question": gettext_noop(
            "Could you understand the responses? Did the language seem accurate?"
        ),
    },
]
SCALE: dict[str, Any] = {
    "min": 1,
    "max": 5,
    "anchors": {
        "1": gettext_noop("not at all"),
        "3": gettext_noop("somewhat"),
        "5": gettext_noop("very much"),
    },
}
# Standard deviation of a simulated worker's rating around the item's true score.
_SIM_NOISE = {"good": 0.5, "noisy": 1.3}


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _digits(text: str) -> bool:
    """Tell whether ``text`` is ASCII digits: ``str.isdigit`` also takes '²' and '①',
    which ``int()`` refuses."""
    return text.isascii() and text.isdigit()


class LikertProtocol(ResponseItems, GoldChecks, Simulated, Judged, Planned):
    """Rate one response on several 1–5 scales."""

    name = "likert"
    title = "Likert ratings (empathy, relevance, fluency)"
    template_name = "likert/task.html"
    instructions = gettext_lazy(
        "Read the conversation, then rate the **last response** on each question from 1 "
        "(not at all) to 5 (very much). There are no right or wrong answers: we want your honest "
        "impression."
    )
    judge_prompt = "Rate the last response on each question.\n{questions}"
    judge_prompt_version = "likert-v1"
    planner_sizing = "model"
    planner_design_type = LikertDesign
    report_payload_keys = ("model",)
    parameter_help = {
        "aspects": "Empathy/Sympathy, Relevance and Fluency in the published wording "
        "(PROTOCOLS.md §2; Rashkin et al. 2019, §5.2).",
        "scale": "1–5: 1 not at all, 3 somewhat, 5 very much (PROTOCOLS.md §2).",
        "min_ratings_per_model": "At least 100 ratings per model (PROTOCOLS.md §2).",
        "reference_model": "The model others are compared with; results more than "
        "highlight_sem SEMs above it are highlighted. Empty: none (PROTOCOLS.md §2).",
        "highlight_sem": "Highlight results more than 2 SEM above the reference (PROTOCOLS.md §2).",
    }

    def default_parameters(self) -> dict[str, Any]:
        return {
            "aspects": [dict(a) for a in ASPECTS],
            "scale": {**SCALE, "anchors": dict(SCALE["anchors"])},
            "min_ratings_per_model": 100,
            "reference_model": "",
            "highlight_sem": 2.0,
        }

    def planner_design(
        self,
        parameters: Mapping[str, Any],
        *,
        redundancy: int,
        sizes: Mapping[str, int],
        n_boot: int,
    ) -> LikertDesign:
        return likert_design(parameters, redundancy=redundancy, sizes=sizes, n_boot=n_boot)

    def clean_parameters(self, parameters: Mapping[str, Any]) -> dict[str, Any]:
        cleaned = self.parameters_merged(parameters)
        errors: dict[str, str] = {}

        aspects = cleaned["aspects"]
        if not isinstance(aspects, list) or not aspects:
            errors["aspects"] = "Give at least one aspect."
        else:
            keys = []
            for i, aspect in enumerate(aspects):
                ok = isinstance(aspect, Mapping) and all(
                    isinstance(aspect.get(f), str) and str(aspect[f]).strip()
                    for f in ("key", "name", "question")
                )
                if not ok or not str(aspect["key"]).isidentifier():
                    errors["aspects"] = (
                        f"Aspect {i + 1} needs non-empty 'key' (letters, digits, _), "
                        "'name' and 'question'."
                    )
                    break
                keys.append(aspect["key"])
            if "aspects" not in errors and len(set(keys)) != len(keys):
                errors["aspects"] = "Aspect keys must be unique."

        scale = cleaned["scale"]
        if not (
            isinstance(scale, Mapping)
            and _is_int(scale.get("min"))
            and _is_int(scale.get("max"))
            and scale["min"] < scale["max"]
            and scale["max"] - scale["min"] <= 20
            and isinstance(scale.get("anchors", {}), Mapping)
        ):
            errors["scale"] = "The scale needs integer 'min' < 'max' (at most 21 points)."
        elif any(
            not (_digits(str(k).lstrip("-")) and scale["min"] <= int(k) <= scale["max"])
            for k in scale.get("anchors", {})
        ):
            errors["scale"] = "Scale anchors must be points of the scale."

        n_min = cleaned["min_ratings_per_model"]
        if not _is_int(n_min) or n_min < 1:
            errors["min_ratings_per_model"] = "Must be a positive integer."
        if not isinstance(cleaned["reference_model"], str):
            errors["reference_model"] = "Must be a model name (or empty)."
        k = cleaned["highlight_sem"]
        if isinstance(k, bool) or not isinstance(k, int | float) or not 0 < k <= 10:
            errors["highlight_sem"] = "Must be a number of SEMs between 0 and 10."
        if errors:
            raise InvalidParameters("Invalid Likert parameters.", fields=errors)
        return cleaned

    def clean_item(self, payload: Mapping[str, Any]) -> dict[str, Any]:
        context = context_clean(payload)
        for f in ("response", "model"):
            if not isinstance(payload.get(f), str) or not payload[f].strip():
                raise InvalidParameters(f"'{f}' must be a non-empty string.")
        example = payload.get("example", "")
        if not isinstance(example, str):
            raise InvalidParameters("'example' must be a string.")
        return {
            "context": context,
            "response": payload["response"].strip(),
            "model": payload["model"].strip(),
            "example": example,
        }

    def items_build(
        self,
        parameters: Mapping[str, Any],
        examples: Sequence[tuple[str, Sequence[str]]],
        responses: Mapping[str, Sequence[str]],
    ) -> tuple[list[tuple[str, dict[str, Any]]], int]:
        return likert_items(examples, responses), 0

    def questions(self, parameters: Mapping[str, Any]) -> list[Question]:
        scale = parameters["scale"]
        anchors = scale.get("anchors", {})
        # The anchors in the active language (the published ones; a researcher's own as written).
        choices = tuple(
            (str(v), f"{v} – {_(anchors[str(v)])}" if str(v) in anchors else str(v))
            for v in range(scale["min"], scale["max"] + 1)
        )
        return [
            Question(key=a["key"], text=a["question"], choices=choices, help=a["name"])
            for a in parameters["aspects"]
        ]

    def clean_answers(
        self, parameters: Mapping[str, Any], answers: Mapping[str, Any]
    ) -> dict[str, Any]:
        scale = parameters["scale"]
        keys = [a["key"] for a in parameters["aspects"]]
        errors: dict[str, str] = {}
        cleaned: dict[str, int] = {}
        for key in keys:
            raw = answers.get(key)
            if raw is None or raw == "":
                errors[key] = _("Please choose a rating.")
                continue
            value: int | None = None
            if _is_int(raw):
                value = raw
            elif isinstance(raw, str) and _digits(raw.strip().lstrip("-")):
                value = int(raw.strip())
            if value is None:
                errors[key] = f"The rating must be a whole number, not {str(raw)[:20]!r}."
            elif not scale["min"] <= value <= scale["max"]:
                errors[key] = f"The rating must be between {scale['min']} and {scale['max']}."
            else:
                cleaned[key] = value
        for extra in sorted(set(answers) - set(keys)):
            errors[str(extra)[:64]] = _("This study asks no such question.")
        if errors:
            raise InvalidAnswer(_("Some answers are missing or not valid."), fields=errors)
        return cleaned

    def report(
        self, parameters: Mapping[str, Any], items: pd.DataFrame, judgments: pd.DataFrame
    ) -> Report:
        report = Report(
            title="Likert ratings: mean with 95% CI per model and aspect "
            f"(beside it mean {PAPER_LABEL})"
        )
        aspects = {a["key"]: a["name"] for a in parameters["aspects"]}
        models = items.assign(model=items["payload"].map(lambda p: p["model"]))[["item", "model"]]
        data = judgments[judgments["question"].isin(list(aspects))].merge(models, on="item")
        data = data.assign(value=data["value"].astype(float))
        scores = likert_scores(
            data,
            reference=parameters["reference_model"],
            highlight_sem=float(parameters["highlight_sem"]),
        )
        scores = _with_intervals(scores, data, reference=parameters["reference_model"])
        order = {key: i for i, key in enumerate(aspects)}
        scores = scores.sort_values(
            ["aspect", "model"],
            key=lambda c: c.map(order) if c.name == "aspect" else c,
            ignore_index=True,
        )
        scores["aspect"] = scores["aspect"].map(aspects)
        n_min = int(parameters["min_ratings_per_model"])
        report.tables["scores"] = scores
        report.tables["summary"] = likert_summary(scores)
        report.tables["agreement"] = reports.agreement_table(
            data.rename(columns={"question": "group"}), level="ordinal", names=aspects
        )
        per_model = data.groupby("model")["item"].nunique()
        ratings = data.drop_duplicates(["item", "rater"]).groupby("model").size()
        few = sorted(m for m, n in ratings.items() if n < n_min)
        if few:
            report.notes.append(
                f"Fewer than {n_min} ratings (the protocol's minimum) for: {', '.join(few)}."
            )
        if parameters["reference_model"] and parameters["reference_model"] not in per_model:
            report.notes.append(
                f"The reference model {parameters['reference_model']!r} has no ratings."
            )
        report.notes.extend(_interval_notes(parameters))
        if not scores.empty:
            report.figures["likert"] = likert_figure(
                scores, scale=parameters["scale"], reference=parameters["reference_model"]
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
        lo, hi = parameters["scale"]["min"], parameters["scale"]["max"]
        answers = {}
        for aspect in parameters["aspects"]:
            key = aspect["key"]
            if reliability == "spammer":
                value = rng.randint(lo, hi)
            else:
                centre = float((truth or {}).get(key, (lo + hi) / 2))
                value = round(rng.gauss(centre, _SIM_NOISE[reliability]))
            answers[key] = str(min(hi, max(lo, value)))
        return answers


def _interval_notes(parameters: Mapping[str, Any]) -> list[str]:
    """Return the report's notes on its intervals, its marks and the paper's columns."""
    notes: list[str] = []
    notes.append(
        "95% CIs: crossed items×raters (the raters' leniency and each item's ratings "
        "counted; docs/statistics.md), t on Satterthwaite's degrees of freedom. "
        "Highlighted (*): above the reference model on the same aspect, Holm-adjusted "
        "p < 0.05 over all comparisons of this report (diff, p_holm). Columns "
        f"'{PAPER_LABEL}' (ED): mean ± 1 SEM over ratings taken as independent, * more than "
        f"{parameters['highlight_sem']} of its own SEMs above the reference "
        "(paper_highlighted)."
    )
    if float(parameters["highlight_sem"]) == 2.0:
        notes.append(
            "With no true difference and a pool of workers, the paper's 2-SEM * marks a "
            f"model better in {PAPER_FALSE_POSITIVES:.1%} of comparisons, Holm's in "
            f"{HOLM_FALSE_POSITIVES:.1%} (simulated: docs/statistics.md, 'Planner')."
        )
    return notes


def likert_scores(data: pd.DataFrame, *, reference: str, highlight_sem: float) -> pd.DataFrame:
    """Return mean, SEM and n per (model, question) from ratings with ``model``, ``value``.

    The SEM is the sample standard deviation (ddof=1) over the square root of n; it is NaN
    for n = 1, where it is undefined. A model is highlighted when its mean exceeds the
    reference model's mean on the same question by more than ``highlight_sem`` of its SEMs.
    """
    columns = ["model", "aspect", "n", "mean", "sd", "sem", "reference", "highlighted"]
    if data.empty:
        return pd.DataFrame(columns=columns)
    grouped = data.groupby(["model", "question"])["value"]
    scores = grouped.agg(n="count", mean="mean", sd="std").reset_index()
    scores = scores.rename(columns={"question": "aspect"})
    scores["sem"] = scores["sd"] / np.sqrt(scores["n"])
    scores["reference"] = scores["model"] == reference
    ref_mean = scores[scores["reference"]].set_index("aspect")["mean"]
    above = scores["mean"] - scores["aspect"].map(ref_mean) > highlight_sem * scores["sem"]
    scores["highlighted"] = above.fillna(False).astype(bool) & ~scores["reference"]
    return scores[columns].sort_values(["aspect", "model"], ignore_index=True)


def _with_intervals(scores: pd.DataFrame, data: pd.DataFrame, *, reference: str) -> pd.DataFrame:
    """Add the crossed 95% CIs and Holm decisions to the paper-style scores (same rows).

    The paper's 2-SEM mark becomes ``paper_highlighted``; ``highlighted`` is Holm's decision.
    """
    columns = ["model", "aspect", "n", "mean", "ci_low", "ci_high", "ci_method", "diff"]
    columns += ["diff_low", "diff_high", "p", "p_holm", "highlighted", "reference"]
    columns += ["sd", "sem", "paper_highlighted"]
    if scores.empty:
        return pd.DataFrame(columns=columns)
    ratings = data.rename(columns={"question": "aspect"})
    intervals = uncertainty.mean_comparisons(ratings, reference=reference or None)
    merged = scores.rename(columns={"highlighted": "paper_highlighted"}).merge(
        intervals.drop(columns="better"), on=["model", "aspect"], how="left"
    )
    merged["highlighted"] = (
        (merged["p_holm"] < 0.05) & (merged["diff"] > 0) & ~merged["reference"].astype(bool)
    )
    return merged[columns]


def likert_figure(
    scores: pd.DataFrame, *, scale: Mapping[str, Any], reference: str
) -> figures.ReportFigure:
    """Draw the mean rating per aspect and model with its interval and n (the reference
    model hatched); the alt text names each aspect's highest and lowest model."""
    lo, hi = scale["min"], scale["max"]
    alt = " ".join(
        figures.extremes_text(
            part,
            name="model",
            value="mean",
            low="ci_low",
            high="ci_high",
            n="n",
            on=f" on {a}",
            n_unit="ratings",
        )
        for a, part in scores.groupby("aspect", sort=False)
    )
    return figures.bar_figure(
        scores,
        group="aspect",
        bar="model",
        value="mean",
        n="n",
        interval=("ci_low", "ci_high"),
        title=f"Mean rating per model and aspect ({lo}–{hi} scale)",
        alt=f"Bar chart of the mean {lo}–{hi} rating per model and aspect. {alt}",
        ylabel=f"mean rating ({figures.ci_name()})",
        note=f"Error bars: {figures.ci_name()}, {figures.methods(scores['ci_method'])}. "
        "n above each bar: ratings.",
        ylim=(lo, hi),
        marked=reference,
    )


def likert_summary(scores: pd.DataFrame) -> pd.DataFrame:
    """Pivot scores to one row per model: per aspect "mean [95% CI] (n)" with Holm's mark,
    and beside it the paper's convention "mean ± SEM (n)" with its 2-SEM mark, labelled
    ``PAPER_LABEL``."""

    def cell(row: pd.Series) -> str:
        ci = "n/a" if math.isnan(row["ci_low"]) else f"{row['ci_low']:.2f}, {row['ci_high']:.2f}"
        mark = "*" if row["highlighted"] else ""
        return f"{row['mean']:.2f} [{ci}] (n={row['n']}){mark}"

    def paper(row: pd.Series) -> str:
        sem = "n/a" if math.isnan(row["sem"]) else f"{row['sem']:.2f}"
        mark = "*" if row["paper_highlighted"] else ""
        return f"{row['mean']:.2f} ± {sem} (n={row['n']}){mark}"

    if scores.empty:
        return pd.DataFrame()
    aspects = list(dict.fromkeys(scores["aspect"]))
    cells = scores.assign(cell=scores.apply(cell, axis=1), paper=scores.apply(paper, axis=1))
    table = pd.concat(
        [
            cells.pivot(index="model", columns="aspect", values="cell")[aspects],
            cells.pivot(index="model", columns="aspect", values="paper")[aspects].rename(
                columns=lambda a: f"{a} ({PAPER_LABEL})"
            ),
        ],
        axis=1,
    )[[c for a in aspects for c in (a, f"{a} ({PAPER_LABEL})")]]
    table.columns.name = None
    reference = set(scores.loc[scores["reference"], "model"])
    table.index = [f"{m} (reference)" if m in reference else m for m in table.index]
    table.index.name = "model"
    return table.reset_index()


def likert_items(
    examples: Sequence[tuple[str, Sequence[str]]], responses: Mapping[str, Sequence[str]]
) -> list[tuple[str, dict[str, Any]]]:
    """Return one (key, payload) item per example and model.

    ``examples`` are (example id, context turns); ``responses`` maps a model name to its
    responses, one per example in the same order.
    """
    items = []
    for model, replies in responses.items():
        if len(replies) != len(examples):
            raise ValueError(f"{model}: {len(replies)} responses for {len(examples)} examples")
        for (example, context), reply in zip(examples, replies, strict=True):
            payload = {
                "context": list(context),
                "response": reply,
                "model": model,
                "example": example,
            }
            items.append((f"{example}/{model}", payload))
    return items
