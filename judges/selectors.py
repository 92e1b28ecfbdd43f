"""Reads of the judges: their answers and the crowd's as the report's frames, their jobs."""

from __future__ import annotations

from typing import Any

import pandas as pd

from annotation.judgment_reads import campaign_judgments_frame
from annotation.models import Campaign, Item, Judgment, Worker
from annotation.protocols import Report, registry
from judges.report import DECISIVE, judge_report
from judges.services import LABEL_PREFIX
from modelhub.models import GenerationJob

ORDER_SUFFIXES = ("/ab", "/ba")


def _label(protocol: Any, payload: Any, question: str, value: Any, presentation: Any) -> Any:
    """Return what an answer means whatever was shown (an A/B choice: the model chosen)."""
    winner = protocol.judgment_winner(payload, question, value, presentation)
    return value if winner is None else winner


def _shown(value: Any, presentation: Any) -> str | None:
    """Return the position chosen on an item shown in an order ("first"/"second"), else None."""
    if isinstance(presentation, dict) and "order" in presentation and value in DECISIVE:
        return str(value)
    return None


def judge_name_of(rater: str) -> str:
    """Return the judge's name from its rater id (the order suffix of A/B raters removed)."""
    for suffix in ORDER_SUFFIXES:
        if rater.endswith(suffix):
            return rater[: -len(suffix)]
    return rater


def judge_frames(
    campaign: Campaign,
) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, tuple[str, ...]], pd.Series]:
    """Return the report's inputs: the crowd's answers, the judges', each item's models and
    the positions the crowd chose on items shown in an order (``judges.report``)."""
    protocol = registry.get(campaign.protocol)
    payloads = dict(
        Item.objects.filter(campaign=campaign, gold__isnull=True).values_list("key", "payload")
    )
    crowd = campaign_judgments_frame(campaign)
    crowd_labels = [
        _label(protocol, payloads.get(item), question, value, shown)
        for item, question, value, shown in zip(
            crowd["item"], crowd["question"], crowd["value"], crowd["presentation"], strict=True
        )
    ]
    crowd_frame = pd.DataFrame(
        {
            "item": crowd["item"],
            "rater": crowd["rater"],
            "question": crowd["question"],
            "label": pd.Series(crowd_labels, dtype=object),
        }
    )
    crowd_shown = pd.Series(
        [_shown(v, p) for v, p in zip(crowd["value"], crowd["presentation"], strict=True)],
        dtype=object,
    ).dropna()
    rows = (
        Judgment.objects.filter(
            item__campaign=campaign, item__gold__isnull=True, worker__provider=Worker.Provider.MODEL
        )
        .order_by("pk")
        .values_list("item__key", "worker__external_id", "question", "value", "presentation")
    )
    judges = pd.DataFrame(
        [
            (
                item,
                rater,
                judge_name_of(rater),
                question,
                _label(protocol, payloads.get(item), question, value, shown),
                _shown(value, shown),
                "".join(shown["order"]) if isinstance(shown, dict) and "order" in shown else None,
            )
            for item, rater, question, value, shown in rows
        ],
        columns=["item", "rater", "judge", "question", "label", "shown", "order"],
    )
    models: dict[str, tuple[str, ...]] = {}
    for key, payload in payloads.items():
        if isinstance(payload.get("model"), str):
            models[key] = (payload["model"],)
        elif isinstance(payload.get("model_a"), str) and isinstance(payload.get("model_b"), str):
            models[key] = (payload["model_a"], payload["model_b"])
    return crowd_frame, judges, models, crowd_shown


def judge_jobs(campaign: Campaign) -> list[GenerationJob]:
    """Return the campaign's judge jobs, newest first."""
    return list(
        GenerationJob.objects.filter(
            kind=GenerationJob.Kind.JUDGE, label__startswith=f"{LABEL_PREFIX}{campaign.slug}:"
        )
        .select_related("endpoint")
        .order_by("-created_at", "-pk")
    )


def judge_failures(campaign: Campaign) -> dict[str, list[str]]:
    """Return, per judge (its newest job), the items it was refused on after every attempt."""
    failures: dict[str, list[str]] = {}
    for job in judge_jobs(campaign):
        name = job.label[len(f"{LABEL_PREFIX}{campaign.slug}:") :]
        if name not in failures and job.status == GenerationJob.Status.DONE:
            failures[name] = [line for line in job.error.splitlines() if line.strip()]
    return failures


def campaign_judge_report(campaign: Campaign, *, n_boot: int, seed: int, level: float) -> Report:
    """Return the judge–human agreement report of a campaign as a Report (for report_write)."""
    crowd, judges, models, crowd_shown = judge_frames(campaign)
    built = judge_report(
        crowd, judges, models, crowd_shown=crowd_shown, n_boot=n_boot, level=level, seed=seed
    )
    report = Report(
        title=f"LLM judges and the crowd: {campaign.name}",
        tables=built.tables,
        figures=built.figures,
        notes=list(built.notes),
    )
    for judge, failed in judge_failures(campaign).items():
        if failed:
            report.notes.append(
                f"{judge}: {len(failed)} item(s) refused after every attempt and left "
                f"unanswered (never guessed), e.g. {failed[0]}"
            )
    report.notes.append(
        "Judges' answers are a model rater's: left out of the crowd's report, progress, "
        "quality control, payments and exports."
    )
    return report
