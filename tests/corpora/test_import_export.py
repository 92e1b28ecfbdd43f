"""import_dataset and export: every format read, round trips, malformed files, splits."""

from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.dataset_reads import dataset_records
from annotation.models import Dataset, Dialogue, Situation, Utterance
from annotation.services.datasets import dataset_import, split_by_author
from corpora import READERS, WRITERS
from corpora.records import DialogueRecord, UtteranceRecord
from tests.corpora import samples

SHARED_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"

SOURCES = {
    "ed": ("ed_train.csv", samples.ED_CSV),
    "emotionlines": ("friends_train.json", samples.EMOTIONLINES_JSON),
    "meld": ("train_sent_emo.csv", samples.MELD_CSV),
    "emocontext": ("train.txt", samples.EMOCONTEXT_TSV),
    "jsonl": ("dialogues.jsonl", samples.GENERIC_JSONL),
    "csv": ("dialogues.csv", samples.GENERIC_CSV),
    "parlai": ("dialogues.txt", samples.PARLAI_TXT),
}


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _content(dataset: Dataset) -> list[tuple]:
    """What a round trip must keep: dialogue fields and every utterance with its label."""
    return [
        (
            r.key,
            r.source,
            r.split,
            r.emotion,
            r.situation,
            r.situation_author,
            [(u.speaker, u.text, u.label, u.annotations) for u in r.utterances],
        )
        for r in dataset_records(dataset)
    ]


def test_ed_commas_and_situation_author(tmp_path):
    records = READERS["ed"](_write(tmp_path, "ed_train.csv", samples.ED_CSV))
    first = records[0]
    assert first.situation == "I finally finished my first marathon, after a year of training."
    assert first.utterances[1].text == "Wow, that is amazing. How long did it take you?"
    assert (first.emotion, first.situation_author, first.split) == ("proud", "11", "train")


def test_emotionlines_votes_labels_and_cp1252_apostrophe(tmp_path):
    records = READERS["emotionlines"](
        _write(tmp_path, "friends_dev.json", samples.EMOTIONLINES_JSON)
    )
    first = records[0].utterances[0]
    assert first.text == "I can’t believe you ate my cake."  # \u0092 decoded as cp1252 ’
    assert first.label == "anger" and first.annotations["votes"]["anger"] == 5
    assert records[0].utterances[2].label == "non-neutral"
    assert [r.key for r in records] == ["valid/1", "valid/2"]


def test_meld_orders_by_utterance_id_and_keeps_gaps(tmp_path):
    records = READERS["meld"](_write(tmp_path, "train_sent_emo.csv", samples.MELD_CSV))
    first = records[0]
    assert [u.annotations["utterance_id"] for u in first.utterances] == [0, 1, 3]
    assert first.utterances[0].text == "Oh no, the oven is on fire!"
    assert first.source == "Friends" and first.utterances[2].label == "joy"


def test_emocontext_labels_the_last_turn(tmp_path):
    records = READERS["emocontext"](_write(tmp_path, "dev.txt", samples.EMOCONTEXT_TSV))
    assert [r.emotion for r in records] == ["happy", "sad", "angry", "others"]
    assert [u.label for u in records[1].utterances] == ["", "", "sad"]
    assert [u.speaker for u in records[1].utterances] == ["user", "agent", "user"]


@pytest.mark.django_db
@pytest.mark.parametrize("source", sorted(SOURCES))
def test_round_trip_through_every_export_format(tmp_path, source):
    name, text = SOURCES[source]
    call_command("import_dataset", source, str(_write(tmp_path, name, text)), "--name", "orig")
    original = _content(Dataset.objects.get(name="orig"))
    assert original and all(d[6] for d in original)
    for fmt in WRITERS:
        out = tmp_path / f"export.{fmt}"
        call_command("export", "--dataset", "orig", "--format", fmt, "--out", str(out))
        call_command("import_dataset", fmt, str(out), "--name", f"again-{fmt}")
        assert _content(Dataset.objects.get(name=f"again-{fmt}")) == original, fmt


@pytest.mark.django_db
@pytest.mark.parametrize("fmt", sorted(samples.MALFORMED))
def test_malformed_file_is_refused_naming_the_line_and_nothing_is_stored(tmp_path, fmt):
    good_name, good_text = SOURCES[fmt]
    good = _write(tmp_path, "ok_" + good_name, good_text)
    name, text, line = samples.MALFORMED[fmt]
    bad = _write(tmp_path, name, text)
    with pytest.raises(CommandError) as error:
        # The good file comes first: its dialogues must not be stored either.
        call_command("import_dataset", fmt, str(good), str(bad), "--name", "broken")
    assert "Nothing was imported" in str(error.value)
    assert f"{name}, {line}" in str(error.value)
    assert not Dataset.objects.exists()
    assert not Dialogue.objects.exists() and not Utterance.objects.exists()
    assert not Situation.objects.exists()


