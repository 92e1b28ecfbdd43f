"""The public arena vote format: read, checked at the edge, written, and turned into outcomes."""

import json

import pytest

from corpora.arena import (
    ARENA_OUTCOMES,
    NON_ANONYMOUS,
    OUTCOME_COLUMNS,
    VOTE_WINNERS,
    ArenaError,
    arena_min_votes,
    arena_outcomes,
    arena_read,
    arena_write,
    conversation_id,
    conversation_style,
)
from corpora.records import DatasetError


def vote(n: int = 0, **fields) -> dict:
    """One valid vote: turn 2 of conversation q<n> between m1 and m2."""
    record = {
        "question_id": f"q{n}",
        "model_a": "m1",
        "model_b": "m2",
        "winner": "model_a",
        "judge": f"arena_user_{n}",
        "conversation_a": [
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "# Hello\n- one\n- two\n**bold**"},
            {"role": "user", "content": "And?"},
            {"role": "assistant", "content": "More."},
        ],
        "conversation_b": [
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "Hey."},
            {"role": "user", "content": "And?"},
            {"role": "assistant", "content": ""},
        ],
        "turn": 2,
        "anony": True,
        "language": "English",
        "tstamp": 1683000000.25,
    }
    record.update(fields)
    return record


def lines(path, *records) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))


def test_written_votes_read_back_the_same(tmp_path):
    records = [
        vote(1),
        vote(2, winner="tie", anony=False, extra={"kept": ["as", "is"]}),
        vote(3, winner="tie (bothbad)", model_a="ünï ✓", language=""),
    ]
    del records[2]["tstamp"], records[2]["question_id"]
    assert arena_write(records, tmp_path / "votes.jsonl") == 3
    assert arena_read(tmp_path / "votes.jsonl") == records
    again = tmp_path / "again.jsonl"
    arena_write(arena_read(tmp_path / "votes.jsonl"), again)
    assert again.read_bytes() == (tmp_path / "votes.jsonl").read_bytes()


def test_a_json_list_reads_as_jsonl_does(tmp_path):
    (tmp_path / "votes.json").write_text(json.dumps([vote(1), vote(2)], indent=2))
    lines(tmp_path / "votes.jsonl", vote(1), vote(2))
    assert arena_read(tmp_path / "votes.json") == arena_read(tmp_path / "votes.jsonl")


def test_a_bom_blank_lines_and_crlf_are_read(tmp_path):
    body = "\r\n".join(["", json.dumps(vote(1)), "   ", json.dumps(vote(2)), "", ""])
    (tmp_path / "votes.jsonl").write_bytes(b"\xef\xbb\xbf" + body.encode())
    assert [r["question_id"] for r in arena_read(tmp_path / "votes.jsonl")] == ["q1", "q2"]
    (tmp_path / "list.json").write_bytes(b"\xef\xbb\xbf\n " + json.dumps([vote(3)]).encode())
    assert arena_read(tmp_path / "list.json")[0]["question_id"] == "q3"


def _without(field: str) -> dict:
    record = vote(2)
    del record[field]
    return record


