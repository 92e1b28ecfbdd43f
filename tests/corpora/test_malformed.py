"""Malformed files and arguments: a clear error naming file and line, never a traceback."""

import json
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.models import Dataset, Dialogue, Situation, Utterance
from annotation.services import datasets as services
from corpora import READERS, DatasetError

UTTERANCE = {"speaker": "Ann", "utterance": "Hello there", "emotion": "joy"}


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _emotionlines(**changes: object) -> str:
    """Two dialogues, the second's first utterance (line 5) with ``changes``."""
    bad = json.dumps({**UTTERANCE, **changes})
    good = json.dumps(UTTERANCE)
    return f"[\n  [\n    {good}\n  ],\n  [\n    {bad}\n  ]\n]\n"


def _nothing_stored() -> bool:
    return not (
        Dataset.objects.exists()
        or Dialogue.objects.exists()
        or Utterance.objects.exists()
        or Situation.objects.exists()
    )


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"emotion": ["joy"]}, "'emotion' must be text"),
        ({"emotion": {"joy": 1}}, "'emotion' must be text"),
        ({"speaker": 7}, "'speaker' must be text"),
        ({"utterance": None}, "'utterance' must be text"),
        ({"annotation": ["0000500"]}, "'annotation' must be 7 digits"),
        ({"annotation": "²000500"}, "'annotation' must be 7 digits"),
    ],
)
def test_emotionlines_field_of_the_wrong_type_is_a_clear_error(tmp_path, changes, message):
    path = _write(tmp_path, "friends_train.json", _emotionlines(**changes))
    with pytest.raises(CommandError) as error:
        call_command("import_dataset", "emotionlines", str(path), "--name", "f")
    assert "friends_train.json, line 6 (dialogue 2, utterance 1)" in str(error.value)
    assert message in str(error.value)
    assert _nothing_stored()


@pytest.mark.django_db
@pytest.mark.parametrize("trailing", ["]", "[[]]", "garbage", '{"x": 1}'])
def test_emotionlines_text_after_the_closing_bracket_is_refused(tmp_path, trailing):
    path = _write(tmp_path, "friends_train.json", _emotionlines() + "\n" + trailing + "\n")
    with pytest.raises(CommandError, match=r"friends_train\.json, line 10: .*after the closing"):
        call_command("import_dataset", "emotionlines", str(path), "--name", "f")
    assert _nothing_stored()


@pytest.mark.parametrize(
    ("fmt", "name", "text", "message"),
    [
        (
            "jsonl",
            "d.jsonl",
            '{"dialogue": "a", "utterances": ["hi"]}\n' + "[" * 100_000,
            "line 2: not valid JSON .nested too deeply",
        ),
        (
            "jsonl",
            "d.jsonl",
            '{"dialogue": "a", "utterances": ["hi"], "n": ' + "9" * 5000 + "}",
            "line 1: not valid JSON .Exceeds the limit",
        ),
        ("jsonl", "d.jsonl", '{"dialogue": 1' + "0" * 5000 + ', "utterances": ["hi"]}', "line 1"),
        (
            "jsonl",
            "d.jsonl",
            '{"dialogue": "a", "metadata": {"x": NaN}, "utterances": ["hi"]}',
            "line 1: not valid JSON .NaN is not a JSON number",
        ),
        ("jsonl", "d.jsonl", '{"dialogue": true, "utterances": ["hi"]}', "'dialogue' must be"),
        ("emotionlines", "x.json", "[[" + "[" * 100_000, "x.json, line 1: .*nested too deeply"),
        ("csv", "d.csv", 'dialogue,text,metadata\na,hi,"' + "[" * 100_000 + '"\n', "line 2"),
        (
            "parlai",
            "d.txt",
            "text:hi\tmetadata:" + "[" * 100_000 + "\tepisode_done:True\n",
            "d.txt, line 1: 'metadata' is not valid JSON .nested too deeply",
        ),
        (
            "meld",
            "m.csv",
            "Utterance,Speaker,Emotion,Dialogue_ID,Utterance_ID\nhi,A,joy,²,0\n",
            "m.csv, line 2: Dialogue_ID and Utterance_ID must be whole numbers",
        ),
    ],
)
def test_readers_raise_a_dataset_error_for_values_of_the_wrong_kind(
    tmp_path, fmt, name, text, message
):
    with pytest.raises(DatasetError, match=message):
        READERS[fmt](_write(tmp_path, name, text))


def test_emocontext_splits_lines_only_at_newlines(tmp_path):
    path = _write(tmp_path, "e.txt", "id\tturn1\tturn2\tturn3\r\n1\ta\u2028b\tc\x0cd\te\r\n")
    [record] = READERS["emocontext"](path)
    assert [u.text for u in record.utterances] == ["a\u2028b", "c\x0cd", "e"]


