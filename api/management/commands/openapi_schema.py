"""``python manage.py openapi_schema [--output FILE]``: the API's OpenAPI schema as JSON."""

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from api.main import api


def schema_json() -> str:
    """The schema the server publishes at /api/v1/openapi.json, indented: what the Python
    client in clients/python is generated from."""
    return json.dumps(api.get_openapi_schema(), indent=2, ensure_ascii=False) + "\n"


class Command(BaseCommand):
    help = (
        "Write the REST API's OpenAPI 3.1 schema (what /api/v1/openapi.json serves) as JSON, "
        "e.g. to generate the Python client in clients/python (docs/api.md)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--output", default="", help="The file to write (default: standard output)."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        text = schema_json()
        if options["output"]:
            Path(options["output"]).write_text(text)
        else:
            self.stdout.write(text, ending="")
