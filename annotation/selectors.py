"""Reads of the crowd side: a campaign's items, progress, dialogues, training and report.

Its judgments are read by ``judgment_reads``; this module turns them into the report.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd
from django.db.models import Count, Exists, OuterRef, Q
from django.db.models.fields.json import KeyTransform
from django.utils import timezone

from annotation.allocation import topup_cap
from annotation.judgment_reads import campaign_report_judgments_frame, model_raters
from annotation.model_replies import campaign_replies_notes
from annotation.models import (
    Assignment,
    Campaign,
    Dialogue,
    Item,
    Judgment,
    Participation,
    TrainingAttempt,
    TrainingItem,
    Utterance,
    Worker,
)
from annotation.protocols import LiveChat, Report, registry
from annotation.tallies import Tally, campaign_tallies


def campaign_items_frame(campaign: Campaign, *, keys: Sequence[str] | None = None) -> pd.DataFrame:
    """Return the campaign's items, gold checks left out: columns ``item`` (key), ``payload``.

    With ``keys``, each payload holds only those keys (read in the database; a missing one is
    None), for reports that need a model's name, not every item's texts.
    """
    items = Item.objects.filter(campaign=campaign, gold__isnull=True).order_by("pk")
    if keys is None:
        return pd.DataFrame(list(items.values_list("key", "payload")), columns=["item", "payload"])
    rows = items.values_list("key", *(KeyTransform(k, "payload") for k in keys))
    payloads = [(row[0], dict(zip(keys, row[1:], strict=True))) for row in rows.iterator()]
    return pd.DataFrame(payloads, columns=["item", "payload"])


@dataclass(frozen=True)
class Progress:
    """How far a campaign is: judged item slots out of items × redundancy."""

    items: int
    needed: int
    done: int
    workers: int

    @property
    def fraction(self) -> float:
        return self.done / self.needed if self.needed else 0.0


def campaign_progress(campaign: Campaign) -> Progress:
    """Count items, (item, worker) judgments done out of those needed, and workers.

    Gold checks are not items to be done; every worker's judgments count towards progress,
    each item capped at the campaign's redundancy. No judgment is scanned: done slots come
    from the campaign's tallies (``annotation.tallies``), workers from its assignments (those
    with a judgment, any item, gold checks included: one index probe per assignment).
    """
    items = Item.objects.filter(campaign=campaign, gold__isnull=True).count()
    tally = campaign_tallies([campaign.pk], now=timezone.now()).get(campaign.pk, Tally())
    workers = (
        Assignment.objects.filter(campaign=campaign)
        .exclude(worker__provider=Worker.Provider.MODEL)
        .filter(Exists(Judgment.objects.filter(assignment=OuterRef("pk"))))
        .values("worker")
        .distinct()
        .count()
    )
    return Progress(
        items=items, needed=items * campaign.redundancy, done=tally.done, workers=workers
    )


DIALOGUE_COLUMNS = [
    "dialogue",
    "status",
    "flagged",
    "flags",
    "emotion",
    "situation",
    "model",
    "opened_by",
    "utterances",
    "words",
    "pastes",
    "ratings",
    "bot_turns",
    "bot_ms",
    "cut",
]


def campaign_dialogues_frame(campaign: Campaign) -> pd.DataFrame:
    """Return the campaign's conversations (live chats), one row each, with DIALOGUE_COLUMNS.

    ``utterances`` and ``words`` count the turns and their words; ``pastes`` the paste events
    the page recorded while they were written; ``opened_by`` is who said an interactive SSA
    chat's opener (empty for other chats and for chats stored before it was recorded:
    those were opened by the bot); ``ratings`` its closing ratings (None if none were asked);
    ``bot_turns``, ``bot_ms`` and ``cut`` count a bot chat's model replies, their mean
    generation time and those cut at the length limit (0, NaN and 0 for human chats).
    """
    counts: dict[int, list[int]] = {}
    bots: dict[int, list[float]] = {}
    for dialogue_id, text, speaker, signals in Utterance.objects.filter(
        dialogue__campaign=campaign
    ).values_list("dialogue_id", "text", "speaker", "signals"):
        row = counts.setdefault(dialogue_id, [0, 0, 0])
        row[0] += 1
        row[1] += len(text.split())
        row[2] += int((signals or {}).get("pastes", 0))
        if speaker == "bot" and "model_ms" in (signals or {}):
            bot = bots.setdefault(dialogue_id, [0, 0.0, 0])
            bot[0] += 1
            bot[1] += float(signals["model_ms"])
            bot[2] += int(signals.get("finish_reason") == "length")
    rows = [
        (d.key, d.status, d.flagged, list(d.flags), d.emotion, d.situation_id)
        + (str(d.metadata.get("model", "")), str(d.metadata.get("opened_by", "")))
        + tuple(counts.get(d.pk, [0, 0, 0]))
        + (d.metadata.get("ratings"),)
        + _bot_columns(bots.get(d.pk))
        for d in Dialogue.objects.filter(campaign=campaign).order_by("pk")
    ]
    return pd.DataFrame(rows, columns=DIALOGUE_COLUMNS)


def _bot_columns(bot: list[float] | None) -> tuple[int, float, int]:
    if not bot:
        return 0, float("nan"), 0
    return int(bot[0]), bot[1] / bot[0], int(bot[2])


@dataclass(frozen=True)
class Replacements:
    """The top-up's account (allocation.items_reopen): item slots whose judgment stopped
    counting, how many of them other workers filled since, and the re-opened slots and cap."""

    excluded: int
    replaced: int
    reopened: int
    cap: int


def campaign_replacements(campaign: Campaign) -> Replacements:
    """Count the excluded (soft-blocked or withdrawn) workers' judged items and their
    replacements: on an item with ``e`` excluded and ``v`` valid workers, the valid ones
    beyond the ``redundancy - e`` the item would have had without them, at most ``e``."""
    excluded = set(
        Participation.objects.filter(campaign=campaign, soft_blocked=True).values_list(
            "worker", flat=True
        )
    )
    counts: dict[int, list[int]] = {}
    if excluded:
        pairs = (
            Judgment.objects.filter(item__campaign=campaign, item__gold__isnull=True)
            .exclude(worker__in=model_raters(campaign))
            .order_by()  # Meta.ordering would make each judgment distinct
            .values_list("item", "worker")
            .distinct()
        )
        for item_id, worker_id in pairs:
            counts.setdefault(item_id, [0, 0])[worker_id in excluded] += 1
    r = campaign.redundancy
    hit = [(v, e) for v, e in counts.values() if e]
    replaced = sum(min(e, max(0, min(v, r) - (r - e))) for v, e in hit)
    return Replacements(
        excluded=sum(e for _, e in hit),
        replaced=replaced,
        reopened=campaign.topup_reopened,
        cap=topup_cap(campaign),
    )


def campaign_report(campaign: Campaign) -> Report:
    """Build the campaign's report with its protocol, from every judgment stored so far
    (and, for live chat protocols, every conversation); a note accounts for the judgments
    of excluded workers and their replacements."""
    protocol = registry.get(campaign.protocol)
    parameters = protocol.clean_parameters(campaign.parameters)
    items = campaign_items_frame(campaign, keys=protocol.report_payload_keys)
    report = protocol.report(parameters, items, campaign_report_judgments_frame(campaign))
    if isinstance(protocol, LiveChat):
        protocol.report_dialogues(parameters, report, campaign_dialogues_frame(campaign))
    campaign_replies_notes(report, campaign)
    topup = campaign_replacements(campaign)
    if topup.excluded or topup.reopened:
        report.notes.append(
            f"Top-up: {topup.excluded} judged items of excluded workers (soft-blocked or "
            f"withdrawn) are left out; {topup.replaced} of them were replaced by other "
            f"workers ({topup.reopened} item slots re-opened, cap {topup.cap})."
        )
    return report


@dataclass(frozen=True)
class TrainingItemStats:
    """One training item: how often it was answered, and answered as expected."""

    key: str
    answered: int
    expected: int

    @property
    def share(self) -> float | None:
        return self.expected / self.answered if self.answered else None


@dataclass(frozen=True)
class TrainingSummary:
    """Where a campaign's workers stand in its training (docs/protocols.md, "Training")."""

    passed: int  # workers whose attempt here passed
    failed: int  # workers who used every attempt without passing
    training: int  # workers with an attempt under way or one left to start
    items: list[TrainingItemStats]


def training_summary(campaign: Campaign) -> TrainingSummary | None:
    """Return the campaign's training numbers (two queries), or None without training."""
    if not campaign.training_size:
        return None
    tried: dict[int, list[bool | None]] = {}
    rows = TrainingAttempt.objects.filter(campaign=campaign).values_list("worker", "passed")
    for worker, outcome in rows:
        tried.setdefault(worker, []).append(outcome)
    passed = sum(True in outcomes for outcomes in tried.values())
    failed = sum(outcomes.count(False) >= campaign.training_attempts for outcomes in tried.values())
    items = (
        TrainingItem.objects.filter(campaign=campaign)
        .order_by("position")
        .annotate(
            n_answered=Count("answers"),
            n_expected=Count("answers", filter=Q(answers__correct=True)),
        )
        .values_list("key", "n_answered", "n_expected")
    )
    return TrainingSummary(
        passed=passed,
        failed=failed,
        training=len(tried) - passed - failed,
        items=[TrainingItemStats(*row) for row in items],
    )
