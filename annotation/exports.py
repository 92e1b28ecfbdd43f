"""Exports of collected data in the formats the field uses, with workers pseudonymised.

Judgments go out as CSV, JSONL or Parquet, one row per (item, worker, question); values and
presentations that are not plain text are written as JSON in CSV.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

import pandas as pd

from annotation.models import Campaign
from annotation.selectors import campaign_items_frame, campaign_judgments_frame

Format = Literal["csv", "jsonl", "parquet"]
FORMATS: tuple[str, ...] = ("csv", "jsonl", "parquet")


def judgments_export_frame(campaign: Campaign, *, include_flagged: bool = False) -> pd.DataFrame:
    """Return the campaign's judgments joined with their items, workers by pseudonym only."""
    judgments = campaign_judgments_frame(campaign, include_flagged=include_flagged)
    items = campaign_items_frame(campaign)
    frame = judgments.merge(items, on="item", how="left")
    frame.insert(0, "campaign", campaign.slug)
    frame["created_at"] = pd.to_datetime(frame["created_at"], utc=True).dt.strftime(
        "%Y-%m-%dT%H:%M:%S.%fZ"
    )
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
        flat.to_csv(path, index=False)
    else:
        flat.to_parquet(path, index=False)
    return path
