"""ACUTE-Eval items from whole conversations: collected chats and imported logs, paired across
models, balanced over matchups, validated, and idempotent (`chat_to_acute`)."""

from collections import Counter
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.items_acute import Conversation, acute_items_add, conversations_from_campaign
from annotation.models import Campaign, Dialogue, Item, Utterance
from evalsite.errors import InvalidParameters
from tests.factories import CampaignFactory

pytestmark = pytest.mark.django_db

LOGS = """Meena Conversation 1
Human: Hi!
Meena: Hey there! What's up?
Human: Not much, you?
Meena: Writing a paper about cows.

Meena Conversation 2
Human: Hello
Meena: Hi! How is your day going?
Human: Fine thanks
Meena: Glad to hear it. Any plans?

Meena Conversation 3
Human: Hi
Meena: Hello! Do you like music?
Human: Yes, jazz.
Meena: Jazz is great, who do you listen to?

Mitsuku Conversation 1
Human: Hi!
Mitsuku: Hi there.
Human: How are you?
Mitsuku: I am fine.

Mitsuku Conversation 2
Human: Hello
Mitsuku: Hello, what is your name?
Human: Ann
Mitsuku: Nice to meet you Ann.

Human Conversation 1
Human 1: Hi!
Human 2: Any plans for the weekend?
Human 1: Hiking, you?
Human 2: Working, sadly.

Mitsuku Conversation 3
Human: Hi
Mitsuku: Hi.
"""


def run(*args: str) -> str:
    out = StringIO()
    call_command("chat_to_acute", *args, stdout=out)
    return out.getvalue()


@pytest.fixture
def logs(tmp_path):
    path = tmp_path / "logs.txt"
    path.write_text(LOGS)
    call_command("import_dataset", "meena", str(path), "--name", "logs", stdout=StringIO())
    return "logs"


def usage(items, side):
    return Counter(item.payload[f"dialogue_{side}"] for item in items)


def test_imported_logs_are_paired_across_models_evenly_and_a_second_run_adds_nothing(logs):
    out = run("acute-logs", "--dataset", logs, "--pairs-per-matchup", "4")
    campaign = Campaign.objects.get(slug="acute-logs")
    assert campaign.protocol == "acute" and campaign.status == "draft"
    # "Human" logs have no speaker called Human and Mitsuku 3 is too short: left out.
    assert "from 5 conversations (2 left out" in out
    items = list(Item.objects.filter(campaign=campaign))
    assert len(items) == 4
    for item in items:
        payload = item.payload
        assert (payload["model_a"], payload["model_b"]) == ("Meena", "Mitsuku")
        assert (payload["speaker_a"], payload["speaker_b"]) == ("Meena", "Mitsuku")
        assert item.key == f"{payload['dialogue_a']}~{payload['dialogue_b']}"
        assert payload["turns_a"][0] == {"speaker": "Human", "text": payload["turns_a"][0]["text"]}
    # 4 pairs of 3 × 2 conversations: each Mitsuku log twice, each Meena log once or twice.
    assert sorted(usage(items, "b").values()) == [2, 2]
    assert sorted(usage(items, "a").values()) == [1, 1, 2]
    assert len({item.key for item in items}) == 4
    again = run("acute-logs", "--dataset", logs, "--pairs-per-matchup", "4")
    assert "added 0 ACUTE items" in again and Item.objects.count() == 4


def test_a_speaker_map_brings_in_human_human_logs_and_short_matchups_are_named(logs):
    out = run(
        "acute-logs", "--dataset", logs, "--speaker", "Human=Human 2", "--pairs-per-matchup", "3"
    )
    items = Item.objects.filter(campaign__slug="acute-logs")
    matchups = Counter((i.payload["model_a"], i.payload["model_b"]) for i in items)
    assert matchups == {("Human", "Meena"): 3, ("Human", "Mitsuku"): 2, ("Meena", "Mitsuku"): 3}
    human = next(i for i in items if i.payload["model_a"] == "Human")
    assert human.payload["speaker_a"] == "Human 2"
    assert "too few conversations: Human vs Mitsuku: 2 of 3 (1 × 2 conversations)" in out