@pytest.mark.django_db
@pytest.mark.parametrize(
    "metadata",
    [
        '{"x": "nul \\u0000 inside"}',
        '{"x": "lone \\ud800 surrogate"}',
    ],
)
def test_values_the_database_cannot_hold_are_refused_before_storing(tmp_path, metadata):
    path = _write(
        tmp_path, "d.jsonl", f'{{"dialogue": "a", "metadata": {metadata}, "utterances": ["hi"]}}\n'
    )
    with pytest.raises(CommandError, match=r"d\.jsonl, line 1: .*metadata"):
        call_command("import_dataset", "jsonl", str(path), "--name", "d")
    assert _nothing_stored()


@pytest.mark.django_db
def test_a_nul_in_a_text_is_refused_before_storing(tmp_path):
    path = _write(tmp_path, "d.jsonl", '{"dialogue": "a", "utterances": ["hi \\u0000 there"]}\n')
    with pytest.raises(CommandError, match=r"d\.jsonl, line 1: .*NUL"):
        call_command("import_dataset", "jsonl", str(path), "--name", "d")
    assert _nothing_stored()


@pytest.mark.django_db
def test_a_source_longer_than_its_column_is_refused_and_nothing_stored(tmp_path):
    path = _write(tmp_path, "d.jsonl", '{"dialogue": "a", "utterances": ["hi"]}\n')
    with pytest.raises(CommandError, match="source .* 65 characters long; at most 64"):
        call_command("import_dataset", "jsonl", str(path), "--name", "d", "--source", "s" * 65)
    assert _nothing_stored()
    call_command("import_dataset", "jsonl", str(path), "--name", "d", "--source", "s" * 64)
    assert Dialogue.objects.get().source == "s" * 64


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("n" * 65, "65 characters long; at most 64"),
        ("bad\n", "letters, digits"),
        ("with space", "letters, digits"),
    ],
)
def test_a_data_set_name_that_does_not_fit_is_refused(tmp_path, name, message):
    path = _write(tmp_path, "d.jsonl", '{"dialogue": "a", "utterances": ["hi"]}\n')
    with pytest.raises(CommandError, match=message):
        call_command("import_dataset", "jsonl", str(path), "--name", name)
    assert _nothing_stored()


@pytest.mark.django_db
def test_an_error_found_only_while_storing_rolls_back_every_file(tmp_path, monkeypatch):
    """Both files pass reading; the key in both breaks the unique constraint on insert."""
    first = _write(
        tmp_path,
        "a.jsonl",
        '{"dialogue": "x", "situation": "Lost my keys.", "utterances": ["one", "two"]}\n'
        '{"dialogue": "same", "utterances": ["three"]}\n',
    )
    second = _write(tmp_path, "b.jsonl", '{"dialogue": "same", "utterances": ["four"]}\n')

    def read_without_cross_file_check(fmt, paths):
        return [r for p in paths for r in READERS[fmt](Path(p))]

    monkeypatch.setattr(services, "records_read", read_without_cross_file_check)
    with pytest.raises(CommandError, match="Nothing was imported.*could not be stored"):
        call_command("import_dataset", "jsonl", str(first), str(second), "--name", "two")
    assert _nothing_stored()
    # The connection is still usable: a good import afterwards is stored whole.
    call_command("import_dataset", "jsonl", str(first), "--name", "one")
    assert Dialogue.objects.count() == 2 and Situation.objects.count() == 1


@pytest.mark.postgres  # SQLite does not enforce column lengths
@pytest.mark.django_db
def test_a_value_too_long_for_its_column_rolls_back_every_file(tmp_path, monkeypatch):
    """With the pre-store length check gone, the database itself must refuse (PostgreSQL)."""
    first = _write(tmp_path, "a.jsonl", '{"dialogue": "x", "utterances": ["one"]}\n')
    second = _write(
        tmp_path,
        "b.jsonl",
        '{"dialogue": "y", "source": "' + "s" * 65 + '", "utterances": ["t"]}\n',
    )
    monkeypatch.setattr(services, "_record_check", lambda record: None)
    with pytest.raises(CommandError, match="Nothing was imported.*could not be stored"):
        call_command("import_dataset", "jsonl", str(first), str(second), "--name", "two")
    assert _nothing_stored()


@pytest.mark.django_db
def test_a_reader_bug_on_a_malformed_file_still_gives_a_command_error(tmp_path, monkeypatch):
    def broken(path):
        raise TypeError("unhashable type: 'list'")

    monkeypatch.setitem(READERS, "jsonl", broken)
    path = _write(tmp_path, "d.jsonl", "{}\n")
    with pytest.raises(CommandError, match=r"d\.jsonl: cannot be read \(TypeError"):
        call_command("import_dataset", "jsonl", str(path), "--name", "d")
    assert _nothing_stored()
