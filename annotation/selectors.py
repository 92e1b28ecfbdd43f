"""Reads of the crowd side: a campaign's data as DataFrames, its progress, its report."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

import numpy as np
import pandas as pd
from django.db import connections, transaction
from django.db.models import CharField, Count, Exists, F, Func, OuterRef, Q, QuerySet, TextField
from django.db.models.fields.json import KeyTransform
from django.db.models.functions import Cast
from django.utils import timezone

from annotation.allocation import topup_cap
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

T = TypeVar("T")


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


JUDGMENT_COLUMNS = [
    "item",
    "rater",
    "question",
    "value",
    "presentation",
    "time_spent_ms",
    "created_at",
    "flagged",
]


def model_raters(campaign: Campaign) -> set[int]:
    """Return the ids of the campaign's model raters (LLM judges, ``annotation.judges``), whose
    judgments every crowd read leaves out: one query over the campaign's assignments."""
    return set(
        Assignment.objects.filter(
            campaign=campaign, worker__provider=Worker.Provider.MODEL
        ).values_list("worker", flat=True)
    )


def campaign_judgments_frame(
    campaign: Campaign, *, include_flagged: bool = False, judges: bool = False
) -> pd.DataFrame:
    """Return the crowd's judgments on non-gold items, one row each, with the JUDGMENT_COLUMNS.

    Workers appear only by pseudonym (``rater``). Judgments of soft-blocked workers are
    ``flagged`` and left out unless ``include_flagged``; model raters' (LLM judges) always.
    With ``judges``, the LLM judges' judgments instead, ``rater`` the judge's name.
    """
    blocked = Participation.objects.filter(campaign=campaign, soft_blocked=True).values("worker")
    judgments = Judgment.objects.filter(item__campaign=campaign, item__gold__isnull=True)
    models = model_raters(campaign)
    judgments = (
        judgments.filter(worker__in=models) if judges else judgments.exclude(worker__in=models)
    )
    rows = (
        judgments.annotate(flagged=Exists(blocked.filter(worker=OuterRef("worker"))))
        .order_by("pk")
        .values_list(
            "item__key",
            _rater(judges),
            "question",
            "value",
            "presentation",
            "time_spent_ms",
            "created_at",
            "flagged",
        )
    )
    if not include_flagged:
        rows = rows.filter(flagged=False)
    return pd.DataFrame(list(rows), columns=JUDGMENT_COLUMNS)


# Rows per chunk of a streamed read: a few MB of Python objects, whatever the campaign's size.
CHUNK_ROWS = 20_000


def _rater(judges: bool) -> str:
    """The column a rater is named by: a worker's pseudonym, an LLM judge's own name."""
    return "worker__external_id" if judges else "worker__pseudonym"


def campaign_judgments(
    campaign: Campaign, *, include_flagged: bool = False, judges: bool = False
) -> tuple[QuerySet[Judgment], set[int]]:
    """Return the crowd's non-gold judgments (soft-blocked workers' left out unless
    ``include_flagged``, model raters' always) and the ids of its soft-blocked workers; with
    ``judges``, the LLM judges' non-gold judgments (none of them blocked) instead."""
    judgments = Judgment.objects.filter(item__campaign=campaign, item__gold__isnull=True)
    if judges:
        return judgments.filter(worker__in=model_raters(campaign)), set()
    blocked = set(
        Participation.objects.filter(campaign=campaign, soft_blocked=True).values_list(
            "worker", flat=True
        )
    )
    if not include_flagged and blocked:
        judgments = judgments.exclude(worker__in=blocked)
    models = model_raters(campaign)
    if models:
        judgments = judgments.exclude(worker__in=models)
    return judgments, blocked


@contextmanager
def _whole_read(db: str) -> Iterator[None]:
    """Read a whole campaign through one cursor in one transaction (one snapshot).

    PostgreSQL plans a cursor for its first rows (``cursor_tuple_fraction`` 0.1), which for
    "this campaign's judgments by id" means walking every campaign's judgments in id order;
    asking for all rows gets the join of the campaign's items and a sort instead.
    """
    with transaction.atomic(using=db):
        if connections[db].vendor == "postgresql":
            with connections[db].cursor() as cursor:
                cursor.execute("SET LOCAL cursor_tuple_fraction = 1.0")
        yield


