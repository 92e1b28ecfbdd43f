"""Decoding parameters, the cross-turn repetition filter and sample-and-rank."""

import pytest

from modelhub.decoding import (
    Candidate,
    decoding_validate,
    longest_common_run,
    repeats_earlier_turn,
    sample_and_rank,
    words,
)

# Meena, Table 5: the bot loops on an earlier turn of its own.
JAPAN = [
    "Hi!",
    "Hi! How are you?",
    "I'm good. I'm planning a trip to Japan. Have you been?",
    "I'd love to go to Japan too! I've heard the food is amazing.",
    "It is! What would you want to do there?",
]


def test_the_meena_preset_is_sample_and_rank_20_top_k_40_t_1_with_the_filter():
    meena = decoding_validate({"preset": "meena"})
    assert (meena.strategy, meena.num_samples, meena.top_k, meena.temperature) == (
        "sample_and_rank",
        20,
        40,
        1.0,
    )
    assert meena.repetition_filter
    assert decoding_validate({"preset": "meena", "num_samples": 5}).num_samples == 5


def test_the_strategy_follows_from_the_parameters_when_not_given():
    assert decoding_validate({}).strategy == "greedy"
    assert decoding_validate(None).as_dict() == decoding_validate({"strategy": "greedy"}).as_dict()
    assert decoding_validate({"temperature": 0.7}).strategy == "sample"
    assert decoding_validate({"num_samples": 4}).strategy == "sample_and_rank"


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"tempreature": 1}, "unknown decoding parameter 'tempreature'"),
        ({"preset": "beam"}, "unknown decoding preset"),
        ({"strategy": "beam"}, "unknown decoding strategy"),
        ({"temperature": 0}, "temperature must be above 0"),
        ({"temperature": "hot"}, "'temperature' must be int or float"),
        ({"top_k": True}, "'top_k' must be int"),
        ({"top_p": 1.5}, "top_p"),
        ({"top_k": -1}, "top_k"),
        ({"num_samples": 1000}, "num_samples"),
        ({"max_new_tokens": 0}, "max_new_tokens"),
        ({"strategy": "greedy", "temperature": 0.5}, "greedy decoding takes no temperature"),
        ({"strategy": "sample", "num_samples": 3}, "needs strategy 'sample_and_rank'"),
        ({"repetition_filter": True}, "repetition filter needs"),
        ([1, 2], "JSON object"),
    ],
)
def test_bad_parameters_are_refused_with_a_clear_message(params, message):
    with pytest.raises(ValueError, match=message):
        decoding_validate(params)


def test_words_ignore_case_and_punctuation_but_keep_contractions():
    assert words("I'd love to go to Japan, too!") == [
        "i'd",
        "love",
        "to",
        "go",
        "to",
        "japan",
        "too",
    ]
    assert words("I\u2019d") == ["i'd"]


def test_longest_common_run_counts_consecutive_words_only():
    assert longest_common_run(words("a b c d"), words("x b c d y")) == 3
    assert longest_common_run(words("a x b x c"), words("a b c")) == 1
    assert longest_common_run([], ["a"]) == 0


def test_the_japan_loop_of_meena_table_5_is_filtered():
    loop = "I'd love to go to Japan too! I've heard the food is amazing."
    assert repeats_earlier_turn(loop, JAPAN)
    assert repeats_earlier_turn("Haha, I'd love to go to Japan too.", JAPAN)
    assert not repeats_earlier_turn("I'd visit Kyoto and eat ramen every day.", JAPAN)


def test_a_short_turn_said_again_is_a_repetition_and_the_threshold_is_configurable():
    assert repeats_earlier_turn("Hi! How are you?", JAPAN)  # the whole earlier turn
    assert not repeats_earlier_turn("How are you doing today, my friend?", JAPAN)
    # 4 shared words ("i'd love to go") is below the default of 5, above a threshold of 4
    assert not repeats_earlier_turn("I'd love to go skiing.", JAPAN)
    assert repeats_earlier_turn("I'd love to go skiing.", JAPAN, min_words=4)


def test_sample_and_rank_drops_repetitions_then_keeps_the_best_length_normalised_candidate():
    params = decoding_validate({"preset": "meena"})
    candidates = [
        # the most likely, but it repeats the earlier turn
        Candidate("I'd love to go to Japan too! I've heard the food is amazing.", -2.0, 14),
        Candidate("I'd climb Mount Fuji.", -3.0, 5),  # mean -0.6
        Candidate("Eat sushi.", -1.5, 3),  # mean -0.5: best per token
        Candidate("Sushi", -0.9, 1),  # highest total... but mean -0.9
    ]
    assert sample_and_rank(candidates, JAPAN, params).text == "Eat sushi."
    no_filter = decoding_validate({"preset": "meena", "repetition_filter": False})
    assert sample_and_rank(candidates, JAPAN, no_filter).text.startswith("I'd love")


def test_when_every_candidate_repeats_the_best_one_is_kept():
    params = decoding_validate({"preset": "meena"})
    candidates = [Candidate("Hi! How are you?", -4.0, 5), Candidate("Hi!", -1.0, 2)]
    assert sample_and_rank(candidates, JAPAN, params).text == "Hi!"
    with pytest.raises(ValueError, match="at least one"):
        sample_and_rank([], JAPAN, params)