BAD_VOTES = {
    "unknown winner": (vote(2, winner="tie(bothbad)"), "'winner' is 'tie(bothbad)'"),
    "evalsite's own answer as winner": (vote(2, winner="a"), "'winner' is 'a'; expected one of"),
    "a model against itself": (vote(2, model_b=" m1"), "'model_a' and 'model_b' are the same"),
    "missing winner": (_without("winner"), "missing field(s) 'winner'"),
    "missing conversation": (_without("conversation_b"), "missing field(s) 'conversation_b'"),
    "missing judge": (_without("judge"), "missing field(s) 'judge'"),
    "missing language": (_without("language"), "missing field(s) 'language'"),
    "empty model": (vote(2, model_a=""), "'model_a' must be a non-empty text"),
    "model as a number": (vote(2, model_b=7), "'model_b' must be a non-empty text"),
    "judge null": (vote(2, judge=None), "'judge' must be a non-empty text"),
    "conversation as text": (vote(2, conversation_a="Hi"), "'conversation_a' must be a non-empty"),
    "empty conversation": (vote(2, conversation_b=[]), "'conversation_b' must be a non-empty"),
    "a system message": (
        vote(2, conversation_a=[{"role": "system", "content": "x"}]),
        "'conversation_a' message 1: 'role' must be 'user' or 'assistant', not 'system'",
    ),
    "content null": (
        vote(2, conversation_b=[{"role": "user", "content": "Hi"}, {"role": "assistant"}]),
        "'conversation_b' message 2: 'content' must be text",
    ),
    "message as text": (vote(2, conversation_a=["Hi"]), "message 1 must be an object"),
    "turn 0": (vote(2, turn=0), "'turn' must be a whole number, 1 or more"),
    "turn as text": (vote(2, turn="2"), "'turn' must be a whole number"),
    "turn true": (vote(2, turn=True), "'turn' must be a whole number"),
    "anony as text": (vote(2, anony="false"), "'anony' must be true or false"),
    "tstamp as text": (vote(2, tstamp="2023-05-01"), "'tstamp' must be a number"),
    "question_id true": (vote(2, question_id=True), "'question_id' must be"),
    "language null": (vote(2, language=None), "'language' must be text"),
    "not an object": (["model_a", "model_b"], "a vote must be a JSON object"),
}


@pytest.mark.parametrize("case", BAD_VOTES, ids=list(BAD_VOTES))
def test_a_bad_vote_is_refused_naming_the_record_and_field(tmp_path, case):
    bad, message = BAD_VOTES[case]
    lines(tmp_path / "votes.jsonl", vote(1), bad)
    with pytest.raises(ArenaError) as refused:
        arena_read(tmp_path / "votes.jsonl")
    assert str(refused.value).startswith("votes.jsonl, record 2 (line 2): ")
    assert message in str(refused.value)
    (tmp_path / "votes.json").write_text(json.dumps([vote(1), bad], indent=1))
    with pytest.raises(ArenaError, match=r"^votes\.json, record 2 \(line \d+\): ") as listed:
        arena_read(tmp_path / "votes.json")
    assert message in str(listed.value)


BAD_FILES = {
    "bad JSON on a line": (
        json.dumps(vote(1)) + '\n\n{"model_a": "m1",, }\n',
        "votes.jsonl, record 2 (line 3): not valid JSON (Expecting property name",
    ),
    "truncated line": (
        json.dumps(vote(1)) + "\n\n" + json.dumps(vote(2))[:50] + "\n",
        "votes.jsonl, record 2 (line 3): not valid JSON (",
    ),
    "NaN": (json.dumps(vote(1)).replace("1683000000.25", "NaN"), "record 1 (line 1): not valid"),
    "bad JSON in a list": (
        "[\n" + json.dumps(vote(1)) + ",\n" + json.dumps(vote(2))[:-5] + "\n]",
        "votes.jsonl, record 2 (line 4): not valid JSON (",
    ),
    "text after the list": ("[" + json.dumps(vote(1)) + "]\nmore", "after the closing ']'"),
    "an empty file": ("", "votes.jsonl: no votes"),
    "only blank lines": ("\n  \n\r\n", "votes.jsonl: no votes"),
    "an empty list": ("[ ]", "votes.jsonl: no votes"),
    "a JSON object": (json.dumps({"votes": [vote(1)]}), "record 1 (line 1): missing field(s)"),
}


@pytest.mark.parametrize("case", BAD_FILES, ids=list(BAD_FILES))
def test_a_malformed_file_is_refused_with_a_clear_error(tmp_path, case):
    text, message = BAD_FILES[case]
    (tmp_path / "votes.jsonl").write_text(text)
    with pytest.raises(ArenaError) as refused:
        arena_read(tmp_path / "votes.jsonl")
    assert message in str(refused.value)
    assert "Traceback" not in str(refused.value)


