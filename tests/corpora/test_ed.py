"""The EmpatheticDialogues CSV reader."""

from pathlib import Path

import pytest

from corpora.records import DatasetError, DialogueRecord
from corpora.sources import read_ed

HEADER = "conv_id,utterance_idx,context,prompt,speaker_idx,utterance,selfeval,tags\n"


def write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "ed.csv"
    path.write_text(HEADER + body, encoding="utf-8")
    return path


def turns(dialogue: DialogueRecord) -> tuple[tuple[str, str], ...]:
    return tuple((u.speaker, u.text) for u in dialogue.utterances)


def test_reads_dialogues_and_restores_escaped_commas(tmp_path):
    path = write(
        tmp_path,
        "hit:1_0,1,proud,I won_comma_ finally.,1,I won the race_comma_ at last!,,\n"
        "hit:1_0,2,proud,I won_comma_ finally.,2,Well done!,,\n",
    )
    [dialogue] = read_ed(path)
    assert dialogue.key == "hit:1_0"
    assert dialogue.emotion == "proud"
    assert dialogue.situation == "I won, finally."
    assert dialogue.situation_author == "1"
    assert turns(dialogue) == (("1", "I won the race, at last!"), ("2", "Well done!"))


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("hit:1_0,1,proud,x,1\n", "line 2: 5 fields"),
        ("hit:1_0,one,proud,x,1,hi,,\n", "line 2: utterance_idx is not a number"),
        ("hit:1_0,2,proud,x,1,hi,,\n", "line 2: utterance_idx 2 of hit:1_0 is out of order"),
        ("hit:1_0,1,proud,x,1,,,\n", "line 2: empty conv_id or utterance"),
        ("", "no dialogues"),
    ],
)
def test_malformed_file_is_refused_naming_the_line(tmp_path, body, message):
    with pytest.raises(DatasetError, match=message):
        read_ed(write(tmp_path, body))


def test_missing_columns_and_files_are_clear_errors(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n")
    with pytest.raises(DatasetError, match="missing column"):
        read_ed(bad)
    with pytest.raises(DatasetError, match="cannot open"):
        read_ed(tmp_path / "absent.csv")


def test_demo_corpus_is_valid_and_large_enough():
    path = Path(__file__).resolve().parents[2] / "evalsite" / "demo" / "empathetic_demo.csv"
    dialogues = read_ed(path)
    assert len(dialogues) >= 30
    assert all(len(d.utterances) >= 2 for d in dialogues)


def test_a_file_saved_with_a_byte_order_mark_reads_like_one_without(tmp_path):
    path = tmp_path / "ed.csv"
    body = "hit:1_0,1,proud,I won.,1,I won!,,\n"
    path.write_text(HEADER + body, encoding="utf-8-sig")  # Excel's "CSV UTF-8"
    [dialogue] = read_ed(path)
    assert turns(dialogue) == (("1", "I won!"),)
