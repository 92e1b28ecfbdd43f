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
