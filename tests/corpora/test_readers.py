"""Readers of the files items are built from: context sets, responses, JSONL items."""

import pytest

from corpora.readers import read_contexts
from corpora.records import CorpusError, DatasetError


def test_contexts_nested_too_deeply_are_refused_with_a_message(tmp_path):
    path = tmp_path / "contexts.jsonl"
    path.write_text('{"context": ' + "[" * 50_000 + "]" * 50_000 + "}\n")
    with pytest.raises(CorpusError, match="line 1: not valid JSON \\(nested too deeply\\)"):
        read_contexts(path)


def test_a_context_set_error_is_a_dataset_error(tmp_path):
    path = tmp_path / "contexts.yaml"
    path.write_text("- hi\n")
    with pytest.raises(DatasetError, match="use a .jsonl, .csv or .txt file"):
        read_contexts(path)
