"""``python manage.py block <worker>``: block a worker from every study, an admin's global
block (or lift a block: the global one, or with ``--owner`` a researcher's)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.management.cli import PROVIDERS, actor, add_actor, run
from annotation.models import Worker, WorkerBlock
from recruitment.services import worker_block, worker_unblock


class Command(BaseCommand):
    help = "Block a worker here and on their provider (MTurk CreateWorkerBlock, Prolific group)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "worker", nargs="?", help="The worker's provider id or pseudonym (omit with --list)."
        )
        parser.add_argument(
            "--provider", choices=PROVIDERS, help="The worker's provider (needed with an id)."
        )
        parser.add_argument("--reason", default="", help="Why; MTurk shows it to the worker.")
        parser.add_argument("--unblock", action="store_true", help="Lift the block instead.")
        parser.add_argument(
            "--owner",
            help="With --unblock: lift this researcher's (username) block, not the global one.",
        )
        parser.add_argument("--list", action="store_true", help="List the active blocks.")
        add_actor(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        if options["list"]:
            for b in WorkerBlock.objects.filter(lifted_at=None).select_related("worker", "owner"):
                scope = f"{b.owner.get_username()}'s studies" if b.owner else "every study"
                self.stdout.write(
                    f"{b.worker.provider}:{b.worker.external_id} ({b.worker.pseudonym}) "
                    f"from {scope} since {b.created_at:%Y-%m-%d} by {b.actor}: {b.reason}"
                )
            return
        if not options["worker"]:
            raise CommandError("Name the worker to block, or use --list.")
        worker = Worker.objects.filter(pseudonym=options["worker"]).first()
        if worker is None and options["provider"]:
            worker = Worker.objects.filter(
                provider=options["provider"], external_id=options["worker"]
            ).first()
        if worker is None:
            raise CommandError(
                f"No worker {options['worker']!r}"
                + ("" if options["provider"] else " (with a provider id, also give --provider)")
                + "."
            )
        if options["owner"] and not options["unblock"]:
            raise CommandError("--owner goes with --unblock; a researcher blocks from a campaign.")
        if options["unblock"]:
            owner = None
            if options["owner"]:
                owner = User.objects.filter(username=options["owner"]).first()
                if owner is None:
                    raise CommandError(f"No user {options['owner']!r}.")
            lifted = run(
                lambda: worker_unblock(
                    worker=worker, reason=options["reason"], actor=actor(options), owner=owner
                )
            )
            self.stdout.write(f"Unblocked {worker}." if lifted else f"{worker} was not blocked.")
            return
        run(lambda: worker_block(worker=worker, reason=options["reason"], actor=actor(options)))
        self.stdout.write(f"Blocked {worker} ({worker.provider}:{worker.external_id}).")
