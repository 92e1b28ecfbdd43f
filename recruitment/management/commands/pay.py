"""``python manage.py pay <campaign>``: pay a worker a bonus once, or show the ledger."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.management.cli import PROVIDERS, actor, add_actor, campaign_get, run
from annotation.models import Assignment, Worker
from recruitment.management.commands._provider_cli import amount
from recruitment.models import Payment
from recruitment.services import bonus_pay, campaign_committed


class Command(BaseCommand):
    help = (
        "Pay a worker a bonus (once per key, within the budget); without --worker, list payments."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("campaign", help="The campaign's slug.")
        parser.add_argument("--worker", help="The worker's id on the provider, or pseudonym.")
        parser.add_argument(
            "--provider", choices=PROVIDERS, help="The worker's provider (needed with an id)."
        )
        parser.add_argument("--amount", help="The bonus, e.g. 0.50, in the provider's currency.")
        parser.add_argument("--reason", default="", help="Why; the worker sees it.")
        parser.add_argument(
            "--assignment", help="The provider's assignment/submission id to pay against."
        )
        parser.add_argument(
            "--key",
            default="",
            help="Idempotency key (≤64 chars): the same key never pays twice. "
            "Default: derived from worker, assignment, amount and reason.",
        )
        add_actor(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        campaign = campaign_get(options["campaign"])
        if not options["worker"]:
            self._ledger(campaign)
            return
        if not options["amount"] or not options["reason"].strip():
            raise CommandError("A bonus needs --amount and --reason.")
        worker = self._worker(options["worker"], options["provider"])
        assignment = None
        if options["assignment"]:
            assignment = Assignment.objects.filter(
                campaign=campaign, worker=worker, provider_assignment_id=options["assignment"]
            ).first()
            if assignment is None:
                raise CommandError(f"{worker} has no assignment {options['assignment']!r} here.")
        payment = run(
            lambda: bonus_pay(
                campaign=campaign,
                worker=worker,
                amount=amount(options["amount"]),
                reason=options["reason"],
                actor=actor(options),
                assignment=assignment,
                key=options["key"],
            )
        )
        self.stdout.write(
            f"Bonus {payment.amount:.2f} (+fee {payment.fee:.2f}) to {worker}: "
            f"{payment.get_status_display()} [key {payment.idempotency_key}]"
        )

    def _worker(self, ident: str, provider: str | None) -> Worker:
        found = Worker.objects.filter(pseudonym=ident).first()
        if found is None and provider:
            found = Worker.objects.filter(provider=provider, external_id=ident).first()
        if found is None:
            hint = "" if provider else " (with a provider id, also give --provider)"
            raise CommandError(f"No worker {ident!r}{hint}.")
        return found

    def _ledger(self, campaign: Any) -> None:
        rows = Payment.objects.filter(campaign=campaign).select_related("worker")
        for p in rows:
            self.stdout.write(
                f"{p.created_at:%Y-%m-%d %H:%M} {p.kind:6} {p.amount:>7.2f} +{p.fee:.2f} "
                f"{p.worker.pseudonym} {p.status:9} {p.actor} {p.idempotency_key}"
            )
        self.stdout.write(
            f"{rows.count()} payment(s); committed {campaign_committed(campaign):.2f} of the "
            f"budget {campaign.budget:.2f}"
        )
