"""Every import format under generated and hostile bytes (random bytes, a BOM, bad UTF-8, NUL
and surrogate bytes, deep JSON, huge lines, wrong columns): the readers refuse with their
module's DatasetError / CorpusError, the commands with CommandError, and a refused file
stores nothing."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from hypothesis import event, example, given
from hypothesis import strategies as st

from annotation.models import Dataset, Item, Utterance
from corpora import READERS, DatasetError
from corpora.readers import (
    CorpusError,
    read_contexts,
    read_jsonl_objects,
    read_responses,
)
from tests.corpora import samples
from tests.factories import CampaignFactory
from tests.fuzz.strategies import bounded, json_text, json_values, nested

SAMPLES: dict[str, tuple[str, str]] = {
    "ed": ("ed.csv", samples.ED_CSV),
    "emotionlines": ("friends_train.json", samples.EMOTIONLINES_JSON),
    "meld": ("train_sent_emo.csv", samples.MELD_CSV),
    "emocontext": ("train.txt", samples.EMOCONTEXT_TSV),
    "jsonl": ("d.jsonl", samples.GENERIC_JSONL),
    "csv": ("d.csv", samples.GENERIC_CSV),
    "parlai": ("d.txt", samples.PARLAI_TXT),
}
CORPORA: dict[str, tuple[str, str]] = {
    "contexts.jsonl": ("contexts.jsonl", '{"id": "c1", "context": ["hi", "hello"]}\n'),
    "contexts.csv": ("contexts.csv", "id,turn_1,turn_2,reference\nc1,hi,hello,hey\n"),
    "contexts.txt": ("contexts.txt", "hi\thello\n"),
    "responses": ("responses.jsonl", '{"id": "c1", "model": "m", "response": "hey"}\n'),
    "items": ("items.jsonl", '{"key": "k1", "payload": {"context": ["hi"]}}\n'),
    "gold": ("gold.jsonl", '{"key": "g1", "payload": {}, "gold": {"empathy": ["5"]}}\n'),
}
HOSTILE_BYTES = [b"\x00", b"\xff", b"\xed\xa0\x80", b"\xef\xbb\xbf", b"\r", b'"', b",", b"\t"]


@st.composite
def mutated(draw, text: str) -> bytes:
    """``text`` as UTF-8, changed the way broken or hostile files are."""
    lines = text.encode().split(b"\n")
    how = draw(
        st.sampled_from(
            ["bom", "bytes", "drop_column", "add_column", "json", "deep", "huge", "random"]
        )
    )
    event(how)
    if how == "bom":
        return b"\xef\xbb\xbf" + b"\n".join(lines)
    if how == "bytes":
        for _ in range(draw(st.integers(1, 4))):
            n = draw(st.integers(0, len(lines) - 1))
            at = draw(st.integers(0, len(lines[n])))
            lines[n] = lines[n][:at] + draw(st.sampled_from(HOSTILE_BYTES)) + lines[n][at:]
        return b"\n".join(lines)
    if how in ("drop_column", "add_column"):
        n = draw(st.integers(0, len(lines) - 1))
        separator = b"\t" if b"\t" in lines[n] else b","
        cells = lines[n].split(separator)
        if how == "drop_column" and cells:
            cells.pop(draw(st.integers(0, len(cells) - 1)))
        else:
            cells.append(draw(st.binary(max_size=8)))
        lines[n] = separator.join(cells)
        return b"\n".join(lines)
    if how == "json":
        values = draw(st.lists(json_values, min_size=1, max_size=4))
        return "\n".join(json_text(v) for v in values).encode("utf-8", "surrogatepass")
    if how == "deep":
        depth = draw(st.sampled_from([1000, 5000, 50_000]))
        return lines[0] + b"\n" + nested(depth).encode() + b"\n"
    if how == "huge":
        return lines[0] + b"\n" + b"x" * 300_000 + b"\n" + b"\n".join(lines[1:])
    return draw(st.binary(max_size=300))


def _write(folder: Path, name: str, content: bytes) -> Path:
    path = folder / name
    path.write_bytes(content)
    return path


@bounded(150)
@given(data=st.data(), fmt=st.sampled_from(sorted(SAMPLES)))
@example(data=None, fmt="ed")  # a UTF-8 BOM before "conv_id"
def test_dataset_readers_refuse_with_a_dataset_error_only(tmp_path, data, fmt):
    name, text = SAMPLES[fmt]
    content = b"\xef\xbb\xbf" + text.encode() if data is None else data.draw(mutated(text))
    path = _write(tmp_path, name, content)
    try:
        records = READERS[fmt](path)
    except DatasetError as refused:
        assert str(refused)
        return
    if data is None:
        assert records  # the BOM is no part of the first column's name
    for record in records:
        json.dumps(record.as_dict(), ensure_ascii=False).encode("utf-8")  # storable text


@bounded(25)
@given(
    columns=st.dictionaries(
        st.sampled_from(["dialogue", "text", "speaker", "label", "utterance_idx", "other"]),
        st.lists(
            st.one_of(st.none(), st.integers(), st.floats(), st.text(max_size=5)),
            min_size=2,
            max_size=2,
        ),
        max_size=5,
    )
)
def test_the_parquet_reader_refuses_with_a_dataset_error_only(tmp_path, columns):
    import pandas as pd

    path = tmp_path / "d.parquet"
    try:
        pd.DataFrame(columns or {"x": [1]}).to_parquet(path, index=False)
    except Exception:  # noqa: BLE001 (a column pyarrow cannot write: nothing to read)
        path.write_bytes(b"PAR1 not really")
    with contextlib.suppress(DatasetError):
        READERS["parquet"](path)


@bounded(120)
@given(data=st.data(), kind=st.sampled_from(sorted(CORPORA)))
@example(data=None, kind="items")  # nested 50,000 deep
def test_corpus_readers_refuse_with_a_corpus_error_only(tmp_path, data, kind):
    name, text = CORPORA[kind]
    content = nested(50_000).encode() if data is None else data.draw(mutated(text))
    path = _write(tmp_path, name, content)
    read = {
        "responses": read_responses,
        "items": lambda p: read_jsonl_objects(p, ("key", "payload")),
        "gold": lambda p: read_jsonl_objects(p, ("key", "payload", "gold")),
    }.get(kind, read_contexts)
    try:
        read(path)
    except CorpusError as refused:
        assert str(refused)


@pytest.fixture
def campaign(db):
    return CampaignFactory()


@bounded(60)
@given(data=st.data(), fmt=st.sampled_from(sorted(SAMPLES)))
def test_import_dataset_refuses_with_a_command_error_and_stores_nothing(tmp_path, db, data, fmt):
    name, text = SAMPLES[fmt]
    path = _write(tmp_path, name, data.draw(mutated(text)))
    before = (Dataset.objects.count(), Utterance.objects.count())
    dataset = f"fuzz-{Dataset.objects.count()}"
    try:
        call_command("import_dataset", fmt, str(path), "--name", dataset, stdout=_Sink())
    except CommandError:
        assert (Dataset.objects.count(), Utterance.objects.count()) == before


@bounded(60)
@given(data=st.data(), kind=st.sampled_from(["contexts.jsonl", "contexts.csv", "gold"]))
@example(data=None, kind="gold")  # nested 50,000 deep
def test_add_items_refuses_with_a_command_error_and_stores_nothing(tmp_path, campaign, data, kind):
    name, text = CORPORA[kind]
    content = nested(50_000).encode() if data is None else data.draw(mutated(text))
    path = _write(tmp_path, name, content)
    option = "--gold" if kind == "gold" else "--contexts"
    responses = _write(tmp_path, "r.jsonl", b'{"id": "c1", "model": "m", "response": "hey"}\n')
    extra = [] if kind == "gold" else ["--responses", str(responses)]
    before = Item.objects.count()
    try:
        call_command("add_items", campaign.slug, option, str(path), *extra, stdout=_Sink())
    except CommandError:
        assert Item.objects.count() == before


class _Sink:
    def write(self, text: str) -> None:
        pass

    def flush(self) -> None:
        pass
