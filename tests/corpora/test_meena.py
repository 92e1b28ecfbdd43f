"""Meena's released conversation logs (``import_dataset meena``): the format, bad files, and
the real logs in ../shared/data/meena when they are there."""

import io
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Dataset, Dialogue, Utterance
from corpora import DatasetError
from corpora.sources import read_meena

SHARED_MEENA = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "meena"

LOG = """
Meena Conversation 1
Human: Hi!
Meena: Hey there! What's up?
Human: not much: reading <REDACTED_TERM>

Meena Conversation 2
Human: Hi!
Meena: Hello! How are you? :)
"""


def write(tmp_path: Path, text: str, name: str = "meena.txt") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_conversations_become_dialogues_with_system_and_speakers(tmp_path):
    records = read_meena(write(tmp_path, LOG))
    assert [r.key for r in records] == ["meena-1", "meena-2"]
    first = records[0]
    assert first.source == "Meena" and first.metadata == {"system": "Meena", "conversation": 1}
    assert [(u.speaker, u.text) for u in first.utterances] == [
        ("Human", "Hi!"),
        ("Meena", "Hey there! What's up?"),
        ("Human", "not much: reading <REDACTED_TERM>"),  # a colon inside the text stays
    ]
    humans = read_meena(write(tmp_path, "Human Conversation 3\nHuman 1: Hi\nHuman 2: Hey\n"))
    assert [u.speaker for u in humans[0].utterances] == ["Human 1", "Human 2"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no conversations"),
        ("Human: Hi!\n", "line 1: expected a header like 'Meena Conversation 1'"),
        ("Meena Conversation 1\nHi there\n", "line 2: expected 'Speaker: text'"),
        ("Meena Conversation 1\nHuman: \n", "line 2: expected 'Speaker: text'"),
        ("Meena Conversation 1\n\nMeena Conversation 2\nHuman: x\n", "has no turns"),
        ("Meena Conversation 1\nHuman: a\n\nMeena Conversation 1\nHuman: b\n", "appears twice"),
        ("Meena Conversation 1\nHuman: a\n\nHuman: b\n", "line 4: expected a header"),
    ],
)
def test_a_malformed_log_is_refused_naming_the_line(tmp_path, text, message):
    with pytest.raises(DatasetError, match=message):
        read_meena(write(tmp_path, text))


@pytest.mark.django_db
def test_import_dataset_stores_the_logs_all_or_nothing(tmp_path):
    out = io.StringIO()
    call_command("import_dataset", "meena", str(write(tmp_path, LOG)), stdout=out)
    assert Dialogue.objects.count() == 2 and Utterance.objects.count() == 5
    bad = write(tmp_path, LOG + "\nMeena Conversation 3\noops\n", "bad.txt")
    with pytest.raises(CommandError, match="bad.txt, line 12"):
        call_command("import_dataset", "meena", str(bad), stdout=io.StringIO())
    assert Dataset.objects.count() == 1


@pytest.mark.skipif(not SHARED_MEENA.is_dir(), reason="no shared data")
def test_the_released_logs_read_whole():
    meena = read_meena(SHARED_MEENA / "meena.txt")
    assert len(meena) == 93 and sum(len(r.utterances) for r in meena) == 1818  # 909 + 909
    mitsuku = read_meena(SHARED_MEENA / "mitsuku_conversations_1-17.txt")
    assert len(mitsuku) == 17 and {r.source for r in mitsuku} == {"Mitsuku"}
    humans = read_meena(SHARED_MEENA / "human_conversations_1-26.txt")
    assert len(humans) == 26 and sum(len(r.utterances) for r in humans) == 403  # 207 + 196
