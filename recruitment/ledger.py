"""Budget, ledger and audit log: every movement of money is checked, written, then sent.

Spending that counts against ``Campaign.budget`` ("committed"):
- each publication's ``reserved`` amount: every place it published at its reward plus the
  provider's fee, and the pay-bucket top-ups it may owe — the most it can cost;
- every bonus not known to have failed, with its fee.
Rewards of approved assignments and top-ups are inside their publication's reservation.

A payment is first recorded (status pending) under a unique idempotency key while the
campaign row is locked, so two processes can neither pay the same thing twice nor both pass
the budget check; only then is the provider called.

The budget itself never goes below what is committed: the core's ``campaign_budget_set`` is
the one path for a change (the dashboard's budget box, the API, the admin), and it counts
``campaign_committed`` here, registered in ``RecruitmentConfig.ready``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from decimal import Decimal

from django.db import transaction
from django.db.models import F, Sum
from django.utils import timezone

from annotation import signals
from annotation.locks import campaign_lock
from annotation.models import Assignment, AuditLog, Campaign, Worker
from annotation.services.audit import audit_add
from annotation.services.workers import id_replace
from evalsite.errors import Conflict, InvalidParameters
from providers import Provider, ProviderError
from providers.base import money
from recruitment.locks import payment_lock_by_key
from recruitment.models import Payment, Publication

_ZERO = Decimal("0.00")


class BudgetExceeded(Conflict):
    """The action would take the campaign past its budget."""


def campaign_committed(campaign: Campaign) -> Decimal:
    """Return what the campaign may spend at most with what is published and paid so far."""
    reserved = Publication.objects.filter(campaign=campaign).aggregate(s=Sum("reserved"))["s"]
    bonuses = (
        Payment.objects.filter(campaign=campaign, kind=Payment.Kind.BONUS)
        .exclude(status=Payment.Status.FAILED)
        .aggregate(s=Sum(F("amount") + F("fee")))["s"]
    )
    return money((reserved or _ZERO) + (bonuses or _ZERO))


def budget_check(*, campaign: Campaign, extra: Decimal, what: str) -> None:
    """Refuse ``what`` if spending ``extra`` more would exceed the budget.

    The caller holds the campaign's row lock (``campaign_lock``) until it has recorded the
    spending, so concurrent checks cannot both pass.
    """
    committed = campaign_committed(campaign)
    budget = money(campaign.budget)
    if committed + extra > budget:
        raise BudgetExceeded(
            f"Refused: {what} costs up to {extra:.2f} (fees included), but the campaign "
            f"'{campaign.slug}' has {max(budget - committed, _ZERO):.2f} of its budget "
            f"{budget:.2f} left ({committed:.2f} committed). Raise the budget first."
        )
    signals.budget_spent.send(Campaign, campaign=campaign, committed=committed, extra=extra)


def payment_key(*parts: object) -> str:
    """Return a 64-character-safe idempotency key made from ``parts``."""
    text = "-".join(str(p) for p in parts)
    if len(text) <= 64:
        return text
    return text[:23] + "-" + hashlib.sha256(text.encode()).hexdigest()[:40]


def _payment_check(amount: Decimal, key: str) -> None:
    """Refuse an amount the ledger cannot pay or a key it cannot store."""
    if amount <= 0:
        raise InvalidParameters("A payment must be more than 0.00.")
    if not key or len(key) > 64:
        raise InvalidParameters("A payment key must be 1–64 characters.")


def _payment_start(
    *,
    campaign: Campaign,
    provider: Provider,
    worker: Worker,
    assignment: Assignment | None,
    kind: str,
    amount: Decimal,
    reason: str,
    key: str,
    actor: str,
    budgeted: bool,
    sending: bool = True,
) -> tuple[Payment, bool]:
    """Record the payment (or find it under its key); return it and whether to send it now.

    ``sending`` False only records it (pending), for a sender that will send it later.
    """
    _payment_check(amount, key)
    with transaction.atomic():
        locked = campaign_lock(campaign)
        existing = payment_lock_by_key(key)
        if existing is not None:
            if (existing.worker_id, existing.kind, existing.amount) != (worker.pk, kind, amount):
                raise Conflict(
                    f"The payment key {key!r} was already used for another payment "
                    f"({existing.kind} of {existing.amount:.2f} to {existing.worker})."
                )
            retry = sending and (
                existing.status in (Payment.Status.PENDING, Payment.Status.FAILED)
                or (
                    existing.status in (Payment.Status.SENDING, Payment.Status.UNCERTAIN)
                    and provider.idempotent_payments
                )
            )
            if retry:
                existing.status = Payment.Status.SENDING
                existing.sent_at = timezone.now()
                existing.save(update_fields=["status", "sent_at"])
            return existing, retry
        fee = provider.fee(reward=amount, assignments=1, bonus=kind != Payment.Kind.REWARD)
        if budgeted:
            budget_check(campaign=locked, extra=amount + fee, what=f"a {kind} of {amount:.2f}")
        payment = Payment.objects.create(
            campaign=campaign,
            provider=provider.name,
            worker=worker,
            assignment=assignment,
            kind=kind,
            amount=amount,
            fee=fee,
            reason=reason,
            idempotency_key=key,
            status=Payment.Status.SENDING if sending else Payment.Status.PENDING,
            sent_at=timezone.now() if sending else None,
            actor=actor[:150],
        )
        return payment, sending


def payment_send(
    *,
    campaign: Campaign,
    provider: Provider,
    worker: Worker,
    assignment: Assignment | None,
    kind: str,
    amount: Decimal,
    reason: str,
    key: str,
    actor: str,
    send: Callable[[], str],
    budgeted: bool = True,
) -> Payment:
    """Pay once: record under ``key`` (checking the budget), call ``send``, record the outcome.

    The same key again returns the recorded payment without paying, unless an earlier try
    failed before anything was paid (or the provider's own request token makes a retry safe).
    A send whose outcome is unknown is marked uncertain and never repeated automatically.
    """
    amount = money(amount)
    payment, go = _payment_start(
        campaign=campaign,
        provider=provider,
        worker=worker,
        assignment=assignment,
        kind=kind,
        amount=amount,
        reason=reason,
        key=key,
        actor=actor,
        budgeted=budgeted,
    )
    if not go:
        return payment
    try:
        reference = send()
    except ProviderError as exc:
        payment_failed(payment, exc, actor)
        raise
    payment_paid(payment, reference, actor)
    return payment


def payment_record(
    *,
    campaign: Campaign,
    provider: Provider,
    worker: Worker,
    assignment: Assignment | None,
    kind: str,
    amount: Decimal,
    reason: str,
    key: str,
    actor: str,
    budgeted: bool = True,
) -> Payment:
    """Record a payment as pending (checking the budget) without sending it, or return the
    one recorded under ``key``.

    A sender that must do something else first records what it owes before, so a crash in
    between leaves a pending row the reconciliation sweep sends (``payment_send`` with the
    same key sends it later) instead of leaving no trace of a payment owed.
    """
    amount = money(amount)
    payment, _ = _payment_start(
        campaign=campaign,
        provider=provider,
        worker=worker,
        assignment=assignment,
        kind=kind,
        amount=amount,
        reason=reason,
        key=key,
        actor=actor,
        budgeted=budgeted,
        sending=False,
    )
    return payment


def payment_paid(payment: Payment, reference: str, actor: str, note: str = "") -> None:
    """Record a payment the provider made, and log it (``note``: how it was found paid)."""
    payment.status = Payment.Status.PAID
    payment.paid_at = timezone.now()
    payment.provider_reference = (reference or "")[:128]
    payment.error = ""
    payment.save(update_fields=["status", "paid_at", "provider_reference", "error"])
    paid = payment.kind == Payment.Kind.REWARD
    payment_audit(
        payment,
        action=AuditLog.Action.APPROVE if paid else AuditLog.Action.BONUS,
        actor=actor,
        detail=f"{payment.kind} {payment.idempotency_key}"
        + (f": {payment.reason}" if payment.reason else "")
        + (f" ({note})" if note else ""),
    )


def payment_audit(payment: Payment, *, action: str, actor: str, detail: str) -> None:
    """Add an audit line about ``payment``: its campaign, provider, worker, assignment, amount."""
    audit_add(
        action=action,
        actor=actor,
        campaign=payment.campaign,
        provider=payment.provider,
        worker=payment.worker,
        assignment=payment.assignment,
        amount=payment.amount,
        detail=detail,
    )


def payment_failed(payment: Payment, exc: ProviderError, actor: str) -> None:
    """Record a failed send: failed (safe to retry) or uncertain (maybe paid; never retried)."""
    payment.status = Payment.Status.UNCERTAIN if exc.uncertain else Payment.Status.FAILED
    payment.error = exc.message[:2000]
    payment.save(update_fields=["status", "error"])
    payment_audit(
        payment,
        action=AuditLog.Action.REFUSED,
        actor=actor,
        detail=f"{payment.kind} {payment.idempotency_key}: {exc.message}",
    )


def worker_forgotten(*, worker: Worker, old_id: str, marker: str, **_: object) -> None:
    """Receiver of the core's ``worker_forgotten`` signal: the forgotten worker's provider id
    leaves the texts of their payments (reasons, provider errors)."""
    for column in ("reason", "error"):
        id_replace(Payment.objects.filter(worker=worker), column, old_id, marker)
