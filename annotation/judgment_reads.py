"""Reads of a campaign's judgments: as one frame, in bounded chunks, and as the report reads them.

The crowd's judgments leave out the LLM judges' (model raters, ``judges``) and,
unless asked, soft-blocked workers'; workers appear only by pseudonym. Exports stream the
chunks (``campaign_judgments_chunks``) and reports read the compact frame
(``campaign_report_judgments_frame``), so neither grows with the campaign in memory
(docs/architecture.md, "Reports and exports at scale").
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, TypeVar

import numpy as np
import pandas as pd
from django.db import connections, transaction
from django.db.models import CharField, Exists, F, Func, OuterRef, QuerySet, TextField
from django.db.models.functions import Cast

from annotation.models import Assignment, Campaign, Item, Judgment, Participation, Worker

T = TypeVar("T")


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
    """Return the ids of the campaign's model raters (LLM judges, ``judges``), whose
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
    return pd.DataFrame(
        {
            "item": _column(table[:, 0], keys),
            "rater": _column(table[:, 1], names),
            "question": _column(table[:, 2], list(questions)),
            "value": _column(table[:, 3], decoded),
            "presentation": _column(table[:, 4], decoded),
            "time_spent_ms": pd.Series(table[:, 5]),
        },
        columns=REPORT_COLUMNS,
    )


def _column(codes: np.ndarray, labels: Any) -> pd.Series:
    """Return the column of the codes' labels, typed from the distinct labels only (as pandas
    infers the whole column), equal labels one shared object."""
    uniques, inverse = np.unique(codes, return_inverse=True)
    small = np.empty(len(uniques), dtype=object)
    for i, u in enumerate(uniques):  # one by one: lists stay lists, not a 2-D array
        small[i] = labels[u]
    dtype = pd.Series(list(small)).dtype if len(small) else object
    return pd.Series(small[inverse], dtype=dtype)


def _by_pk(rows: QuerySet[Any], ids: list[int], field: str) -> dict[int, Any]:
    """Return {pk: field} for ``ids``, in queries of as many ids as the database takes."""
    per_query = (connections[rows.db].features.max_query_params or 65_000) - 1
    found: dict[int, Any] = {}
    for start in range(0, len(ids), per_query):
        found.update(rows.filter(pk__in=ids[start : start + per_query]).values_list("pk", field))
    return found
