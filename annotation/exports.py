"""Exports of collected data in the formats the field uses, with workers pseudonymised.

Judgments go out as CSV, JSONL or Parquet, one row per (item, worker, question); values and
presentations that are not plain text are written as JSON in CSV.

``judgments_export`` streams: it reads the judgments in chunks through a server-side cursor
and appends each chunk to the file (a Parquet row group per chunk), so memory does not grow
with the campaign. Its output is the same as writing the whole ``judgments_export_frame``
with ``frame_write`` (byte for byte in CSV and JSONL, row for row and type for type in
Parquet): a column's type and its JSON encoding are decided for the whole column up front,
from the kinds of JSON value it holds (one ``json_kinds`` query), as pandas would infer them.

``battles_export`` writes an arena campaign's votes in the public arena format
(``corpora.arena``: Chatbot Arena / LMArena battles, JSONL), one record per vote.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from django.db.models import CharField, Func, QuerySet

from annotation.judgment_reads import (
    CHUNK_ROWS,
    JUDGMENT_COLUMNS,
    _rater,
    campaign_judgments,
    campaign_judgments_chunks,
    campaign_judgments_frame,
)
from annotation.model_replies import campaign_cut_replies, payload_truncated
from annotation.models import Campaign, Item
from annotation.protocols import Battles, Protocol, registry
from annotation.selectors import campaign_items_frame
from corpora.arena import arena_write
from evalstats.spreadsheets import csv_write

Format = Literal["csv", "jsonl", "parquet"]
FORMATS: tuple[str, ...] = ("csv", "jsonl", "parquet")


def judgments_export_frame(
    campaign: Campaign, *, include_flagged: bool = False, judges: bool = False
) -> pd.DataFrame:
    """Return the campaign's judgments joined with their items, workers by pseudonym only;
    with ``judges``, its LLM judges' instead, each by its name."""
    judgments = campaign_judgments_frame(campaign, include_flagged=include_flagged, judges=judges)
    items = campaign_items_frame(campaign)
    frame = judgments.merge(items, on="item", how="left")
    frame.insert(0, "campaign", campaign.slug)
    frame["winner"] = _winners(
        registry.get(campaign.protocol),
        zip(
            frame["payload"], frame["question"], frame["value"], frame["presentation"], strict=True
        ),
    )
    frame["created_at"] = pd.to_datetime(frame["created_at"], utc=True).dt.strftime(
        "%Y-%m-%dT%H:%M:%S.%fZ"
    )
    cut = campaign_cut_replies(campaign)
    truncated = [payload_truncated(p, cut) for p in frame["payload"]]
    frame["truncated"] = pd.Series(truncated, dtype=bool, index=frame.index)
    return frame