def test_a_missing_file_is_a_dataset_error(tmp_path):
    with pytest.raises(DatasetError, match="cannot open"):
        arena_read(tmp_path / "absent.jsonl")


def test_writing_refuses_a_bad_vote_by_its_number(tmp_path):
    with pytest.raises(ArenaError, match=r"out\.jsonl, record 2: 'winner' is 'b'"):
        arena_write([vote(1), vote(2, winner="b")], tmp_path / "out.jsonl")


def test_winners_map_to_ranking_outcomes_and_votes_to_winners():
    assert ARENA_OUTCOMES == {
        "model_a": "a",
        "model_b": "b",
        "tie": "both",  # half a win each way
        "tie (bothbad)": "neither",  # left out of Bradley–Terry
    }
    # An arena campaign's answers reach the same outcomes as its own report gives them.
    assert {v: ARENA_OUTCOMES[w] for v, w in VOTE_WINNERS.items()} == {
        "a": "a",
        "b": "b",
        "tie": "both",
        "both_bad": "neither",
    }


def test_outcomes_count_only_anonymous_votes():
    records = [
        vote(1),
        vote(2, winner="model_b", anony=False),
        vote(3, winner="tie"),
        vote(4, winner="tie (bothbad)", anony=False),
        {k: v for k, v in vote(5, winner="tie (bothbad)").items() if k != "anony"},
    ]
    outcomes = arena_outcomes(records)
    assert list(outcomes.columns) == OUTCOME_COLUMNS
    assert outcomes.attrs[NON_ANONYMOUS] == 2
    assert outcomes["item"].tolist() == ["q1", "q3", "q5"]  # no anony field: counted
    assert outcomes["outcome"].tolist() == ["a", "both", "neither"]
    assert outcomes["rater"].tolist() == ["arena_user_1", "arena_user_3", "arena_user_5"]
    assert (outcomes["a"] == "m1").all() and (outcomes["b"] == "m2").all()
    assert outcomes["turn"].tolist() == [2, 2, 2]


def test_outcomes_carry_each_sides_style_from_its_assistant_messages():
    row = arena_outcomes([vote(1)]).iloc[0]
    reply = "# Hello\n- one\n- two\n**bold**"
    assert row["chars_a"] == len(reply) + len("More.")
    assert (row["headers_a"], row["lists_a"], row["bold_a"]) == (1, 2, 1)
    assert (row["chars_b"], row["headers_b"], row["lists_b"], row["bold_b"]) == (4, 0, 0, 0)
    user_only = [{"role": "user", "content": "# not counted\n- no"}]
    assert conversation_style(user_only) == {"chars": 0, "headers": 0, "lists": 0, "bold": 0}


def test_votes_of_one_conversation_share_its_item_without_a_question_id():
    first = {k: v for k, v in vote(1, turn=1).items() if k != "question_id"}
    first["conversation_a"] = first["conversation_a"][:2]
    later = {k: v for k, v in vote(1).items() if k != "question_id"}
    other = {**later, "model_b": "m3"}
    assert conversation_id(first) == conversation_id(later) != conversation_id(other)
    assert conversation_id(vote(7, question_id=70)) == "70"


def test_min_votes_leaves_out_rare_models_until_every_model_has_enough():
    records = [vote(n) for n in range(3)]  # m1-m2 three times
    records += [vote(3, model_b="m3"), vote(4, model_a="m3", model_b="m4")]
    outcomes, left_out = arena_min_votes(arena_outcomes(records), 2)
    # m4 has one vote; without it, m3 has one too.
    assert left_out == {"m4": 1, "m3": 1}
    assert set(outcomes["a"]) | set(outcomes["b"]) == {"m1", "m2"}
    same, none = arena_min_votes(arena_outcomes(records), 0)
    assert len(same) == 5 and none == {}