@pytest.mark.django_db
def test_malformed_parquet_is_refused_naming_the_row(tmp_path):
    records = [
        DialogueRecord(key="a", utterances=[UtteranceRecord("x", "hello")]),
        DialogueRecord(key="b", utterances=[UtteranceRecord("x", "bye")]),
    ]
    path = tmp_path / "d.parquet"
    WRITERS["parquet"](records, path)
    import pandas as pd

    frame = pd.read_parquet(path)
    frame.loc[1, "text"] = "  "
    frame.to_parquet(path, index=False)
    with pytest.raises(CommandError, match=r"d\.parquet, row 2: the utterance text is empty"):
        call_command("import_dataset", "parquet", str(path), "--name", "p")
    assert not Dataset.objects.exists() and not Utterance.objects.exists()


@pytest.mark.django_db
def test_a_dialogue_in_two_files_or_an_existing_name_is_refused(tmp_path):
    one = _write(tmp_path, "a.jsonl", samples.GENERIC_JSONL)
    two = _write(tmp_path, "b.jsonl", samples.GENERIC_JSONL)
    with pytest.raises(CommandError, match="'d1' is also in a.jsonl, line 1"):
        call_command("import_dataset", "jsonl", str(one), str(two), "--name", "x")
    call_command("import_dataset", "jsonl", str(one), "--name", "x")
    with pytest.raises(CommandError, match="exists already"):
        call_command("import_dataset", "jsonl", str(one), "--name", "x")
    assert Dialogue.objects.count() == 2


def test_split_by_author_keeps_each_author_in_one_split_at_80_10_10():
    records = [
        DialogueRecord(
            key=f"c{n}", utterances=[UtteranceRecord("s", "t")], situation_author=f"w{n % 97}"
        )
        for n in range(1000)
    ]
    splits = split_by_author(records)
    authors = {s: {r.situation_author for r in part} for s, part in splits.items()}
    assert not authors["train"] & authors["valid"]
    assert not authors["train"] & authors["test"]
    assert not authors["valid"] & authors["test"]
    assert sum(len(p) for p in splits.values()) == 1000
    # Whole authors of about 10 dialogues each: within one author of the target.
    for split, share in (("train", 0.8), ("valid", 0.1), ("test", 0.1)):
        assert abs(len(splits[split]) - 1000 * share) <= 11, (split, len(splits[split]))


@pytest.mark.django_db
def test_export_split_by_author_writes_three_files_without_shared_authors(tmp_path):
    call_command("import_dataset", "ed", str(_write(tmp_path, "ed.csv", samples.ED_CSV)))
    out = tmp_path / "ed.jsonl"
    call_command(
        "export", "--dataset", "ed", "--format", "jsonl", "--out", str(out), "--split-by-author"
    )
    seen: dict[str, str] = {}
    for split in ("train", "valid", "test"):
        part = (
            READERS["jsonl"](tmp_path / f"ed-{split}.jsonl")
            if (tmp_path / f"ed-{split}.jsonl").stat().st_size
            else []
        )
        for r in part:
            assert r.split == split
            assert seen.setdefault(r.situation_author, split) == split
    assert set(seen) == {"11", "13"}


@pytest.mark.django_db
def test_export_errors_are_clear(tmp_path):
    with pytest.raises(CommandError, match="No data set 'nope'"):
        call_command("export", "--dataset", "nope")
    with pytest.raises(CommandError, match="Name a campaign"):
        call_command("export")


@pytest.mark.django_db
@pytest.mark.skipif(not (SHARED_DATA / "emotionlines_friends").is_dir(), reason="no shared data")
def test_real_friends_files_import_whole():
    paths = sorted((SHARED_DATA / "emotionlines_friends").glob("friends_*.json"))
    result = dataset_import(name="friends", fmt="emotionlines", paths=paths, source="Friends")
    assert (result.dialogues, result.utterances) == (1000, 14503)
    assert not Utterance.objects.filter(text__regex="[\u0080-\u009f]").exists()


@pytest.mark.django_db
def test_an_imported_data_sets_kappa_interval_draws_whole_dialogues(tmp_path):
    from annotation.dataset_reads import dataset_emotion_report
    from annotation.models import Dataset
    from annotation.services.datasets import dataset_import
    from evalstats import cluster_bootstrap

    path = _write(tmp_path, "friends_dev.json", samples.EMOTIONLINES_JSON)
    dataset_import(name="friends-mini", fmt="emotionlines", paths=[path], source="friends")
    tables = dataset_emotion_report(Dataset.objects.get(name="friends-mini"), n_boot=50)
    assert set(tables["agreement"]["ci_method"]) == {cluster_bootstrap.DIALOGUES}
    assert tables["rule"]["utterances"].iloc[0] == 5
