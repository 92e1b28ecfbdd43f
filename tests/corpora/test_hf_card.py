"""corpora.hf without a database: licence ids, size buckets, features and the citation."""

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from corpora.hf import (
    DATA_FILE,
    HUB_LICENSES,
    cff_bibtex,
    config_read,
    license_clean,
    size_category,
)
from corpora.records import DatasetError

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("given", "hub"), [("cc-by-4.0", "cc-by-4.0"), (" CC0-1.0 ", "cc0-1.0")])
def test_a_licence_is_the_hubs_lowercase_id(given, hub):
    assert license_clean(given) == hub


@pytest.mark.parametrize("given", ["cc-by-5.0", "other", "unknown", "CC BY 4.0", ""])
def test_an_id_the_hub_does_not_know_or_no_licence_at_all_is_refused(given):
    with pytest.raises(DatasetError, match="Unknown licence.*huggingface.co/docs/hub"):
        license_clean(given)
    assert "other" not in HUB_LICENSES and "unknown" not in HUB_LICENSES


@pytest.mark.parametrize(
    ("rows", "bucket"),
    [(0, "n<1K"), (999, "n<1K"), (1_000, "1K<n<10K"), (250_000, "100K<n<1M"), (10**9, "n>100M")],
)
def test_the_size_category_is_the_hubs_bucket(rows, bucket):
    assert size_category(rows) == bucket


def test_features_are_declared_only_when_every_column_has_a_plain_dtype(tmp_path):
    plain = pa.table({"item": ["a", "b"], "n": [1, 2], "ok": [True, False], "x": [0.5, None]})
    (tmp_path / "plain").mkdir()
    pq.write_table(plain, tmp_path / "plain" / DATA_FILE)
    config = config_read(tmp_path, "plain")
    assert config.rows == 2
    assert config.features == [
        {"name": "item", "dtype": "string"},
        {"name": "n", "dtype": "int64"},
        {"name": "ok", "dtype": "bool"},
        {"name": "x", "dtype": "float64"},
    ]
    nested = pa.table({"item": ["a"], "turns": [["hi", "there"]]})
    (tmp_path / "nested").mkdir()
    pq.write_table(nested, tmp_path / "nested" / DATA_FILE)
    assert config_read(tmp_path, "nested").features is None  # the Hub reads them from the file


def test_the_citation_is_the_projects_citation_cff_as_bibtex():
    text = (ROOT / "CITATION.cff").read_text(encoding="utf-8")
    cff = yaml.safe_load(text)
    bibtex = cff_bibtex(text)
    assert bibtex.startswith("@software{evalsite,\n") and bibtex.endswith("\n}")
    assert f"  title = {{{cff['title']}}}" in bibtex
    assert f"  version = {{{cff['version']}}}" in bibtex
    assert f"  year = {{{str(cff['date-released'])[:4]}}}" in bibtex
    assert "  author = {{The evalsite authors}}" in bibtex  # one corporate author, kept whole
