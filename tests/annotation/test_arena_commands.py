"""``export --format battles`` (an arena campaign's votes in the public format) and
``arena_rank`` (re-ranking a public file with evalsite's statistics)."""

import io
import json
from datetime import UTC, datetime

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.models import Judgment, Participation
from annotation.protocols import registry
from corpora.arena import arena_read, arena_write
from evalstats.style import style_features
from tests.factories import (
    AssignmentFactory,
    CampaignFactory,
    ItemFactory,
    JudgmentFactory,
)

# --- arena_rank -------------------------------------------------------------------------------

# Three models, m1 > m2 > m3; m1's replies long and formatted, the others plain.
STYLE = {
    "m1": "# Answer\n- **one**\n- two\n" + "x" * 300,
    "m2": "Plain answer.",
    "m3": "No.",
    "rare-model": "Rare.",
    "m4": "Four.",
    "m5": "## Five\n- a",
}


def battle(n: int, a: str, b: str, winner: str, **fields) -> dict:
    record = {
        "question_id": f"conv-{n}",
        "model_a": a,
        "model_b": b,
        "winner": winner,
        "judge": f"user-{n % 7}",
        "conversation_a": [
            {"role": "user", "content": f"question {n}"},
            {"role": "assistant", "content": STYLE[a]},
        ],
        "conversation_b": [
            {"role": "user", "content": f"question {n}"},
            {"role": "assistant", "content": STYLE[b]},
        ],
        "turn": 1,
        "anony": True,
        "language": "English",
        "tstamp": 1_700_000_000 + n,
    }
    record.update(fields)
    return record


def battles() -> list[dict]:
    """m1 beats m2 and m3 mostly, m2 beats m3 mostly; some ties and both-bad; 3 named votes."""
    pattern = {
        ("m1", "m2"): ["model_a"] * 7 + ["model_b"] * 2 + ["tie"],
        ("m2", "m3"): ["model_a"] * 6 + ["model_b"] * 3 + ["tie (bothbad)"],
        ("m3", "m1"): ["model_b"] * 8 + ["model_a"] * 2,
    }
    records = []
    for (a, b), winners in pattern.items():
        for winner in winners:
            records.append(battle(len(records), a, b, winner))
    # Votes given with the models shown: not counted, even though m3 "wins" them all.
    records += [battle(100 + n, "m3", "m1", "model_a", anony=False) for n in range(3)]
    return records


def rank(*args: str) -> str:
    out = io.StringIO()
    call_command("arena_rank", *args, stdout=out)
    return out.getvalue()


def test_arena_rank_prints_the_leaderboard_pairs_and_non_anonymous_count(tmp_path):
    arena_write(battles(), tmp_path / "votes.jsonl")
    text = rank(str(tmp_path / "votes.jsonl"))
    assert "votes.jsonl: 33 votes read; 3 non-anonymous (anony false) left out; 30 ranked." in text
    board = text.split("Bradley–Terry:")[1].split("Bradley–Terry log-strengths")[0]
    assert [line.split()[1] for line in board.strip().splitlines()[1:]] == ["m1", "m2", "m3"]
    assert "Votes per pair:" in text and "sign_test_p" in text
    assert "Style-controlled" not in text


def test_arena_rank_json_gives_the_same_ranking_and_counts(tmp_path):
    (tmp_path / "votes.json").write_text(json.dumps(battles()))
    result = json.loads(rank(str(tmp_path / "votes.json"), "--json"))
    assert result["votes_read"] == 33
    assert result["non_anonymous_left_out"] == 3
    assert result["votes_ranked"] == 30
    (table,) = result["rankings"]
    assert [row["model"] for row in table] == ["m1", "m2", "m3"]
    pairs = {(p["model_a"], p["model_b"]): p for p in result["pairs"]}
    assert pairs["m1", "m2"]["n"] == 10 and pairs["m1", "m2"]["both"] == 1
    assert pairs["m2", "m3"]["neither"] == 1
    assert pairs["m1", "m3"]["a_wins"] == 8  # oriented by name: m3-vs-m1 votes flipped


