"""The demo backends: GenericBot and the gold replies."""

import pytest

from modelhub.backends import Example, backend_load


def test_generic_bot_answers_questions_with_i_dont_know_and_statements_with_ok():
    bot = backend_load("generic_bot", {})
    examples = [
        Example(turns=("Hi", "How are you?")),
        Example(turns=("I love tennis.",)),
        Example(turns=('Did you say "yes?"',)),
    ]
    assert bot.generate(examples, {}) == ["I don't know.", "ok", "I don't know."]


def test_gold_returns_the_reference_and_refuses_examples_without_one():
    gold = backend_load("gold", {})
    assert gold.generate([Example(turns=("hi",), reference="hello")], {}) == ["hello"]
    with pytest.raises(ValueError, match="reference"):
        gold.generate([Example(turns=("hi",))], {})


def test_unknown_backend_or_bad_config_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown backend"):
        backend_load("gpt", {})
    with pytest.raises(ValueError, match="bad configuration"):
        backend_load("generic_bot", {"temperature": 1})


def test_generic_bot_can_pretend_to_be_slow_for_tests_and_benchmarks():
    import time

    bot = backend_load("generic_bot", {"delay_s": 0.05})
    started = time.monotonic()
    assert bot.generate([Example(turns=("a",)), Example(turns=("b?",))], {}) == [
        "ok",
        "I don't know.",
    ]
    assert time.monotonic() - started >= 0.1
    with pytest.raises(ValueError, match="delay_s"):
        backend_load("generic_bot", {"delay_s": -1})


def test_examples_round_trip_through_json_and_refuse_malformed_input():
    example = Example(turns=("hi", "hello"), reference="yo")
    assert Example.from_dict(example.as_dict()) == example
    for bad in [{"turns": "hi"}, {"turns": [1]}, {"turns": ["a"], "reference": 3}, ["a"]]:
        with pytest.raises(ValueError, match="turns|reference"):
            Example.from_dict(bad)
