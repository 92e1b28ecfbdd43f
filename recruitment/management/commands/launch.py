"""``python manage.py launch <campaign> --provider mturk|prolific|local``: publish a campaign.

``--dry-run`` prints the HITs, their cost with the provider's fees, the budget and the
eligibility, and changes nothing. MTurk goes to its sandbox unless ``--production`` is given.
The same command adds assignments to a live publication (``--add``) or pauses, resumes and
stops it.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.management.cli import PROVIDERS, actor, add_actor, campaign_get, run
from providers.base import Eligibility
from recruitment.management.commands._provider_cli import publication_get
from recruitment.services import (
    LaunchOptions,
    LaunchPreview,
    campaign_launch,
    launch_preview,
    pay_buckets_parse,
    publication_extend,
    publication_set_state,
)


class Command(BaseCommand):
    help = (
        "Publish a campaign on MTurk (sandbox by default), Prolific or the local provider; "
        "--dry-run prints the HITs, cost and eligibility without publishing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("campaign", help="The campaign's slug.")
        parser.add_argument(
            "--provider", required=True, choices=PROVIDERS, help="Where to publish."
        )
        parser.add_argument(
            "--dry-run", action="store_true", help="Print the plan and its cost; publish nothing."
        )
        where = parser.add_mutually_exclusive_group()
        where.add_argument(
            "--sandbox", action="store_true", help="MTurk: use the sandbox (the default)."
        )
        where.add_argument(
            "--production",
            action="store_true",
            help="MTurk: publish on the production marketplace, paying real money.",
        )
        parser.add_argument(
            "--endpoint-url", default="", help="MTurk: any MTurk-API-compatible endpoint."
        )
        parser.add_argument(
            "--locale",
            action="append",
            default=[],
            help="MTurk: allowed worker country (ISO code, e.g. US); repeat for several.",
        )
        parser.add_argument(
            "--min-approval-rate", type=int, help="Minimum approval rate in percent (0–100)."
        )
        parser.add_argument(
            "--min-approved", type=int, help="Minimum number of approved HITs/submissions."
        )
        parser.add_argument(
            "--allow-worker", action="append", default=[], help="Only these worker ids (repeat)."
        )
        parser.add_argument(
            "--block-worker", action="append", default=[], help="Keep these worker ids out."
        )
        parser.add_argument(
            "--filter",
            action="append",
            default=[],
            help="Prolific: a filter as FILTER_ID=VALUE,VALUE (e.g. first-language=1).",
        )
        parser.add_argument(
            "--pay-buckets",
            default="",
            help="Pay by dialogue length: 'emotionlines' or LOW-HIGH:PAY,... (per item).",
        )
        parser.add_argument(
            "--places", type=int, help="Total assignments to publish (default: enough items)."
        )
        parser.add_argument(
            "--minutes", type=int, default=10, help="Estimated minutes per assignment."
        )
        parser.add_argument(
            "--assignment-hours",
            type=float,
            default=1.0,
            help="How long a worker may hold one assignment, in hours.",
        )
        parser.add_argument(
            "--days", type=float, default=7.0, help="How long the HITs stay on offer, in days."
        )
        parser.add_argument("--description", default="", help="What workers read first.")
        change = parser.add_mutually_exclusive_group()
        change.add_argument(
            "--add",
            type=int,
            help="Add this many assignments to each HIT of a live publication (budget checked).",
        )
        change.add_argument(
            "--pause", action="store_true", help="Pause the publication (MTurk: expire HITs)."
        )
        change.add_argument("--resume", action="store_true", help="Resume a paused publication.")
        change.add_argument("--stop", action="store_true", help="Stop the publication for good.")
        add_actor(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        campaign = campaign_get(options["campaign"])
        by = actor(options)
        if options["add"] is not None or options["pause"] or options["resume"] or options["stop"]:
            publication = publication_get(campaign, options["provider"])
            if options["add"] is not None:
                cost = run(
                    lambda: publication_extend(
                        publication=publication, extra=options["add"], actor=by
                    )
                )
                self.stdout.write(f"Added {options['add']} assignment(s) per HIT for {cost:.2f}.")
                return
            action = next(a for a in ("pause", "resume", "stop") if options[a])
            run(lambda: publication_set_state(publication=publication, action=action, actor=by))
            self.stdout.write(f"{campaign.slug} on {publication.provider}: {action} done.")
            return
        launch_options = run(lambda: self._options(options))
        if options["dry_run"]:
            preview = run(lambda: launch_preview(campaign=campaign, options=launch_options))
            self._print(preview, dry_run=True)
            return
        publication, preview = run(
            lambda: campaign_launch(campaign=campaign, options=launch_options, actor=by)
        )
        self._print(preview, dry_run=False)
        self.stdout.write(
            self.style.SUCCESS(
                f"Published {campaign.slug} on {publication.provider} "
                f"({publication.hits.count()} HIT(s), id {publication.external_id or '-'})."
            )
        )

    def _options(self, options: dict[str, Any]) -> LaunchOptions:
        """Build the launch options, checking every argument."""
        for name, low, high in (
            ("min_approval_rate", 0, 100),
            ("min_approved", 0, 10**9),
            ("minutes", 1, 24 * 60),
        ):
            value = options[name]
            if value is not None and not low <= value <= high:
                raise CommandError(f"--{name.replace('_', '-')} must be from {low} to {high}.")
        if not 0.01 <= options["assignment_hours"] <= 24 * 7:
            raise CommandError("--assignment-hours must be from 0.01 to 168.")
        if not 0.01 <= options["days"] <= 365:
            raise CommandError("--days must be from 0.01 to 365.")
        if options["production"] and options["provider"] != "mturk":
            raise CommandError("--production applies to MTurk only.")
        locales = tuple(code.strip().upper() for code in options["locale"])
        if any(len(code) != 2 or not code.isalpha() for code in locales):
            raise CommandError("--locale takes two-letter country codes such as US or GB.")
        filters = []
        for text in options["filter"]:
            key, sep, values = text.partition("=")
            if not sep or not key.strip() or not values.strip():
                raise CommandError(f"--filter {text!r} is not FILTER_ID=VALUE[,VALUE].")
            filters.append((key.strip(), values.strip()))
        eligibility = Eligibility(
            locales=locales,
            min_percent_approved=options["min_approval_rate"],
            min_number_approved=options["min_approved"],
            allow_workers=tuple(options["allow_worker"]),
            block_workers=tuple(options["block_worker"]),
            extra_filters=tuple(filters),
        )
        buckets = pay_buckets_parse(options["pay_buckets"]) if options["pay_buckets"] else ()
        return LaunchOptions(
            provider=options["provider"],
            production=options["production"],
            endpoint_url=options["endpoint_url"],
            eligibility=eligibility,
            pay_buckets=buckets,
            places=options["places"],
            minutes=options["minutes"],
            assignment_seconds=int(options["assignment_hours"] * 3600),
            lifetime_seconds=int(options["days"] * 86400),
            description=options["description"],
        )

    def _print(self, preview: LaunchPreview, *, dry_run: bool) -> None:
        plan = preview.plan
        out = self.stdout.write
        out(("DRY RUN — nothing published. " if dry_run else "") + f"Endpoint: {preview.endpoint}")
        out(f"Worker URL: {plan.url}")
        out(f"HITs: {len(plan.hits)}, {plan.places} assignment(s) in all")
        for line in preview.estimate.lines[:10]:
            spec = line.spec
            out(
                f"  {spec.assignments} × {spec.reward:.2f} + fee {line.fee_per_assignment:.2f}"
                f" = {line.total:.2f}" + (f"  [{spec.label}]" if spec.label else "")
            )
        if len(preview.estimate.lines) > 10:
            out(f"  … and {len(preview.estimate.lines) - 10} more HIT(s) like these")
        out(f"Rewards {preview.estimate.rewards:.2f} + fees {preview.estimate.fees:.2f}")
        if preview.topup_reserve:
            out(f"Pay-bucket top-ups reserved (fees included): {preview.topup_reserve:.2f}")
        left = preview.budget - preview.committed
        out(
            f"Total at most {preview.total:.2f}; budget {preview.budget:.2f}, "
            f"committed {preview.committed:.2f}, left {left:.2f}"
            + ("" if preview.total <= left else "  ← OVER BUDGET: launch would be refused")
        )
        out("Eligibility: " + "; ".join(plan.eligibility.describe()))
