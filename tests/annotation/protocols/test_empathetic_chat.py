"""ED collection: the balancing rule, the situation's checks and the parameters."""

import random
import time
from collections import Counter

import pytest

from annotation.protocols import LiveChat, registry
from annotation.protocols.empathetic_chat import EMOTIONS, labels_offer, sentences
from evalsite.errors import InvalidAnswer, InvalidParameters

ED = registry.get("empathetic_chat")
PARAMS = ED.clean_parameters({})


def test_there_are_32_labels_and_the_published_defaults():
    assert len(EMOTIONS) == len(set(EMOTIONS)) == 32
    assert (PARAMS["labels_offered"], PARAMS["min_utterances"], PARAMS["max_utterances"]) == (
        3,
        4,
        8,
    )
    assert ED.default_max_items_per_worker == 100 and isinstance(ED, LiveChat)


def test_a_first_time_worker_is_offered_the_labels_chosen_least_overall():
    overall = Counter({e: 5 for e in EMOTIONS})
    overall.update({"sad": -4, "proud": -5, "caring": -3})  # sad 1, proud 0, caring 2
    offered = labels_offer(EMOTIONS, overall, {}, k=3, rng=random.Random(1))
    assert offered == ["proud", "sad", "caring"]


def test_a_returning_worker_gets_labels_not_chosen_before_then_their_least_chosen():
    mine = Counter({e: 1 for e in EMOTIONS[:30]})
    mine[EMOTIONS[0]] = 3
    offered = labels_offer(EMOTIONS, {}, mine, k=3, rng=random.Random(2))
    assert offered[:2] == sorted(EMOTIONS[30:], key=offered.index)  # the two unused ones
    assert offered[2] in EMOTIONS[1:30]  # then one chosen once, never the one chosen 3 times
    fresh = labels_offer(EMOTIONS, {}, Counter({"sad": 1}), k=3, rng=random.Random(3))
    assert "sad" not in fresh


def test_offers_spread_over_all_labels_when_workers_follow_the_rule():
    overall: Counter = Counter()
    rng = random.Random(0)
    for _ in range(320):
        overall[rng.choice(labels_offer(EMOTIONS, overall, {}, k=3, rng=rng))] += 1
    assert min(overall.values()) >= 8 and max(overall.values()) <= 12


@pytest.mark.parametrize(
    ("text", "n"),
    [
        ("I won.", 1),
        ("I won! Then I cried... And laughed", 3),
        ("No punctuation at all", 1),
        ('He said "wow." Then left.', 2),
        ("", 0),
    ],
)
def test_sentences_are_counted_with_an_unterminated_tail(text, n):
    assert sentences(text) == n


@pytest.mark.parametrize(
    ("text", "n"),
    [
        ("I saw Dr. Smith at 3 p.m. on Monday. He said I was fine. I cried.", 3),
        ("Mr. and Mrs. Jones came to visit, e.g. for tea. It was lovely.", 2),
        ("J. K. Rowling signed my book. I was so happy.", 2),
        ("It cost 3.5 dollars.", 1),
        ("It was 10 a.m. when Dr. Jones called.", 1),
        ("I live in the U.S. and love it.", 1),
        ("I was so scared... it was dark. Then the lights came on.", 2),
    ],
)
def test_abbreviations_initials_decimals_and_ellipses_do_not_end_a_sentence(text, n):
    assert sentences(text) == n


@pytest.mark.parametrize(
    ("text", "n"),
    [
        ("We met at 5 p.m. Then we ate.", 2),
        ("I moved to the U.S. Then I cried.", 2),
        ("No. I did not win.", 2),
        ("It ended at 5 p.m.", 1),
    ],
)
def test_a_dotted_abbreviation_before_a_capitalised_word_ends_a_sentence(text, n):
    assert sentences(text) == n


@pytest.mark.parametrize("text", ["Dr. " * 50_000, "." * 100_000 + "a", "a." * 100_000 + " b"])
def test_sentences_of_a_long_text_are_counted_in_linear_time(text):
    started = time.perf_counter()
    sentences(text)
    assert time.perf_counter() - started < 2  # "Dr. " * 50,000 took 316 s with a rescan


def test_a_three_sentence_situation_with_abbreviations_is_accepted():
    text = "I saw Dr. Smith at 3 p.m. on Monday. He said I was fine. I cried with relief."
    assert ED.clean_situation(PARAMS, ["sad", "proud", "caring"], "sad", text) == ("sad", text)


def test_there_is_no_word_minimum_by_default_but_a_campaign_may_set_one():
    offered = ["sad", "proud", "caring"]
    assert PARAMS["situation_min_words"] == 0
    assert ED.clean_situation(PARAMS, offered, "proud", "I won!") == ("proud", "I won!")
    strict = ED.clean_parameters({"situation_min_words": 5})
    with pytest.raises(InvalidAnswer) as exc:
        ED.clean_situation(strict, offered, "proud", "I won!")
    assert exc.value.fields["situation"] == "Please write at least 5 words (you wrote 2)."


def test_a_situation_without_words_is_refused_even_without_a_minimum():
    with pytest.raises(InvalidAnswer) as exc:
        ED.clean_situation(PARAMS, ["sad"], "sad", "🙂 !!!")
    assert "in words" in exc.value.fields["situation"]


@pytest.mark.parametrize("value", [-1, 201, 2.5, "5", True, None])
def test_a_bad_word_minimum_is_refused_naming_it(value):
    with pytest.raises(InvalidParameters) as exc:
        ED.clean_parameters({"situation_min_words": value})
    assert set(exc.value.fields) == {"situation_min_words"}


def test_a_situation_must_use_an_offered_label_and_have_one_to_three_sentences():
    offered = ["sad", "proud", "caring"]
    assert ED.clean_situation(PARAMS, offered, "proud", "  I  won the  race today. ") == (
        "proud",
        "I won the race today.",
    )
    with pytest.raises(InvalidAnswer) as exc:
        ED.clean_situation(PARAMS, offered, "furious", "   ")
    assert set(exc.value.fields) == {"emotion", "situation"}
    with pytest.raises(InvalidAnswer, match="situation"):
        ED.clean_situation(PARAMS, offered, "sad", "One two three four five. " * 4)
    with pytest.raises(InvalidAnswer):
        ED.clean_situation(PARAMS, offered, "sad", "word " * 81)


def test_bad_parameters_are_refused_naming_each():
    with pytest.raises(InvalidParameters) as exc:
        ED.clean_parameters({"min_utterances": 9, "heartbeat_s": 0, "emotions": ["Sad"]})
    assert set(exc.value.fields) == {"heartbeat_s", "emotions"}
    with pytest.raises(InvalidParameters) as exc:
        ED.clean_parameters({"min_utterances": 9})
    assert "min_utterances" in exc.value.fields


def test_interactive_ssa_needs_models_and_keeps_meenas_defaults():
    ssa = registry.get("ssa_interactive")
    with pytest.raises(InvalidParameters) as exc:
        ssa.clean_parameters({})
    assert "models" in exc.value.fields
    params = ssa.clean_parameters({"models": ["generic-bot"]})
    assert (params["opener"], params["min_turns"], params["max_turns"]) == ("Hi!", 14, 28)
    assert params["conversations_per_model"] == 100
