"""``manage.py register_model``: every backend kind, and clear errors on bad input."""

import json

import pytest
from django.core.management import CommandError, call_command

from modelhub.models import ModelEndpoint


def _register(*args: str) -> str:
    from io import StringIO

    out = StringIO()
    call_command("register_model", *args, stdout=out)
    return out.getvalue()


def test_registers_generic_bot_and_updates_it_on_a_second_run(db):
    assert "Registered generic-bot" in _register("generic-bot", "--backend", "generic_bot")
    _register("generic-bot", "--backend", "generic_bot", "--notes", "baseline")
    assert ModelEndpoint.objects.get().notes == "baseline"


def test_registers_a_local_transformers_model_with_the_meena_preset_and_checks_it(db, tiny_causal):
    config = json.dumps({"path": tiny_causal})
    out = _register(
        "tiny", "--backend", "hf_local", "--config", config, "--preset", "meena",
        "--decoding", '{"num_samples": 3, "max_new_tokens": 4}', "--check",
    )  # fmt: skip
    assert "Check: Hi! →" in out
    endpoint = ModelEndpoint.objects.get(name="tiny")
    assert endpoint.decoding == {"preset": "meena", "num_samples": 3, "max_new_tokens": 4}


def test_reads_the_configuration_from_a_file(db, tmp_path):
    path = tmp_path / "llm.json"
    path.write_text(json.dumps({"base_url": "http://127.0.0.1:9/v1", "model": "m"}))
    _register("llm", "--backend", "openai_http", "--config-file", str(path))
    assert ModelEndpoint.objects.get().config["model"] == "m"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["x", "--backend", "gpt"], "unknown backend"),
        (["x", "--backend", "hf_local", "--config", "{path: 1}"], "not valid JSON"),
        (["x", "--backend", "hf_local", "--config", "[1]"], "must be a JSON object"),
        (["x", "--backend", "hf_local", "--config", '{"path": "/nope"}'], "not a saved model"),
        (["x", "--backend", "gold", "--decoding", '{"top_k": -1}'], "top_k"),
        (["bad name", "--backend", "gold"], "slug"),
        (["x", "--backend", "gold", "--config-file", "/nonexistent.json"], "cannot read"),
        (["x", "--backend", "gold", "--config", "{}", "--config-file", "f"], "not both"),
        (
            ["x", "--backend", "openai_http", "--config",
             '{"base_url": "http://127.0.0.1:9/v1", "model": "m", "max_retries": 0}', "--check"],
            "does not answer; nothing registered",
        ),
    ],
)  # fmt: skip
def test_bad_input_is_a_command_error_and_registers_nothing(db, args, message):
    with pytest.raises(CommandError, match=message):
        _register(*args)
    assert not ModelEndpoint.objects.exists()


def test_every_argument_has_help():
    from modelhub.management.commands.register_model import Command

    parser = Command().create_parser("manage.py", "register_model")
    own = [a for a in parser._actions if a.dest not in {"help", "version"}]
    assert all(a.help for a in own)