def test_arena_rank_with_style_adds_the_style_controlled_ranking(tmp_path):
    arena_write(battles(), tmp_path / "votes.jsonl")
    text = rank(str(tmp_path / "votes.jsonl"), "--style")
    assert "Style-controlled Bradley–Terry:" in text
    assert "Style coefficients" in text
    result = json.loads(rank(str(tmp_path / "votes.jsonl"), "--style", "--json"))
    (fit,) = result["style"]
    assert {row["model"] for row in fit["table"]} == {"m1", "m2", "m3"}
    assert {row["feature"] for row in fit["coefficients"]} <= {"chars", "headers", "lists", "bold"}
    assert len(fit["table"][0]) == 8  # ranking.BT_COLUMNS


def test_arena_rank_min_votes_leaves_out_rare_models(tmp_path):
    records = battles() + [battle(200, "m1", "rare-model", "model_b")]
    arena_write(records, tmp_path / "votes.jsonl")
    text = rank(str(tmp_path / "votes.jsonl"), "--min-votes", "2")
    assert "Left out under --min-votes: rare-model (1)." in text
    assert "rare-model" not in text.split("Bradley–Terry:")[1]


def test_arena_rank_refuses_a_bad_file_naming_the_record(tmp_path):
    records = battles()
    records[4]["winner"] = "left"
    (tmp_path / "votes.jsonl").write_text("\n".join(json.dumps(r) for r in records))
    with pytest.raises(CommandError, match=r"votes\.jsonl, record 5 \(line 5\): 'winner' is"):
        rank(str(tmp_path / "votes.jsonl"))
    with pytest.raises(CommandError, match="cannot open"):
        rank(str(tmp_path / "absent.jsonl"))
    with pytest.raises(CommandError, match="--min-votes must be 0 or more"):
        rank(str(tmp_path / "votes.jsonl"), "--min-votes", "-1")


def test_arena_rank_refuses_a_file_of_only_named_votes(tmp_path):
    arena_write([battle(n, "m1", "m2", "model_a", anony=False) for n in range(3)], tmp_path / "f")
    with pytest.raises(CommandError, match=r"no votes to rank \(3 read, 3 non-anonymous"):
        rank(str(tmp_path / "f"))


# --- export --format battles --------------------------------------------------------------------


def _conversation(turns: list[tuple[str, str]]) -> list[dict]:
    messages = []
    for user, reply in turns:
        messages += [{"role": "user", "content": user}, {"role": "assistant", "content": reply}]
    return messages


def arena_payload(n: int, turn: int, a: str = "alpha", b: str = "beta") -> dict:
    """Turn ``turn`` of conversation arena-<n>: its item's payload as the chat makes it."""
    said = [f"message {t} of {n}" for t in range(1, turn + 1)]
    replies_a = [f"**{a}** says {t}" for t in range(1, turn + 1)]
    replies_b = [f"{b} says {t}" for t in range(1, turn + 1)]
    style = {
        side: {
            key: sum(style_features(r)[key] for r in replies)
            for key in ("chars", "headers", "lists", "bold")
        }
        for side, replies in (("a", replies_a), ("b", replies_b))
    }
    return {
        "context": said,
        "model_a": a,
        "model_b": b,
        "response_a": replies_a[-1],
        "response_b": replies_b[-1],
        "conversation_a": _conversation(list(zip(said, replies_a, strict=True))),
        "conversation_b": _conversation(list(zip(said, replies_b, strict=True))),
        "turn": turn,
        "example": f"arena-{n}",
        "language": "en",
        "style_a": style["a"],
        "style_b": style["b"],
        "finish_a": "stop",
        "finish_b": "length",
    }


def _arena_protocol():
    try:
        return registry.get("arena")
    except KeyError:
        pytest.skip("the arena protocol (annotation/protocols/arena) is not registered yet")


MOMENT = datetime(2025, 3, 1, 9, 30, 15, 250000, tzinfo=UTC)


@pytest.fixture
def arena_campaign(db):
    """An arena campaign: conversation 1 voted on turns 1 and 2 by one worker (with a reason),
    conversation 2 on turn 1 by another; a third, soft-blocked worker's vote; a gold item."""
    protocol = _arena_protocol()
    campaign = CampaignFactory(protocol="arena", parameters=protocol.default_parameters())
    items = [
        ItemFactory(campaign=campaign, key=f"arena-{n}/{t}", payload=protocol.clean_item(p))
        for n, t, p in [(1, 1, arena_payload(1, 1)), (1, 2, arena_payload(1, 2))]
        + [(2, 1, arena_payload(2, 1, "beta", "gamma"))]
    ]
    gold = arena_payload(3, 1)
    ItemFactory(campaign=campaign, key="gold", payload=gold, gold={"winner": ["a"]})
    first, second, blocked = (AssignmentFactory(campaign=campaign) for _ in range(3))
    Participation.objects.create(campaign=campaign, worker=blocked.worker, soft_blocked=True)
    for assignment, item, question, value in [
        (first, items[0], "winner", "a"),
        (first, items[0], "reason", "A used bold"),
        (first, items[1], "winner", "both_bad"),
        (second, items[2], "winner", "tie"),
        (second, items[0], "winner", "b"),
        (blocked, items[2], "winner", "b"),
    ]:
        JudgmentFactory(assignment=assignment, item=item, question=question, value=value)
    Judgment.objects.update(created_at=MOMENT)
    return campaign, first.worker, second.worker


