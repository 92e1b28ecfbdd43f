"""Text cells a spreadsheet would run as formulas, neutralised (OWASP's CSV injection rule).

A cell whose text starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is a
formula to LibreOffice and Excel (``=HYPERLINK(…)``, ``=WEBSERVICE(…)``): every CSV the
platform writes prefixes such a text with ``'``, which the spreadsheet shows as text. Numbers
are left alone (a negative score is not a formula), and JSONL and Parquet keep the raw text.
``cell_unsafe`` reverses it exactly, so a CSV written here and read back (``import_dataset``)
gives the same text: a text already starting with quotes before such a character gets one more.
"""

from __future__ import annotations

from pathlib import Path
from typing import IO, Any

import pandas as pd

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _needs(text: str) -> bool:
    return text.lstrip("'").startswith(FORMULA_STARTS)


def cell_safe(value: Any) -> Any:
    """Return ``value`` with ``'`` before a text a spreadsheet would run; others unchanged."""
    if isinstance(value, str) and _needs(value):
        return "'" + value
    return value


def cell_unsafe(value: Any) -> Any:
    """Undo ``cell_safe`` (reading a CSV written by it)."""
    if isinstance(value, str) and value.startswith("'") and _needs(value[1:]):
        return value[1:]
    return value


def frame_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """Return ``frame`` with its text cells made safe (a copy where any cell changes)."""
    texts = [
        c
        for c in frame.columns
        if frame[c].dtype == object or pd.api.types.is_string_dtype(frame[c].dtype)
    ]
    if not texts:
        return frame
    safe = frame.copy()
    for column in texts:
        safe[column] = frame[column].map(cell_safe)
    return safe


def csv_write(frame: pd.DataFrame, out: Path | IO[str], **options: Any) -> None:
    """Write ``frame`` as CSV as every CSV of the platform is written: cells made safe, no index,
    RFC 4180 line ends. With ``\r\n`` ends the writer quotes a field holding a lone CR, which
    a spreadsheet would otherwise take for the end of a row, starting a new one (and a formula)
    inside the cell (tests/annotation/test_exports_libreoffice.py)."""
    frame_safe(frame).to_csv(out, index=False, lineterminator="\r\n", **options)
