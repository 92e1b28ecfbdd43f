"""``python manage.py register_model NAME --backend …``: add a model to the registry, or
update the model of that name."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from modelhub.backends import BACKENDS, BackendError, Example, backend_load
from modelhub.decoding import decoding_validate
from modelhub.services import endpoint_register


def _json_object(text: str, what: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise CommandError(f"{what} is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise CommandError(f"{what} must be a JSON object ({{...}}), not {text!r}")
    return value


class Command(BaseCommand):
    help = (
        "Register a model (or update the one with this name). Examples:\n"
        "  register_model generic-bot --backend generic_bot\n"
        '  register_model gpt2-ed --backend hf_local --config \'{"path": "/models/gpt2-ed"}\' '
        "--preset meena\n"
        '  register_model llama --backend openai_http --config \'{"base_url": '
        '"http://gpu-1:8000/v1", "model": "meta-llama/Llama-3.1-8B-Instruct"}\''
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="Unique name of the model (a slug), e.g. gpt2-ed.")
        parser.add_argument(
            "--backend",
            required=True,
            help=f"How to reach the model; one of: {', '.join(sorted(BACKENDS))}.",
        )
        parser.add_argument(
            "--config", default=None, help="Backend configuration as a JSON object."
        )
        parser.add_argument(
            "--config-file",
            type=Path,
            default=None,
            help="A JSON file holding the backend configuration (instead of --config).",
        )
        parser.add_argument(
            "--decoding",
            default=None,
            help='Decoding parameters as a JSON object, e.g. \'{"strategy": "sample", '
            '"top_p": 0.9}\'. Default: greedy.',
        )
        parser.add_argument(
            "--preset",
            choices=["greedy", "meena"],
            default=None,
            help="A decoding preset; --decoding keys override its values.",
        )
        parser.add_argument("--notes", default="", help="Free text shown in the admin.")
        parser.add_argument(
            "--check",
            action="store_true",
            help="Also load the model and generate one reply to 'Hi!' before saving.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["config"] and options["config_file"]:
            raise CommandError("give --config or --config-file, not both")
        config: dict[str, Any] = {}
        if options["config"]:
            config = _json_object(options["config"], "--config")
        elif options["config_file"]:
            try:
                text = options["config_file"].read_text(encoding="utf-8")
            except OSError as exc:
                raise CommandError(f"cannot read --config-file: {exc}") from None
            config = _json_object(text, str(options["config_file"]))
        decoding = _json_object(options["decoding"], "--decoding") if options["decoding"] else {}
        if options["preset"]:
            decoding = {"preset": options["preset"], **decoding}
        if options["check"]:
            self._check(options["backend"], config, decoding)
        try:
            endpoint = endpoint_register(
                name=options["name"],
                backend=options["backend"],
                config=config,
                decoding=decoding,
                notes=options["notes"],
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(self.style.SUCCESS(f"Registered {endpoint.name} ({endpoint.backend})."))

    def _check(self, backend: str, config: dict[str, Any], decoding: dict[str, Any]) -> None:
        """Load the model and ask it for one reply; raise CommandError if it cannot answer."""
        try:
            model = backend_load(backend, config)
            decoding_validate(decoding)
            reply = model.generate([Example(turns=("Hi!",), reference="Hello!")], decoding)
        except (BackendError, ValueError, NotImplementedError) as exc:
            raise CommandError(f"the model does not answer; nothing registered: {exc}") from None
        self.stdout.write(f"Check: Hi! → {reply[0]!r}")
