"""``python manage.py review <campaign>``: approve what passes quality control, reject the rest.

Syncs with the provider first, then acts on every submission awaiting review: approved
(with ``--bonus`` and any pay-bucket top-up, each paid once) when the worker passes quality
control, rejected with the reason otherwise, or when no work was recorded here. By default
only what every provider's rules allow is rejected (no work, failed attention checks);
``--reject-for-agreement`` adds soft blocks and low gold agreement where the provider allows it.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from annotation.management.cli import PROVIDERS, actor, add_actor, campaign_get, run
from recruitment.management.commands._provider_cli import amount, publication_get
from recruitment.services import campaign_review


class Command(BaseCommand):
    help = "Approve submissions that pass quality control, reject the others with reasons, bonus."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("campaign", help="The campaign's slug.")
        parser.add_argument(
            "--provider", choices=PROVIDERS, help="Which publication, if there are several."
        )
        parser.add_argument(
            "--dry-run", action="store_true", help="Print the decisions; approve or pay nothing."
        )
        parser.add_argument(
            "--bonus", help="Also pay each approved assignment this bonus (e.g. 0.25), once."
        )
        parser.add_argument(
            "--bonus-reason",
            default="Thank you for careful work.",
            help="The bonus message workers see.",
        )
        parser.add_argument(
            "--reject-for-agreement",
            action="store_true",
            help="Also reject soft-blocked workers and low gold agreement, where the provider "
            "allows it (refused on Prolific: only failed attention checks justify a rejection "
            "there; docs/providers.md, 'Review rules per provider').",
        )
        add_actor(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        campaign = campaign_get(options["campaign"])
        publication = publication_get(campaign, options["provider"])
        bonus = amount(options["bonus"], "bonus") if options["bonus"] else None
        decisions = run(
            lambda: campaign_review(
                publication=publication,
                actor=actor(options),
                bonus=bonus,
                bonus_reason=options["bonus_reason"],
                dry_run=options["dry_run"],
                reject_for_agreement=options["reject_for_agreement"],
            )
        )
        if not decisions:
            self.stdout.write("Nothing awaits review.")
            return
        for d in decisions:
            state = "planned" if options["dry_run"] else ("done" if d.done else "FAILED")
            line = f"{d.action:7} {d.submission_id} {d.worker} [{state}]"
            if d.reason:
                line += f" — {d.reason}"
            if d.error:
                line += f" — error: {d.error}"
            self.stdout.write(line)
        approved = sum(d.action == "approve" for d in decisions)
        failed = sum(bool(d.error) for d in decisions)
        self.stdout.write(
            f"{approved} approve, {len(decisions) - approved} reject"
            + (f", {failed} failed (run review again to retry)" if failed else "")
        )
