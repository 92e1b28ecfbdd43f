"""Registering models and storing each generation once."""

import pytest

from modelhub.backends import Example
from modelhub.models import Generation
from modelhub.services import endpoint_register, generations_ensure

EXAMPLES = [
    Example(turns=("Are you ok?",), reference="Yes!"),
    Example(turns=("I won.",), reference="Wow"),
]


def test_generations_are_stored_once_per_model_and_context(db):
    bot = endpoint_register(name="bot", backend="generic_bot")
    assert generations_ensure(endpoint=bot, examples=EXAMPLES) == ["I don't know.", "ok"]
    assert generations_ensure(endpoint=bot, examples=EXAMPLES[::-1]) == ["ok", "I don't know."]
    assert Generation.objects.count() == 2


def test_other_decoding_parameters_are_a_new_generation(db):
    bot = endpoint_register(name="bot", backend="generic_bot")
    generations_ensure(endpoint=bot, examples=EXAMPLES)
    bot = endpoint_register(name="bot", backend="generic_bot", decoding={"temperature": 0.7})
    generations_ensure(endpoint=bot, examples=EXAMPLES)
    assert Generation.objects.count() == 4


def test_registering_again_updates_the_same_model(db):
    first = endpoint_register(name="gold", backend="gold", notes="a")
    again = endpoint_register(name="gold", backend="gold", notes="b")
    assert first.pk == again.pk and again.notes == "b"
    with pytest.raises(ValueError, match="unknown backend"):
        endpoint_register(name="x", backend="nope")
