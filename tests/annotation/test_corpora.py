"""The EmpatheticDialogues CSV reader."""

from pathlib import Path

import pytest

from annotation.corpora import CorpusError, read_contexts, read_empathetic_dialogues

HEADER = "conv_id,utterance_idx,context,prompt,speaker_idx,utterance,selfeval,tags\n"


def write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "ed.csv"
    path.write_text(HEADER + body, encoding="utf-8")
    return path


def test_reads_dialogues_and_restores_escaped_commas(tmp_path):
    path = write(
        tmp_path,
        "hit:1_0,1,proud,I won_comma_ finally.,1,I won the race_comma_ at last!,,\n"
        "hit:1_0,2,proud,I won_comma_ finally.,2,Well done!,,\n",
    )
    [dialogue] = read_empathetic_dialogues(path)
    assert dialogue.emotion == "proud"
    assert dialogue.situation == "I won, finally."
    assert dialogue.turns == (("1", "I won the race, at last!"), ("2", "Well done!"))


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
    with pytest.raises(CorpusError, match=message):
        read_empathetic_dialogues(write(tmp_path, body))


def test_missing_columns_and_files_are_clear_errors(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n")
    with pytest.raises(CorpusError, match="missing column"):
        read_empathetic_dialogues(bad)
    with pytest.raises(CorpusError, match="cannot open"):
        read_empathetic_dialogues(tmp_path / "absent.csv")


def test_demo_corpus_is_valid_and_large_enough():
    path = Path(__file__).resolve().parents[2] / "annotation" / "demo" / "empathetic_demo.csv"
    dialogues = read_empathetic_dialogues(path)
    assert len(dialogues) >= 30
    assert all(len(d.turns) >= 2 for d in dialogues)


def test_a_file_saved_with_a_byte_order_mark_reads_like_one_without(tmp_path):
    path = tmp_path / "ed.csv"
    body = "hit:1_0,1,proud,I won.,1,I won!,,\n"
    path.write_text(HEADER + body, encoding="utf-8-sig")  # Excel's "CSV UTF-8"
    [dialogue] = read_empathetic_dialogues(path)
    assert dialogue.turns == (("1", "I won!"),)


def test_contexts_nested_too_deeply_are_refused_with_a_message(tmp_path):
    path = tmp_path / "contexts.jsonl"
    path.write_text('{"context": ' + "[" * 50_000 + "]" * 50_000 + "}\n")
    with pytest.raises(CorpusError, match="line 1: not valid JSON \\(nested too deeply\\)"):
        read_contexts(path)
