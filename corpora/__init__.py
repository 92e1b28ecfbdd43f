"""Dialogue data sets: readers of the published formats, writers, import and export.

``READERS`` maps an ``import_dataset`` format name to its reader, ``WRITERS`` an ``export``
format to its writer; ``annotation.services.datasets`` stores and exports, and
``docs/datasets.md`` describes every format.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from corpora import generic, sources
from corpora.records import (
    EMOTIONLINES_LABELS,
    DatasetError,
    DialogueRecord,
    UtteranceRecord,
)

Reader = Callable[[Path], list[DialogueRecord]]
Writer = Callable[[list[DialogueRecord], Path], int]

READERS: dict[str, Reader] = {
    "ed": sources.read_ed,
    "emotionlines": sources.read_emotionlines,
    "meld": sources.read_meld,
    "emocontext": sources.read_emocontext,
    "meena": sources.read_meena,
    "jsonl": generic.read_jsonl,
    "csv": generic.read_csv,
    "parquet": generic.read_parquet,
    "parlai": generic.read_parlai,
}
WRITERS: dict[str, Writer] = {
    "csv": generic.write_csv,
    "jsonl": generic.write_jsonl,
    "parquet": generic.write_parquet,
    "parlai": generic.write_parlai,
}
SUFFIXES = {"csv": "csv", "jsonl": "jsonl", "parquet": "parquet", "parlai": "txt"}

__all__ = [
    "EMOTIONLINES_LABELS",
    "READERS",
    "SUFFIXES",
    "WRITERS",
    "DatasetError",
    "DialogueRecord",
    "UtteranceRecord",
]