def test_export_arena_writes_one_public_record_per_vote(arena_campaign, tmp_path):
    campaign, first, second = arena_campaign
    out = io.StringIO()
    call_command(
        "export", campaign.slug, "--format", "battles", "--out", tmp_path / "a.jsonl", stdout=out
    )
    assert "wrote 4 arena votes" in out.getvalue()
    records = arena_read(tmp_path / "a.jsonl")  # it reads back as a public file
    by = {(r["question_id"], r["turn"], r["judge"]): r for r in records}
    assert set(by) == {
        ("arena-1", 1, first.pseudonym),
        ("arena-1", 2, first.pseudonym),
        ("arena-2", 1, second.pseudonym),
        ("arena-1", 1, second.pseudonym),
    }
    assert [r["winner"] for r in records] == ["model_a", "tie (bothbad)", "tie", "model_b"]
    record = by["arena-1", 2, first.pseudonym]
    payload = arena_payload(1, 2)
    assert record["model_a"] == "alpha" and record["model_b"] == "beta"
    assert record["conversation_a"] == payload["conversation_a"]
    assert record["conversation_b"] == payload["conversation_b"]
    assert record["anony"] is True and record["language"] == "en"
    assert record["tstamp"] == MOMENT.timestamp()
    assert first.external_id not in (tmp_path / "a.jsonl").read_text()  # pseudonyms only


def test_export_arena_includes_soft_blocked_workers_only_when_asked(arena_campaign, tmp_path):
    campaign, *_ = arena_campaign
    call_command(
        "export",
        campaign.slug,
        "--format",
        "battles",
        "--include-flagged",
        "--out",
        tmp_path / "all.jsonl",
        stdout=io.StringIO(),
    )
    assert len(arena_read(tmp_path / "all.jsonl")) == 5


def test_export_arena_is_refused_for_another_protocol(db, tmp_path):
    campaign = CampaignFactory(protocol="likert")
    with pytest.raises(CommandError, match=f"{campaign.slug} is a likert campaign"):
        call_command("export", campaign.slug, "--format", "battles", "--out", tmp_path / "x")
    assert not (tmp_path / "x").exists()
    with pytest.raises(CommandError, match="votes, not dialogues"):
        call_command("export", campaign.slug, "--format", "battles", "--dialogues")


def test_exported_votes_rank_as_the_campaign_voted(arena_campaign, tmp_path):
    campaign, *_ = arena_campaign
    call_command(
        "export",
        campaign.slug,
        "--format",
        "battles",
        "--out",
        tmp_path / "a.jsonl",
        stdout=io.StringIO(),
    )
    result = json.loads(rank(str(tmp_path / "a.jsonl"), "--json"))
    assert result["non_anonymous_left_out"] == 0
    pairs = {(p["model_a"], p["model_b"]): p for p in result["pairs"]}
    assert pairs["alpha", "beta"]["a_wins"] == 1 and pairs["alpha", "beta"]["b_wins"] == 1
    assert pairs["alpha", "beta"]["neither"] == 1 and pairs["beta", "gamma"]["both"] == 1


def test_arena_rank_ranks_groups_never_compared_apart(tmp_path):
    records = battles()[:30] + [
        battle(300 + n, "m4", "m5", winner)
        for n, winner in enumerate(["model_a"] * 4 + ["model_b"])
    ]
    arena_write(records, tmp_path / "votes.jsonl")
    text = rank(str(tmp_path / "votes.jsonl"), "--style")
    assert "Bradley–Terry, group 1 of 2:" in text and "Bradley–Terry, group 2 of 2:" in text
    assert "Style-controlled Bradley–Terry (group 2), group" not in text
    assert "Style-controlled Bradley–Terry (group 2):" in text
    assert "not comparable across groups" in text
