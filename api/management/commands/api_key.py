"""``python manage.py api_key create|list|revoke --user NAME``: researchers' API keys."""

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from api.keys import api_key_create, api_key_revoke, api_keys_of
from evalsite.errors import AnnotationError


class Command(BaseCommand):
    help = (
        "Create, list or revoke a researcher's API keys (docs/api.md). A new key is printed "
        "once and stored hashed; lists show its prefix only."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "action",
            choices=["create", "list", "revoke"],
            help="create: a new key (printed once); list: the user's keys; revoke: one key.",
        )
        parser.add_argument(
            "--user", required=True, help="The researcher's user name (a staff account)."
        )
        parser.add_argument("--name", default="", help="With create: what the key is for.")
        parser.add_argument(
            "--prefix",
            default="",
            help="With revoke: the key's prefix as `list` shows it (e.g. evs_AbCd1234).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        user = get_user_model().objects.filter(username=options["user"]).first()
        if user is None:
            raise CommandError(f"No user {options['user']!r}.")
        try:
            if options["action"] == "create":
                row, key = api_key_create(user=user, name=options["name"])
                self.stdout.write(f"Created key {row.prefix}… for {user.get_username()}.")
                self.stdout.write("Copy it now; it is not stored and will not be shown again:")
                self.stdout.write(key)
            elif options["action"] == "revoke":
                if not options["prefix"]:
                    raise CommandError("Give --prefix: the key's prefix as `list` shows it.")
                row = api_key_revoke(user=user, prefix=options["prefix"])
                self.stdout.write(f"Revoked {row.prefix}… ({row.revoked_at:%Y-%m-%d %H:%M}).")
            else:
                self._list(user)
        except AnnotationError as exc:
            raise CommandError(exc.message) from None

    def _list(self, user: Any) -> None:
        keys = list(api_keys_of(user))
        if not keys:
            self.stdout.write(f"{user.get_username()} has no API key.")
        for row in keys:
            used = f"{row.last_used_at:%Y-%m-%d %H:%M}" if row.last_used_at else "never"
            state = f"revoked {row.revoked_at:%Y-%m-%d}" if row.revoked_at else "active"
            self.stdout.write(
                f"{row.prefix}…  {state:<18} created {row.created_at:%Y-%m-%d}  "
                f"last used {used}  {row.name}"
            )