def _chunks(rows: Iterable[T], size: int) -> Iterator[list[T]]:
    iterator = iter(rows)
    while chunk := list(itertools.islice(iterator, size)):
        yield chunk


def campaign_judgments_chunks(
    campaign: Campaign,
    *,
    include_flagged: bool = False,
    judges: bool = False,
    chunk_rows: int = CHUNK_ROWS,
) -> Iterator[list[tuple[Any, ...]]]:
    """Yield the judgments of ``campaign_judgments_frame`` in primary-key order, in lists of at
    most ``chunk_rows`` tuples: the JUDGMENT_COLUMNS, then the item's ``payload``, with
    ``created_at`` as ISO 8601 text in UTC (``2025-01-31T12:00:00.000000Z``).

    The rows come through a server-side cursor on PostgreSQL (``iterator``, in one
    transaction: one snapshot, planned for every row) and each chunk's payloads from one query
    over its items, so memory stays bounded whatever the campaign's size. JSON arrives as
    text and each distinct text of a chunk is decoded once (an item's payload, a choice
    repeated on every row): equal values of a chunk are one object.
    """
    judgments, blocked = campaign_judgments(
        campaign, include_flagged=include_flagged, judges=judges
    )
    on_postgresql = connections[judgments.db].vendor == "postgresql"
    created: Any = UTCText("created_at") if on_postgresql else F("created_at")
    per_query = min(chunk_rows, (connections[judgments.db].features.max_query_params or 65_000) - 1)
    rows = (
        judgments.order_by("pk")
        .values_list(
            "item_id",
            "item__key",
            _rater(judges),
            "question",
            Cast("value", TextField()),
            Cast("presentation", TextField()),
            "time_spent_ms",
            created,
            "worker_id",
        )
        .iterator(chunk_size=chunk_rows)
    )
    with _whole_read(judgments.db):
        yield from _payload_chunks(_chunks(rows, chunk_rows), blocked, on_postgresql, per_query)


def _payload_chunks(
    chunks: Iterator[list[tuple[Any, ...]]], blocked: set[int], on_postgresql: bool, per_query: int
) -> Iterator[list[tuple[Any, ...]]]:
    """Decode each chunk's JSON once per distinct text and add its items' payloads."""
    for chunk in chunks:
        ids = sorted({row[0] for row in chunk})
        payloads: dict[int, Any] = {}
        for start in range(0, len(ids), per_query):
            part = Item.objects.filter(pk__in=ids[start : start + per_query])
            payloads.update(part.values_list("pk", Cast("payload", TextField())))
        load = _json_loader()
        yield [
            (
                *row[1:4],
                load(row[4]),
                load(row[5]),
                row[6],
                _iso(row[7]) if on_postgresql else _utc_text(row[7]),
                row[8] in blocked,
                load(payloads[row[0]]),
            )
            for row in chunk
        ]


class UTCText(Func):
    """A PostgreSQL timestamp in UTC as text, ``2025-01-31 12:00:00.5`` (cheaper than to_char)."""

    template = "((%(expressions)s AT TIME ZONE 'UTC')::text)"
    output_field = CharField()


def _json_loader() -> Callable[[str], Any]:
    """Return a json.loads that decodes each distinct text once."""
    decoded: dict[str, Any] = {}

    def load(text: str) -> Any:
        if text not in decoded:
            decoded[text] = json.loads(text)
        return decoded[text]

    return load


def _iso(text: str) -> str:
    """Return PostgreSQL's text of a UTC timestamp as ``_utc_text`` writes it."""
    fraction = text[20:26] if len(text) > 19 else ""  # PostgreSQL drops trailing zeros
    return f"{text[:10]}T{text[11:19]}.{fraction:0<6}Z"


