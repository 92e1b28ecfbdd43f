"""``python manage.py forget <worker>``: erase a worker who withdrew (the right to be forgotten).

An admin's tool: it reaches every campaign, other researchers' too (each gets an audit
entry); a researcher forgets from the dashboard or the API, in their own campaigns only."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.management.cli import PROVIDERS, actor, add_actor, run
from annotation.models import Campaign, Worker
from annotation.services import worker_forget


class Command(BaseCommand):
    help = (
        "Erase a worker everywhere (an admin's tool; a researcher forgets in their own "
        "campaigns from the dashboard or the API): their provider id and every text they "
        "wrote become markers; payments and the audit trail stay; each campaign keeps or "
        "drops their judgments by its withdrawal policy "
        "(docs/protocols.md, 'Withdrawal'). Running it again changes nothing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "worker", help="The worker's provider id (with --provider) or pseudonym."
        )
        parser.add_argument(
            "--provider", choices=PROVIDERS, help="The worker's provider (needed with an id)."
        )
        parser.add_argument(
            "--campaign", default="", help="Slug of the campaign the request came from (audit)."
        )
        add_actor(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        name = options["worker"]
        worker = Worker.objects.filter(pseudonym=name).first()
        if worker is None and options["provider"]:
            worker = Worker.objects.filter(provider=options["provider"], external_id=name).first()
        if worker is None:
            raise CommandError(
                f"No worker {name!r}"
                + ("" if options["provider"] else " (with a provider id, also give --provider)")
                + "."
            )
        campaign = None
        if options["campaign"]:
            campaign = Campaign.objects.filter(slug=options["campaign"]).first()
            if campaign is None:
                raise CommandError(f"No campaign {options['campaign']!r}.")
        done = run(lambda: worker_forget(worker=worker, actor=actor(options), campaign=campaign))
        if done.already:
            self.stdout.write(f"{worker} was already forgotten; nothing changed.")
            return
        self.stdout.write(
            f"Forgot {worker}: provider id and {done.texts} texts erased; judgments kept in "
            f"{len(done.kept)} campaigns, dropped in {len(done.dropped)}; "
            f"{done.reopened} item slots re-opened."
        )
