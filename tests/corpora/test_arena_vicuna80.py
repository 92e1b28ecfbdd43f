"""The Vicuna-80 human votes (QLoRA's evaluation, ../shared/data/vicuna80_pairwise) written in
the arena format and re-ranked give the A/B protocol's Bradley–Terry order on the same votes.

Each file holds the votes on one ordered pair (``answer_<A>-vs-answer_<B>-…jsonl``), a line
``{"question_id", "text", "score"}`` with score 1 = A preferred, 2 = B, 3 = tie; no annotator
ids, so every vote is its own judge. A (file, question) is one conversation.
"""

import re
from pathlib import Path

import pandas as pd
import pytest

from annotation.protocols.pairwise import PairwiseProtocol
from corpora.arena import arena_outcomes, arena_read, arena_write
from evalstats import ranking

VICUNA80 = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "vicuna80_pairwise"
FILE = re.compile(r"answer_(?P<a>.+)-vs-answer_(?P<b>.+)-human-reviewer_threeclass\.jsonl")
WINNER = {1: "model_a", 2: "model_b", 3: "tie"}
CHOICE = {1: "first", 2: "second", 3: "both"}  # shown in the file's order: first is A

pytestmark = pytest.mark.skipif(not VICUNA80.is_dir(), reason="no ../shared/data/vicuna80_pairwise")


def vicuna_votes() -> list[tuple[str, str, str, str, int]]:
    """Return (conversation, model A, model B, question, score) per vote, in file order."""
    votes = []
    for path in sorted((VICUNA80 / "ratings-human").glob("*.jsonl")):
        names = FILE.fullmatch(path.name)
        assert names, path.name
        frame = pd.read_json(path, lines=True)
        for row in frame.itertuples():
            conversation = f"{path.stem}/{row.question_id}"
            votes.append((conversation, names["a"], names["b"], row.text, int(row.score)))
    return votes


def test_vicuna80_reranked_from_the_arena_format_matches_the_ab_protocol(tmp_path):
    votes = vicuna_votes()
    assert len(votes) == 7040
    records = [
        {
            "question_id": conversation,
            "model_a": a,
            "model_b": b,
            "winner": WINNER[score],
            "judge": f"vote-{n}",  # no annotator ids: one judge per vote
            "conversation_a": [
                {"role": "user", "content": question},
                {"role": "assistant", "content": ""},  # the answers are not in the data
            ],
            "conversation_b": [
                {"role": "user", "content": question},
                {"role": "assistant", "content": ""},
            ],
            "turn": 1,
            "anony": True,
            "language": "en",
        }
        for n, (conversation, a, b, question, score) in enumerate(votes)
    ]
    assert arena_write(records, tmp_path / "vicuna80.jsonl") == 7040
    arena = ranking.bradley_terry(arena_outcomes(arena_read(tmp_path / "vicuna80.jsonl")))

    items = pd.DataFrame(
        [{"item": c, "payload": {"model_a": a, "model_b": b}} for c, a, b, *_ in votes]
    ).drop_duplicates("item")
    judgments = pd.DataFrame(
        [
            {
                "item": conversation,
                "rater": f"vote-{n}",
                "question": "choice",
                "value": CHOICE[score],
                "presentation": {"order": ["a", "b"]},
            }
            for n, (conversation, _a, _b, _q, score) in enumerate(votes)
        ]
    )
    protocol = PairwiseProtocol()
    parameters = protocol.clean_parameters({"n_boot": 10})
    report = protocol.report(parameters, items, judgments)
    pairwise = report.tables["bradley_terry"]

    order = arena["model"].tolist()
    print("Vicuna-80 re-ranked from the arena format:", ", ".join(order))
    assert order == pairwise["model"].tolist()
    assert len(order) == 9
    pd.testing.assert_series_equal(arena["strength"], pairwise["strength"], check_names=False)