def _utc_text(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


REPORT_COLUMNS = ["item", "rater", "question", "value", "presentation", "time_spent_ms"]


def campaign_report_judgments_frame(
    campaign: Campaign, *, chunk_rows: int = CHUNK_ROWS
) -> pd.DataFrame:
    """Return what a report reads of ``campaign_judgments_frame``: its rows and values, the
    REPORT_COLUMNS only (no timestamps; soft-blocked workers are left out), in bounded memory.

    Rows come in chunks through a server-side cursor as integers and the texts of questions
    and JSON values; each distinct text is kept (and decoded) once, so the frame holds codes
    and arrays rather than a Python object per cell, and no list of every row is ever made.
    Columns are typed as ``campaign_judgments_frame`` types them: ``item``, ``rater``,
    ``question`` and a ``value`` of plain text are strings, whole-number values integers;
    ``presentation`` (and a structured ``value``) are Python objects, equal ones shared.
    """
    judgments, _ = campaign_judgments(campaign)
    rows = (
        judgments.order_by("pk")
        .values_list(
            "item_id",
            "worker_id",
            "question",
            Cast("value", TextField()),
            Cast("presentation", TextField()),
            "time_spent_ms",
        )
        .iterator(chunk_size=chunk_rows)
    )
    questions: dict[str, int] = {}  # every distinct question
    texts: dict[str, int] = {}  # every distinct JSON text of a value or a presentation
    parts: list[np.ndarray] = []
    with _whole_read(judgments.db):
        for chunk in _chunks(rows, chunk_rows):
            question, code = questions.setdefault, texts.setdefault
            part = np.array(
                [(r[0], r[1], question(r[2], len(questions)), code(r[3], len(texts)),
                  code(r[4], len(texts)), r[5]) for r in chunk],
                dtype=np.int64,
            )  # fmt: skip
            parts.append(part)
    table = np.concatenate(parts) if parts else np.empty((0, 6), dtype=np.int64)
    keys = dict(Item.objects.filter(campaign=campaign, gold__isnull=True).values_list("pk", "key"))
    names = _by_pk(Worker.objects.all(), np.unique(table[:, 1]).tolist(), "pseudonym")
    decoded = [json.loads(t) for t in texts]

    def column(codes: np.ndarray, labels: Any) -> pd.Series:
        # Inferred from the distinct labels only, as pandas infers the whole column.
        uniques, inverse = np.unique(codes, return_inverse=True)
        small = np.empty(len(uniques), dtype=object)
        for i, u in enumerate(uniques):  # one by one: lists stay lists, not a 2-D array
            small[i] = labels[u]
        dtype = pd.Series(list(small)).dtype if len(small) else object
        return pd.Series(small[inverse], dtype=dtype)

    return pd.DataFrame(
        {
            "item": column(table[:, 0], keys),
            "rater": column(table[:, 1], names),
            "question": column(table[:, 2], list(questions)),
            "value": column(table[:, 3], decoded),
            "presentation": column(table[:, 4], decoded),
            "time_spent_ms": pd.Series(table[:, 5]),
        },
        columns=REPORT_COLUMNS,
    )


def _by_pk(rows: QuerySet[Any], ids: list[int], field: str) -> dict[int, Any]:
    """Return {pk: field} for ``ids``, in queries of as many ids as the database takes."""
    per_query = (connections[rows.db].features.max_query_params or 65_000) - 1
    found: dict[int, Any] = {}
    for start in range(0, len(ids), per_query):
        found.update(rows.filter(pk__in=ids[start : start + per_query]).values_list("pk", field))
    return found


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
]


def campaign_dialogues_frame(campaign: Campaign) -> pd.DataFrame:
    """Return the campaign's conversations (live chats), one row each, with DIALOGUE_COLUMNS.

    ``utterances`` and ``words`` count the turns and their words; ``pastes`` the paste events
    the page recorded while they were written; ``opened_by`` is who said an interactive SSA
    chat's opener (empty for other chats and for chats stored before it was recorded:
    those were opened by the bot); ``ratings`` its closing ratings (None if none were asked).
    """
    counts: dict[int, list[int]] = {}
    for dialogue_id, text, signals in Utterance.objects.filter(
        dialogue__campaign=campaign
    ).values_list("dialogue_id", "text", "signals"):
        row = counts.setdefault(dialogue_id, [0, 0, 0])
        row[0] += 1
        row[1] += len(text.split())
        row[2] += int((signals or {}).get("pastes", 0))
    rows = [
        (d.key, d.status, d.flagged, list(d.flags), d.emotion, d.situation_id)
        + (str(d.metadata.get("model", "")), str(d.metadata.get("opened_by", "")))
        + tuple(counts.get(d.pk, [0, 0, 0]))
        + (d.metadata.get("ratings"),)
        for d in Dialogue.objects.filter(campaign=campaign).order_by("pk")
    ]
    return pd.DataFrame(rows, columns=DIALOGUE_COLUMNS)


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
