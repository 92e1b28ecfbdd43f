"""add_items --dataset: an imported data set's dialogues become emotion-labeling items."""

import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.models import Campaign
from annotation.services import campaign_create

pytestmark = pytest.mark.django_db

CHATS = [
    [
        {"speaker": "A", "utterance": "Mail me at ana@example.org, Tom", "emotion": "neutral"},
        {"speaker": "B", "utterance": "Sure, see you in Paris!", "emotion": "joy"},
    ],
    [{"speaker": "A", "utterance": "I lost my keys again.", "emotion": "sadness"}],
]
EMOCONTEXT = (
    "id\tturn1\tturn2\tturn3\tlabel\n"
    "7\tI got the job\tCongrats!\tSo happy\thappy\n"
    "8\tmy dog died\tOh no\tI miss him\tsad\n"
)


def _import(tmp_path, fmt, name, text, *extra):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    call_command(
        "import_dataset", fmt, str(path), "--name", name.split(".")[0], *extra, stdout=io.StringIO()
    )


def test_a_deidentified_chat_log_becomes_one_emotionlines_item_per_dialogue(tmp_path):
    names = tmp_path / "names.txt"
    names.write_text("Tom\nParis\tlocation\n", encoding="utf-8")
    _import(
        tmp_path,
        "emotionlines",
        "chats_test.json",
        json.dumps(CHATS),
        "--source",
        "EmotionPush",
        "--deidentify",
        "--names",
        str(names),
    )
    campaign = campaign_create(slug="el-chats", name="Chats", protocol="emotionlines")
    out = io.StringIO()
    call_command("add_items", "el-chats", "--dataset", "chats_test", stdout=out)
    assert "Added 2 item(s)" in out.getvalue()
    payloads = dict(campaign.items.values_list("key", "payload"))
    first = payloads["chats_test/test/1"]
    assert first["source"] == "EmotionPush" and first["dialogue"] == "test/1"
    texts = [u["text"] for u in first["utterances"]]
    assert texts == ["Mail me at email_1, person_1", "Sure, see you in location_1!"]
    # A second run adds nothing (same keys, same payloads).
    call_command("add_items", "el-chats", "--dataset", "chats_test", stdout=io.StringIO())
    assert campaign.items.count() == 2
    # Another source's data set, with the same dialogue keys, joins the same campaign.
    _import(tmp_path, "emotionlines", "friends_test.json", json.dumps(CHATS), "--source", "Friends")
    call_command("add_items", "el-chats", "--dataset", "friends_test", stdout=io.StringIO())
    sources = campaign.items.values_list("payload__source", flat=True)
    assert sorted(sources) == ["EmotionPush"] * 2 + ["Friends"] * 2


def test_emocontext_items_are_the_three_turns_and_other_shapes_are_refused(tmp_path):
    _import(tmp_path, "emocontext", "ec.txt", EMOCONTEXT)
    campaign = campaign_create(slug="ec", name="EC", protocol="emocontext")
    call_command("add_items", "ec", "--dataset", "ec", "--limit", "1", stdout=io.StringIO())
    assert list(campaign.items.values_list("payload", flat=True)) == [
        {"turns": ["I got the job", "Congrats!", "So happy"], "dialogue": "7"}
    ]
    _import(tmp_path, "emotionlines", "friends_dev.json", json.dumps(CHATS))
    with pytest.raises(CommandError, match="has 2 turns; an EmoContext item is a 3-turn"):
        call_command("add_items", "ec", "--dataset", "friends_dev")
    assert campaign.items.count() == 1


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--dataset", "nope"], "No data set 'nope'"),
        (["--dataset", "ec", "--split", "test"], "no dialogues in split 'test'"),
        (["--dataset", "ec", "--limit", "0"], "at least 1"),
    ],
)
def test_bad_dataset_arguments_are_refused_and_add_nothing(tmp_path, arguments, message):
    _import(tmp_path, "emocontext", "ec.txt", EMOCONTEXT)
    campaign_create(slug="ec", name="EC", protocol="emocontext")
    with pytest.raises(CommandError, match=message):
        call_command("add_items", "ec", *arguments)
    assert not Campaign.objects.get(slug="ec").items.exists()


def test_a_protocol_that_does_not_label_dialogues_refuses_a_dataset(tmp_path):
    _import(tmp_path, "emocontext", "ec.txt", EMOCONTEXT)
    campaign_create(slug="likes", name="Likert", protocol="likert")
    with pytest.raises(CommandError, match="not built from dialogues"):
        call_command("add_items", "likes", "--dataset", "ec")
