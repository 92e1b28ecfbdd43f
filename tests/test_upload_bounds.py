"""Uploads are bounded before they are parsed (``corpora.limits``, issue #35 item 5).

Each attack file goes through each entry point that takes it (the command, the wizard, the
API) and is refused with a message naming the limit, storing nothing. Each was accepted,
or held the process, or was a 500 before.
"""

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from annotation.models import Campaign, Dataset, Dialogue, Item
from corpora.limits import (
    FILES,
    UPLOADS,
    YAML_MAX_ALIASES,
    YAML_MAX_DEPTH,
    yaml_load,
)
from dashboard import drafts
from tests.api.conftest import ApiClient, error_of

pytestmark = pytest.mark.django_db

LAUGHS = "slug: lol\nname: lol\nprotocol: likert\nparameters:\n  a: &a [lol, lol, lol, lol, lol]\n"
for _n, _name in enumerate("bcdefghij"):
    _prev = "abcdefghij"[_n]
    LAUGHS += f"  {_name}: &{_name} [{', '.join([f'*{_prev}'] * 5)}]\n"
DEEP = "slug: deep\nname: deep\nprotocol: likert\nparameters: " + "[" * 10_000 + "]" * 10_000
MANY_ALIASES = "x: &x 1\ny: [" + ", ".join(["*x"] * (YAML_MAX_ALIASES + 1)) + "]\n"


def million_rows(path: Path) -> Path:
    """A Parquet file of a few KB that dictionary encoding makes a million rows."""
    n = 1_000_000
    table = pa.table({"dialogue": pa.array(["d"] * n), "text": pa.array(["hi"] * n)})
    pq.write_table(table, path, compression="zstd")
    return path


