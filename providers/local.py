"""The local provider: lab studies, volunteers and in-house raters reached by a plain link.

Arrival: ``/task/<campaign>/?workerId=…``. Completion: a code shown on the end screen. There
is no remote side: the submissions are our own assignments, money moves outside evalsite
(vouchers, lab payroll) and the ledger records what is owed; blocks are our own block list.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from django.core import signing
from django.utils.translation import gettext, gettext_noop

from evalsite.errors import NotAllowed
from providers.base import (
    Arrival,
    Completion,
    HitState,
    LaunchPlan,
    PaymentLookup,
    Provider,
    PublishedHit,
    RemoteSubmission,
    clean_id,
)

NAME = "local"
_LINK_SALT = "annotation.local-link"


def link_key(campaign: str, worker_id: str) -> str:
    """Return the key of the signed link of ``worker_id`` for the campaign (its slug): an HMAC
    of both under the site's secret key, so a link opens one study for one worker."""
    return signing.Signer(salt=_LINK_SALT).signature(f"{campaign}\n{worker_id}")


class LocalProvider(Provider):
    """Links and completion codes; every action is recorded, nothing is sent anywhere."""

    name = NAME
    title = "Local (lab, volunteers, in-house raters)"
    remote = False
    idempotent_payments = True

    def parse_arrival(self, params: Mapping[str, str]) -> Arrival | None:
        """Recognise ``?workerId=…`` and its signature ``&key=…`` (a signed link)."""
        worker_id = params.get("workerId", "").strip()
        if not worker_id:
            return None
        key = params.get("key", "").strip()
        return Arrival(
            provider=NAME,
            worker_id=clean_id(worker_id, gettext_noop("worker id")),
            signature=clean_id(key, gettext_noop("link key")) if key else "",
        )

    def arrival_query(self, arrival: Arrival) -> dict[str, str]:
        """Return the URL parameters of a local arrival."""
        key = {"key": arrival.signature} if arrival.signature else {}
        return {"workerId": arrival.worker_id} | key

    def identity_check(self, *, campaign: str, open_links: bool, arrival: Arrival) -> None:
        """The link must carry the key issued for this worker and study; with open links a
        bare id is let through here (``arrival_verify`` decides), a wrong key is not."""
        if open_links and not arrival.signature:
            return
        if not arrival.signature or not hmac.compare_digest(
            arrival.signature, link_key(campaign, arrival.worker_id)
        ):
            raise NotAllowed(
                gettext(
                    "This link does not open the study: use the personal link the researcher "
                    "sent you, exactly as it was sent."
                )
            )

    def completion(
        self, *, config: Mapping[str, Any], assignment_id: str, submit_to: str, code: str
    ) -> Completion:
        """Show the assignment's own completion code."""
        return Completion(kind="code", code=code)

    def fee(self, *, reward: Decimal, assignments: int, bonus: bool = False) -> Decimal:
        """Charge no fee: the researcher pays workers directly."""
        return Decimal("0.00")

    def publish(
        self, *, config: dict[str, Any], plan: LaunchPlan, on_hit: Any = None
    ) -> list[PublishedHit]:
        """Record the plan's places as one local 'HIT' named after the campaign."""
        hits = []
        for n, spec in enumerate(plan.hits, start=1):
            hit = PublishedHit(f"local-{plan.slug}-{n}", spec, Decimal("0.00"))
            if on_hit is not None:
                on_hit(hit)
            hits.append(hit)
        return hits

    def hit_extend(self, *, config: Mapping[str, Any], hit_id: str, extra: int, token: str) -> None:
        """Nothing to tell anyone: the places are ours."""

    def hit_states(
        self, *, config: Mapping[str, Any], hit_ids: Sequence[str]
    ) -> dict[str, HitState]:
        """Report every local HIT as open (the campaign's status is what counts)."""
        return {hit_id: HitState("open") for hit_id in hit_ids}

    def pause(self, *, config: Mapping[str, Any], hit_ids: Sequence[str]) -> None:
        """Nothing remote to pause."""

    def resume(self, *, config: Mapping[str, Any], hit_ids: Sequence[str]) -> None:
        """Nothing remote to resume."""

    def stop(self, *, config: Mapping[str, Any], hit_ids: Sequence[str]) -> None:
        """Nothing remote to stop."""

    def submissions(
        self, *, config: Mapping[str, Any], hit_ids: Sequence[str]
    ) -> list[RemoteSubmission]:
        """Return nothing: local submissions are the campaign's own assignments."""
        return []

    def approve(self, *, config: Mapping[str, Any], submission_id: str, feedback: str) -> None:
        """Nothing to send: the ledger records the reward owed."""

    def reject(
        self,
        *,
        config: Mapping[str, Any],
        submission_id: str,
        feedback: str,
        category: str = "",
    ) -> None:
        """Nothing to send."""

    def bonus(
        self,
        *,
        config: Mapping[str, Any],
        worker_id: str,
        submission_id: str,
        amount: Decimal,
        reason: str,
        token: str,
    ) -> str:
        """Return the idempotency key as the reference: the bonus is paid outside evalsite."""
        return token

    def payment_lookup(
        self,
        *,
        config: Mapping[str, Any],
        kind: str,
        worker_id: str,
        submission_id: str,
        amount: Decimal,
        reason: str,
        token: str,
    ) -> PaymentLookup:
        """Nothing was sent anywhere: recording it again is the whole payment."""
        return PaymentLookup("absent")

    def block(self, *, config: Mapping[str, Any], worker_id: str, reason: str) -> None:
        """Nothing remote: our own block list keeps the worker out."""

    def unblock(self, *, config: Mapping[str, Any], worker_id: str, reason: str) -> None:
        """Nothing remote."""

    def notify(
        self, *, config: Mapping[str, Any], worker_ids: Sequence[str], subject: str, message: str
    ) -> None:
        """Local workers are reached outside evalsite; nothing to send."""


PROVIDER = LocalProvider()
parse_arrival = PROVIDER.parse_arrival
arrival_query = PROVIDER.arrival_query