def test_a_larger_number_per_matchup_tops_up_without_touching_the_pairs_made(logs):
    run("acute-logs", "--dataset", logs, "--pairs-per-matchup", "2")
    before = set(Item.objects.values_list("key", flat=True))
    out = run("acute-logs", "--dataset", logs, "--pairs-per-matchup", "6", "--seed", "7")
    after = set(Item.objects.values_list("key", flat=True))
    assert before < after and len(after) == 6  # every pair of 3 × 2 conversations
    assert "added 4 ACUTE items" in out


def chat(campaign, key, model, turns, *, status="complete", flagged=False):
    dialogue = Dialogue.objects.create(
        campaign=campaign,
        key=key,
        status=status,
        flagged=flagged,
        metadata={"model": model} if model else {},
    )
    for index in range(turns):
        speaker = "bot" if index % 2 else "user"
        Utterance.objects.create(
            dialogue=dialogue, index=index, speaker=speaker, text=f"{key} turn {index}"
        )
    return dialogue


def test_collected_chats_give_their_bot_s_turns_to_judge_and_leave_out_the_rest():
    chats = CampaignFactory(slug="chats", protocol="ssa_interactive")
    for n in range(2):
        chat(chats, f"g{n}", "generic-bot", 6)
        chat(chats, f"r{n}", "retrieval", 6)
    chat(chats, "short", "generic-bot", 3)
    chat(chats, "flagged", "retrieval", 6, flagged=True)
    chat(chats, "nomodel", "", 6)
    chat(chats, "live", "retrieval", 6, status="active")
    conversations, skipped = conversations_from_campaign(campaign=chats)
    assert sorted(c.key for c in conversations) == ["chats/g0", "chats/g1", "chats/r0", "chats/r1"]
    assert skipped == 3  # short, flagged, no model (the active chat is not complete)
    assert {c.speaker for c in conversations} == {"bot"}
    with_flagged, _ = conversations_from_campaign(campaign=chats, include_flagged=True)
    assert "chats/flagged" in {c.key for c in with_flagged}
    out = run("acute-chats", "--chats", "chats", "--pairs-per-matchup", "10")
    assert "generic-bot vs retrieval: 4 pairs" in out
    items = Item.objects.filter(campaign__slug="acute-chats")
    assert sorted(usage(items, "a").values()) == [2, 2]
    assert sorted(usage(items, "b").values()) == [2, 2]


def test_bad_requests_are_refused_with_a_message(logs):
    with pytest.raises(CommandError, match="--chats SLUG and/or --dataset NAME"):
        run("acute-x")
    with pytest.raises(CommandError, match="no data set 'nope'"):
        run("acute-x", "--dataset", "nope")
    with pytest.raises(CommandError, match="no campaign 'nope'"):
        run("acute-x", "--chats", "nope")
    with pytest.raises(CommandError, match="MODEL=SPEAKER"):
        run("acute-x", "--dataset", logs, "--speaker", "Human")
    with pytest.raises(CommandError, match="two models or more"):
        run("acute-x", "--dataset", logs, "--models", "Meena")
    with pytest.raises(CommandError, match="No usable conversation of: Xiaoice"):
        run("acute-x", "--dataset", logs, "--models", "Meena", "Xiaoice")
    with pytest.raises(CommandError, match="from 1 to 100000"):
        run("acute-x", "--dataset", logs, "--pairs-per-matchup", "0")
    CampaignFactory(slug="likert-one", protocol="likert")
    with pytest.raises(CommandError, match="'likert-one' is a likert campaign"):
        run("likert-one", "--dataset", logs)
    assert not Campaign.objects.filter(slug="acute-x").exists()


def test_the_service_refuses_an_item_the_protocol_refuses_and_stores_nothing(logs):
    good = Conversation(key="x/1", model="a", speaker="bot", turns=(("u", "hi"), ("bot", "yo")))
    bad = Conversation(key="x/2", model="b", speaker="bot", turns=(("u", "hi"), ("bot", " ")))
    with pytest.raises(InvalidParameters, match="'turns_b' turn 2: 'text' must be"):
        acute_items_add(slug="acute-bad", conversations=[good, bad], pairs_per_matchup=1)
    assert not Campaign.objects.filter(slug="acute-bad").exists()