def wide_rows(path: Path) -> Path:
    """A Parquet file within the row limit whose values decode past the byte limit."""
    n = 2_000
    text = "x" * (UPLOADS.decoded_bytes // n + 1)
    table = pa.table({"dialogue": pa.array(["d"] * n), "text": pa.array([text] * n)})
    pq.write_table(table, path, compression="zstd")
    return path


def many_lines(rows: int) -> bytes:
    """Items JSONL of one more line than ``rows`` allows."""
    line = json.dumps({"key": "k", "payload": {}}) + "\n"
    return (line * (rows + 1)).encode()


def enormous_field() -> bytes:
    """A CSV whose one field is longer than a line may be."""
    return b"dialogue,text\nd," + b"x" * (UPLOADS.line_bytes + 1) + b"\n"


@pytest.fixture
def researcher(db) -> User:
    return User.objects.create_user("ada", password="pw-ada-123", is_staff=True)


@pytest.fixture
def ada(client: Client, researcher: User) -> Client:
    client.force_login(researcher)
    return client


@pytest.fixture
def api(researcher: User) -> ApiClient:
    from api.keys import api_key_create

    return ApiClient(api_key_create(user=researcher, name="tests")[1])


# --- the YAML loader -------------------------------------------------------------------------


def test_yaml_within_the_limits_loads_with_its_aliases_and_merge_keys() -> None:
    data = yaml_load("base: &b {x: 1}\nmerged: {<<: *b, y: 2}\nagain: *b\n")
    assert data == {"base": {"x": 1}, "merged": {"x": 1, "y": 2}, "again": {"x": 1}}


@pytest.mark.parametrize(
    "text, words",
    [
        (LAUGHS, "YAML aliases are limited to"),
        (MANY_ALIASES, f"YAML aliases are limited to {YAML_MAX_ALIASES} a file"),
        (DEEP, f"YAML nesting is limited to {YAML_MAX_DEPTH} levels"),
    ],
)
def test_an_alias_bomb_or_deep_nesting_is_refused_while_composing(text, words) -> None:
    import yaml

    with pytest.raises(yaml.MarkedYAMLError, match=words):
        yaml_load(text)


# --- study files: the command and the wizard -------------------------------------------------


@pytest.mark.parametrize(
    "name, text, words",
    [
        ("laughs.yaml", LAUGHS, "YAML aliases are limited to"),
        ("deep.yaml", DEEP, "YAML nesting is limited"),
        ("deep.json", '{"slug": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
        ("big.yaml", "slug: x\n" + "#" * (1024 * 1024) + "\n", "at most 1 MB"),
    ],
)
def test_campaign_create_refuses_a_bounded_study_file_and_creates_nothing(
    tmp_path, researcher, name, text, words
) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(CommandError) as refused:
        call_command("campaign_create", str(path), "--owner", "ada")
    assert name in str(refused.value) and words in str(refused.value), refused.value
    assert not Campaign.objects.exists()


@pytest.mark.parametrize(
    "name, text, words",
    [
        ("laughs.yaml", LAUGHS, "YAML aliases are limited to"),
        ("deep.yaml", DEEP, "YAML nesting is limited to"),
    ],
)
def test_the_wizard_refuses_a_study_file_bomb_with_a_message(ada, name, text, words) -> None:
    study = SimpleUploadedFile(name, text.encode())
    response = ada.post(reverse("dashboard:wizard"), {"study_file": study}, follow=True)
    shown = [str(m) for m in response.context["messages"]]
    assert any(name in m and words in m for m in shown), shown
    assert not Campaign.objects.exists()


# --- items: the wizard and the API -----------------------------------------------------------


@pytest.fixture
def draft(researcher) -> Campaign:
    return drafts.draft_create(protocol="likert", slug="ratings", name="Ratings", owner=researcher)


@pytest.mark.parametrize(
    "field, name, content, words",
    [
        ("items", "items.jsonl", many_lines(UPLOADS.rows), f"more than {UPLOADS.rows:,} lines"),
        ("contexts", "ctx.csv", enormous_field(), "line 2: longer than 1 MB"),
    ],
)
def test_the_wizard_refuses_items_over_the_upload_limits_and_adds_nothing(
    ada, draft, field, name, content, words
) -> None:
    data = {field: SimpleUploadedFile(name, content)}
    if field == "contexts":
        data["responses"] = SimpleUploadedFile("r.jsonl", b'{"id":"a","model":"m","response":"x"}')
    response = ada.post(reverse("dashboard:wizard_items", args=[draft.slug]), data)
    assert response.status_code == 400
    shown = [str(m) for m in response.context["messages"]]
    assert any(f"{name}: {words}" in m or f"{name}, {words}" in m for m in shown), shown
    assert not Item.objects.exists()


def test_the_api_refuses_an_items_upload_over_the_limits_and_adds_nothing(api, draft) -> None:
    upload = SimpleUploadedFile("items.jsonl", many_lines(UPLOADS.rows))
    response = api.client.post(
        f"/api/v1/campaigns/{draft.slug}/items/upload", {"items": upload}, headers=api.headers
    )
    assert response.status_code == 400
    assert f"more than {UPLOADS.rows:,} lines" in error_of(response)["message"]
    assert not Item.objects.exists()


# --- data sets: the command and the API ------------------------------------------------------


def test_import_dataset_refuses_a_million_row_parquet_from_its_footer(tmp_path) -> None:
    path = million_rows(tmp_path / "million.parquet")
    assert path.stat().st_size < 30_000
    with pytest.raises(CommandError, match=f"1,000,000 rows; at most {FILES.rows:,} allowed"):
        call_command("import_dataset", "parquet", str(path), "--name", "million")
    assert not Dataset.objects.exists() and not Dialogue.objects.exists()


def _dataset_upload(api: ApiClient, path: Path, fmt: str):
    data = {"file": SimpleUploadedFile(path.name, path.read_bytes()), "format": fmt}
    return api.client.post("/api/v1/datasets", data=data, headers=api.headers)


@pytest.mark.parametrize(
    "make, words",
    [
        (million_rows, f"1,000,000 rows; at most {UPLOADS.rows:,} allowed"),
        (wide_rows, f"decodes to more than {UPLOADS.decoded_bytes // 2**20} MB"),
    ],
)
def test_the_api_refuses_a_parquet_bomb_and_stores_nothing(api, tmp_path, make, words) -> None:
    response = _dataset_upload(api, make(tmp_path / "bomb.parquet"), "parquet")
    assert response.status_code == 400
    assert words in error_of(response)["message"], error_of(response)
    assert not Dataset.objects.exists() and not Dialogue.objects.exists()


@pytest.mark.parametrize(
    "name, fmt, content, words",
    [
        ("big.csv", "csv", enormous_field(), "big.csv, line 2: longer than 1 MB"),
        (
            "many.jsonl",
            "jsonl",
            (json.dumps({"dialogue": "d", "utterances": ["a"] * (UPLOADS.rows + 1)}) + "\n"),
            f"More than {UPLOADS.rows:,} utterances",
        ),
    ],
)
def test_the_api_refuses_a_text_file_over_the_limits(api, tmp_path, name, fmt, content, words):
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    response = _dataset_upload(api, path, fmt)
    assert response.status_code == 400 and words in error_of(response)["message"]
    assert not Dataset.objects.exists() and not Dialogue.objects.exists()
