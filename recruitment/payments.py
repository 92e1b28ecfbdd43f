"""Payments of one assignment or worker: bonuses and pay-bucket top-ups recorded in the ledger,
and the provider call each payment makes (used by review, by the payments sweep and by the
dashboard).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

from annotation.campaign_settings import BONUS, SETTINGS, value_clean
from annotation.models import Assignment, Campaign, Worker
from evalsite.errors import InvalidParameters, NotFound
from providers import provider_get
from providers.base import Provider, money
from recruitment.launch import bucket_pay, dialogue_length
from recruitment.ledger import payment_key, payment_record, payment_send
from recruitment.models import Hit, Payment, Publication


def submission_id_of(assignment: Assignment) -> str:
    """The provider's id of the assignment's submission (a local one's own)."""
    return assignment.provider_assignment_id or f"local-{assignment.pk}"


def bonus_pay(
    *,
    campaign: Campaign,
    worker: Worker,
    amount: Decimal | str,
    reason: str,
    actor: str,
    assignment: Assignment | None = None,
    key: str = "",
    kind: str = Payment.Kind.BONUS,
    send: bool = True,
) -> Payment:
    """Pay a worker a bonus once, within the budget (the same key never pays twice).

    Without ``assignment``, the worker's latest submitted or reviewed assignment in the
    campaign is used (MTurk and Prolific pay bonuses against one). Without ``key``, the key
    is made from the campaign, worker, assignment, amount and reason. ``send`` False only
    records it as owed (pending); the same call with ``send`` True, or the reconciliation
    sweep, sends it.
    """
    if not reason.strip():
        raise InvalidParameters("A bonus needs a reason; the worker sees it.")
    # The one bound of a bonus, for every caller; a top-up is bounded as the reward is.
    bound = BONUS if kind == Payment.Kind.BONUS else SETTINGS["reward"]
    sent: Decimal = value_clean(bound, amount)
    assignment = _bonus_assignment(campaign, worker, assignment)
    publication = Publication.objects.filter(campaign=campaign, provider=worker.provider).first()
    provider = provider_get(worker.provider if publication else "local")
    config = publication.config if publication else {}
    submission_id = submission_id_of(assignment)
    digest = hashlib.sha256(reason.encode()).hexdigest()[:12]
    key = key or payment_key(kind, assignment.pk, sent, digest)
    budgeted = kind != Payment.Kind.TOPUP or not _topup_fits(publication, sent, provider)
    fields: dict[str, Any] = {
        "campaign": campaign,
        "provider": provider,
        "worker": worker,
        "assignment": assignment,
        "kind": kind,
        "amount": sent,
        "reason": reason,
        "key": key,
        "actor": actor,
        "budgeted": budgeted,
    }
    if not send:
        return payment_record(**fields)
    sender = payment_call(
        provider,
        config,
        kind=kind,
        worker_id=worker.external_id,
        submission_id=submission_id,
        amount=sent,
        reason=reason,
        key=key,
    )
    return payment_send(**fields, send=sender)


def payment_call(
    provider: Provider,
    config: Mapping[str, Any],
    *,
    kind: str,
    worker_id: str,
    submission_id: str,
    amount: Decimal,
    reason: str,
    key: str,
) -> Callable[[], str]:
    """Return the provider call that makes a payment: a reward is the submission's approval
    (``reason`` its feedback), a bonus or top-up is the provider's bonus under ``key``."""

    def approve() -> str:
        provider.approve(config=config, submission_id=submission_id, feedback=reason)
        return submission_id

    def bonus() -> str:
        return provider.bonus(
            config=config,
            worker_id=worker_id,
            submission_id=submission_id,
            amount=amount,
            reason=reason,
            token=key,
        )

    return approve if kind == Payment.Kind.REWARD else bonus


def payment_target(payment: Payment) -> tuple[Mapping[str, Any], str]:
    """Return the publication's config and the submission a recorded payment is made on."""
    publication = Publication.objects.filter(
        campaign=payment.campaign_id, provider=payment.provider
    ).first()
    assignment = payment.assignment
    return (
        publication.config if publication else {},
        submission_id_of(assignment) if assignment else "",
    )


def payment_sender(payment: Payment) -> Callable[[], str]:
    """Return the provider call that makes a recorded payment again (the reconciliation
    sweep's retry and the dashboard's): the same call, the same idempotency key."""
    config, submission_id = payment_target(payment)
    return payment_call(
        provider_get(payment.provider),
        config,
        kind=payment.kind,
        worker_id=payment.worker.external_id,
        submission_id=submission_id,
        amount=payment.amount,
        reason=payment.reason,
        key=payment.idempotency_key,
    )


def _bonus_assignment(
    campaign: Campaign, worker: Worker, assignment: Assignment | None
) -> Assignment:
    """Return the assignment a bonus is paid against: the one given, else the worker's latest
    submitted or reviewed one in the campaign; refuse one of another campaign, or none."""
    if assignment is None:
        assignment = (
            Assignment.objects.filter(campaign=campaign, worker=worker)
            .exclude(status__in=[Assignment.Status.ACCEPTED, Assignment.Status.RETURNED])
            .order_by("-submitted_at", "-pk")
            .first()
        )
    if assignment is None or assignment.campaign_id != campaign.pk:
        raise NotFound(f"{worker} has no submitted assignment in '{campaign.slug}' to pay against.")
    return assignment


def _topup_fits(publication: Publication | None, amount: Decimal, provider: object) -> bool:
    """Return True if a top-up fits in what the launch reserved for top-ups."""
    if publication is None:
        return False
    reserve = Decimal(str(publication.config.get("topup_reserve", "0")))
    spent = sum(
        (
            p.amount + p.fee
            for p in Payment.objects.filter(
                campaign=publication.campaign, kind=Payment.Kind.TOPUP
            ).exclude(status=Payment.Status.FAILED)
        ),
        Decimal(0),
    )
    fee = provider_get(publication.provider).fee(reward=amount, assignments=1, bonus=True)
    return spent + amount + fee <= reserve


def assignment_topup(*, publication: Publication, assignment: Assignment) -> Decimal:
    """Return what the pay buckets owe beyond the HIT's reward for the items done."""
    buckets = [(lo, hi, Decimal(p)) for lo, hi, p in publication.config.get("pay_buckets", [])]
    if not buckets:
        return Decimal("0.00")
    owed = Decimal(0)
    for payload in (
        assignment.judgments.filter(item__gold__isnull=True)
        .values_list("item__payload", flat=True)
        .distinct()
    ):
        owed += bucket_pay(dialogue_length(payload), buckets) or Decimal(0)
    hit = Hit.objects.filter(
        publication=publication, external_id=assignment.provider_hit_id
    ).first()
    base = hit.reward if hit else assignment.campaign.reward
    return money(max(owed - base, Decimal(0)))
