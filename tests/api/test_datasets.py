"""Data sets through the API: import a file (all or nothing), list, get, export."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotation.models import Dataset, Dialogue
from tests.api.conftest import ApiClient, error_of

DIALOGUES = [
    {"dialogue": "d1", "source": "Friends", "split": "train", "utterances": ["Hi", "Hello"]},
    {"dialogue": "d2", "source": "Friends", "split": "test", "utterances": ["Bye", "See you"]},
    {"dialogue": "d3", "utterances": [{"speaker": "A", "text": "Mail me at a@b.org"}]},
]


def _jsonl(rows: list) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def _upload(
    api: ApiClient, content: bytes, fmt: str = "jsonl", filename: str = "talk.jsonl", **form
):
    data = {"file": SimpleUploadedFile(filename, content), "format": fmt, **form}
    return api.client.post("/api/v1/datasets", data=data, headers=api.headers)


def test_an_import_then_the_list_and_the_data_set_with_its_counts(api) -> None:
    response = _upload(api, _jsonl(DIALOGUES), description="three chats")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["utterances"] == 5 and body["dataset"]["name"] == "talk"
    got = api.get("/datasets/talk").json()
    assert got["dialogues"] == 3 and got["format"] == "jsonl"
    assert got["sources"] == {"": 1, "Friends": 2} and got["splits"]["train"] == 1
    listed = api.get("/datasets").json()
    assert listed["count"] == 1 and listed["results"][0] == got


def test_an_import_can_deidentify_and_take_a_name_and_source(api) -> None:
    response = _upload(api, _jsonl(DIALOGUES), name="chats", deidentify="true", source="Chat")
    assert response.status_code == 201, response.content
    assert response.json()["replacements"] == 1
    assert response.json()["dataset"]["sources"] == {"Chat": 1, "Friends": 2}
    assert "a@b.org" not in json.dumps(list(Dialogue.objects.values_list("utterances__text")))


def test_a_malformed_file_is_a_400_naming_the_line_and_stores_nothing(api) -> None:
    content = _jsonl(DIALOGUES[:2]) + b"{not json\n"
    error = error_of(_upload(api, content))
    assert error["code"] == "invalid" and "talk.jsonl, line 3" in error["message"], error
    assert "Nothing was imported" in error["message"] and "/tmp" not in error["message"]
    assert not Dataset.objects.exists() and not Dialogue.objects.exists()


@pytest.mark.parametrize(
    "content, fmt, words",
    [
        (b"\x00\xff garbage", "parquet", "Nothing was imported"),
        (b"dialogue,text\n", "csv", "Nothing was imported"),
        (b"\xff\xfe\x00", "jsonl", "Nothing was imported"),
    ],
)
def test_an_unknown_format_or_unreadable_bytes_are_refused(api, content, fmt, words) -> None:
    response = _upload(api, content, fmt=fmt)
    assert response.status_code == 400 and words in error_of(response)["message"]
    assert not Dataset.objects.exists()


def test_an_unknown_format_is_refused_by_the_schema_that_lists_the_readers(api) -> None:
    response = _upload(api, _jsonl(DIALOGUES), fmt="yaml")
    error = error_of(response)
    assert response.status_code == 422 and error["field"] == "format"
    assert "'jsonl'" in error["message"]
    assert not Dataset.objects.exists()


def test_a_name_taken_is_a_409_and_a_bad_name_a_422(api) -> None:
    assert _upload(api, _jsonl(DIALOGUES)).status_code == 201
    assert error_of(_upload(api, _jsonl(DIALOGUES)))["code"] == "conflict"
    error = error_of(_upload(api, _jsonl(DIALOGUES), name="bad name!"))
    assert (
        error["code"] == "invalid"
        and error["field"] == "name"
        and "letters, digits" in error["message"]
    )
    assert Dataset.objects.count() == 1


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parlai", "parquet"])
def test_an_export_downloads_the_data_set_in_a_format_it_reads_back(api, fmt) -> None:
    assert _upload(api, _jsonl(DIALOGUES)).status_code == 201
    response = api.get(f"/datasets/talk/export?format={fmt}")
    assert response.status_code == 200 and "attachment" in response["Content-Disposition"]
    content = b"".join(response.streaming_content)
    suffix = {"parlai": "txt"}.get(fmt, fmt)
    again = _upload(api, content, fmt=fmt, filename=f"again.{suffix}")
    assert again.status_code == 201, again.content
    assert again.json()["dataset"]["dialogues"] == 3


def test_an_export_in_an_unknown_format_or_of_no_data_set_is_refused(api) -> None:
    assert _upload(api, _jsonl(DIALOGUES)).status_code == 201
    assert error_of(api.get("/datasets/talk/export?format=yaml"))["field"] == "format"
    assert error_of(api.get("/datasets/nothing/export?format=csv"))["code"] == "not_found"
    assert error_of(api.get("/datasets/nothing"))["code"] == "not_found"


def test_every_data_set_operation_needs_a_key(db) -> None:
    anonymous = ApiClient(None)
    for response in (
        anonymous.get("/datasets"),
        anonymous.get("/datasets/talk"),
        anonymous.get("/datasets/talk/export?format=csv"),
        _upload(anonymous, _jsonl(DIALOGUES)),
    ):
        assert response.status_code == 401 and error_of(response)["code"] == "unauthenticated"
    assert not Dataset.objects.exists()
