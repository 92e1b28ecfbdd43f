"""manage.py translations_compile: write the worker pages' compiled catalogs (.mo)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from evalsite.translations import catalogs_compile


class Command(BaseCommand):
    help = (
        "Compile the translations (locale/<language>/LC_MESSAGES/django.po) into the .mo "
        "files Django reads; only missing or outdated ones unless --force. Run by "
        "'make install'; docs/protocols.md, \"Languages\"."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--force", action="store_true", help="Compile every catalog, even an up-to-date one."
        )

    def handle(self, *args: Any, force: bool = False, **options: Any) -> None:
        written = []
        for root in settings.LOCALE_PATHS:
            written += catalogs_compile(Path(root), force=force)
        for path in written:
            self.stdout.write(f"compiled {path}")
        self.stdout.write(f"{len(written)} catalog(s) compiled.")
