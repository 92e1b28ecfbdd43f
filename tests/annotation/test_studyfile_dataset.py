"""A study file's ``items: {dataset: …}``: the items of an imported data set, or a clear refusal."""

import io
import json

import pytest
import yaml
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.models import Campaign

pytestmark = pytest.mark.django_db

DIALOGUES = [
    [
        {"speaker": "A", "utterance": "Did you see that?", "emotion": "surprise"},
        {"speaker": "B", "utterance": "Yes, great!", "emotion": "joy"},
    ],
    [{"speaker": "A", "utterance": "I lost my keys again.", "emotion": "sadness"}],
    [{"speaker": "B", "utterance": "Fine.", "emotion": "neutral"}],
]


@pytest.fixture
def imported(tmp_path):
    """The data set ``friends`` (EmotionLines format, split ``test``)."""
    path = tmp_path / "friends_test.json"
    path.write_text(json.dumps(DIALOGUES), encoding="utf-8")
    call_command(
        "import_dataset", "emotionlines", str(path), "--name", "friends", stdout=io.StringIO()
    )
    return "friends"


def _study(tmp_path, protocol: str, dataset: object) -> str:
    data = {"slug": "from-data", "name": "From data", "protocol": protocol}
    data["items"] = {"dataset": dataset}
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(
    "dataset, keys",
    [
        ("friends", ["friends/test/1", "friends/test/2", "friends/test/3"]),
        ({"name": "friends", "split": "test", "limit": 2}, ["friends/test/1", "friends/test/2"]),
    ],
)
def test_a_study_file_takes_its_items_from_an_imported_data_set(tmp_path, imported, dataset, keys):
    out = io.StringIO()
    call_command("campaign_create", _study(tmp_path, "emotionlines", dataset), stdout=out)
    campaign = Campaign.objects.get(slug="from-data")
    assert sorted(campaign.items.values_list("key", flat=True)) == keys
    assert f"{len(keys)} item(s)" in out.getvalue()
    first = campaign.items.get(key="friends/test/1").payload
    assert [u["text"] for u in first["utterances"]] == ["Did you see that?", "Yes, great!"]


@pytest.mark.parametrize(
    "protocol, dataset, message",
    [
        ("likert", "friends", "items.dataset: Likert"),
        ("emotionlines", {"name": "friends", "limit": "ten"}, "items.dataset.limit"),
        ("emotionlines", {"name": "friends", "split": 3}, "items.dataset.split"),
        ("emotionlines", {"name": "friends", "split": "dev"}, "no dialogues in split 'dev'"),
        ("emotionlines", "missing", "no data set 'missing'"),
    ],
)
def test_a_data_set_the_study_cannot_use_is_refused_by_name_and_creates_nothing(
    tmp_path, imported, protocol, dataset, message
):
    with pytest.raises(CommandError, match=message):
        call_command("campaign_create", _study(tmp_path, protocol, dataset), stdout=io.StringIO())
    assert not Campaign.objects.filter(slug="from-data").exists()