def frame_write(frame: pd.DataFrame, path: Path, fmt: Format) -> Path:
    """Write ``frame`` to ``path`` as CSV, JSONL or Parquet; return the path."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "jsonl":
        frame.to_json(path, orient="records", lines=True, force_ascii=False)
        return path
    flat = frame.copy()
    for column in flat.columns:
        values = frame[column]
        if values.dtype != object or values.map(lambda v: v is None or isinstance(v, str)).all():
            continue
        # CSV cells and Parquet columns hold one plain type: structured values become JSON
        # text (in Parquet, also numbers mixed with text, e.g. a "value" column).
        if fmt == "parquet" or values.map(lambda v: isinstance(v, dict | list)).any():
            flat[column] = values.map(lambda v: json.dumps(v, ensure_ascii=False))
    if fmt == "csv":
        csv_write(flat, path)
    else:
        flat.to_parquet(path, index=False)
    return path


def _winners(protocol: Protocol, rows: Iterable[tuple[Any, Any, Any, Any]]) -> pd.Series:
    """Return the ``winner`` column: ``Protocol.judgment_winner`` of each (payload, question,
    value, presentation), typed as text whatever a chunk holds (empty where None)."""
    winners = [
        protocol.judgment_winner(payload if isinstance(payload, dict) else {}, q, v, shown)
        for payload, q, v, shown in rows
    ]
    return pd.Series(winners, dtype="str")


# --- streaming ------------------------------------------------------------------------------

# "winner": what an A/B judgment chose (the model, "both", "neither"); empty otherwise.
# ``truncated``: the item shows a model reply cut at max_new_tokens (annotation.model_replies).
EXPORT_COLUMNS = ["campaign", *JUDGMENT_COLUMNS, "payload", "winner", "truncated"]
# A Python value of each kind of JSON value (as the database names it): pandas infers a
# column's dtype from the kinds of value in it, so one of each infers what the whole would.
_EXAMPLE: dict[str, Any] = {
    "null": None,
    "true": True,
    "false": True,
    "boolean": True,
    "integer": 0,
    "real": 0.5,
    "text": "",
    "string": "",
    "array": [],
    "object": {},
}


class JSONKind(Func):
    """The kind of a JSON value: null, boolean, integer, real, string, array or object."""

    function = "json_type"  # SQLite: null, true, false, integer, real, text, array, object
    output_field = CharField()  # the kind's name, not JSON to decode

    def as_postgresql(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        # jsonb has one 'number' kind; Python reads one with '.', 'e' or 'E' as a float.
        template = (
            "CASE jsonb_typeof(%(expressions)s) WHEN 'number' THEN CASE WHEN "
            "(%(expressions)s)::text ~ '[.eE]' THEN 'real' ELSE 'integer' END "
            "ELSE jsonb_typeof(%(expressions)s) END"
        )
        return self.as_sql(compiler, connection, template=template, **extra)


def json_kinds(rows: QuerySet[Any], field: str) -> set[str]:
    """Return the kinds of JSON value that ``field`` holds in ``rows`` (one query)."""
    kinds = rows.annotate(_kind=JSONKind(field)).values_list("_kind", flat=True).distinct()
    return {str(k) for k in kinds.order_by()}


@dataclass(frozen=True)
class _Column:
    """How one JSON column of the export is typed and written, decided for the whole column."""

    dtype: Any
    encode: bool  # written as JSON text

    @classmethod
    def of(cls, kinds: set[str], fmt: str) -> _Column:
        examples = [_EXAMPLE[k] for k in sorted(kinds)]
        dtype = pd.DataFrame([(v,) for v in examples], columns=["x"])["x"].dtype
        plain = kinds <= {"null", "text", "string"}
        nested = bool(kinds & {"array", "object"})
        # As frame_write: only an object column of other than text (or None) is encoded.
        encode = (
            fmt != "jsonl"
            and pd.api.types.is_object_dtype(dtype)
            and not plain
            and (fmt == "parquet" or nested)
        )
        return cls(dtype, encode)

    def values(self, values: list[Any]) -> pd.Series:
        if not self.encode:
            return pd.Series(values, dtype=self.dtype)
        # Equal values of a chunk are one object (campaign_judgments_chunks): encode each once.
        encoded: dict[int, str] = {}
        texts = []
        for value in values:
            key = id(value)
            if key not in encoded:
                encoded[key] = json.dumps(value, ensure_ascii=False)
            texts.append(encoded[key])
        return pd.Series(texts)  # typed as frame_write's .map(json.dumps) types it


def judgments_export(
    campaign: Campaign,
    path: Path,
    fmt: Format,
    *,
    include_flagged: bool = False,
    judges: bool = False,
    chunk_rows: int = CHUNK_ROWS,
) -> int:
    """Stream the campaign's judgments (``judgments_export_frame``'s rows) to ``path`` as CSV,
    JSONL or Parquet in bounded memory; return the number of rows written. With ``judges``,
    the LLM judges' judgments instead of the crowd's."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
    chunks = campaign_judgments_chunks(
        campaign, include_flagged=include_flagged, judges=judges, chunk_rows=chunk_rows
    )
    first = next(chunks, None)
    if first is None:  # no rows: the in-memory frame is empty, and its file is the reference
        frame = judgments_export_frame(campaign, include_flagged=include_flagged, judges=judges)
        frame_write(frame, path, fmt)
        return 0
    judgments, _ = campaign_judgments(campaign, include_flagged=include_flagged, judges=judges)
    items = Item.objects.filter(campaign=campaign, gold__isnull=True)
    columns = {
        "value": _Column.of(json_kinds(judgments, "value"), fmt),
        "presentation": _Column.of(json_kinds(judgments, "presentation"), fmt),
        "payload": _Column.of(json_kinds(items, "payload"), fmt),
    }
    protocol = registry.get(campaign.protocol)
    cut = campaign_cut_replies(campaign)
    frames = (
        _frame(chunk, campaign.slug, columns, protocol, cut) for chunk in _prepend(first, chunks)
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    return _WRITERS[fmt](frames, path)


def _prepend(first: list[Any], rest: Iterator[list[Any]]) -> Iterator[list[Any]]:
    yield first
    yield from rest


def _frame(
    rows: list[tuple[Any, ...]],
    slug: str,
    columns: dict[str, _Column],
    protocol: Protocol,
    cut: set[tuple[str, str]],
) -> pd.DataFrame:
    """Build one chunk of the export frame, typed as the whole frame's columns would be."""
    names = EXPORT_COLUMNS[1:-2]  # the chunk's rows: the judgment's columns and the payload
    at = {name: names.index(name) for name in ("payload", "question", "value", "presentation")}
    winners = _winners(
        protocol,
        (
            (r[at["payload"]], r[at["question"]], r[at["value"]], r[at["presentation"]])
            for r in rows
        ),
    )
    frame = pd.DataFrame(rows, columns=names)
    for name, column in columns.items():
        frame[name] = column.values([row[names.index(name)] for row in rows])
    frame.insert(0, "campaign", slug)
    frame["winner"] = winners
    truncated = [payload_truncated(row[at["payload"]], cut) for row in rows]
    frame["truncated"] = pd.Series(truncated, dtype=bool)
    return frame  # created_at comes as the text judgments_export_frame makes of it


def _csv_write(frames: Iterable[pd.DataFrame], path: Path) -> int:
    rows = 0
    with path.open("w", encoding="utf-8", newline="") as out:
        for frame in frames:
            csv_write(frame, out, header=rows == 0)
            rows += len(frame)
    return rows


def _jsonl_write(frames: Iterable[pd.DataFrame], path: Path) -> int:
    rows = 0
    with path.open("w", encoding="utf-8", newline="") as out:
        for frame in frames:
            # Each chunk's lines end with a newline, the last one's too, as the whole's do.
            out.write(frame.to_json(orient="records", lines=True, force_ascii=False))
            rows += len(frame)
    return rows


def _parquet_write(frames: Iterable[pd.DataFrame], path: Path) -> int:
    rows, writer = 0, None
    try:
        for frame in frames:
            if writer is None:
                table = pa.Table.from_pandas(frame, preserve_index=False)
                writer = pq.ParquetWriter(path, table.schema, compression="snappy")
            else:
                table = pa.Table.from_pandas(frame, schema=writer.schema, preserve_index=False)
            writer.write_table(table)  # one row group per chunk
            rows += len(frame)
    finally:
        if writer is not None:
            writer.close()
    return rows


_WRITERS = {"csv": _csv_write, "jsonl": _jsonl_write, "parquet": _parquet_write}


# --- battles (the public arena format) ------------------------------------------------------


def battles_export(
    campaign: Campaign,
    path: Path,
    *,
    include_flagged: bool = False,
    judges: bool = False,
    chunk_rows: int = CHUNK_ROWS,
) -> int:
    """Write an arena campaign's votes to ``path`` in the public arena format (JSONL,
    ``corpora.arena``): one record per vote, the judge a worker's pseudonym (an LLM judge's
    name with ``judges``); return how many were written.

    Reads in chunks (``chunk_rows``), so memory does not grow with the campaign. Raise
    ValueError for a campaign whose protocol has no battles (``protocols.Battles``).
    """
    protocol = registry.get(campaign.protocol)
    if not isinstance(protocol, Battles):
        raise ValueError(
            f"the arena format holds an arena campaign's votes; {campaign.slug} is a "
            f"{campaign.protocol} campaign"
        )
    judgments, _ = campaign_judgments(campaign, include_flagged=include_flagged, judges=judges)
    rows = (
        judgments.filter(question=protocol.battle_question)
        .order_by("pk")
        .values_list("item__payload", _rater(judges), "value", "created_at")
        .iterator(chunk_size=chunk_rows)
    )
    return arena_write((protocol.battle_record(*row) for row in rows), path)
