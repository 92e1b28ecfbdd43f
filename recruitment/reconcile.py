"""Payments reconciled: the sweep that resolves payments whose send was cut off, and what a
researcher does with the ones it cannot resolve (docs/providers.md, "Payments").

A payment is written before it is sent (``ledger``), so a crash, a timeout or a provider
outage leaves it pending (never sent), sending (the outcome never recorded) or uncertain (the
provider did not answer a write). Once ``GRACE`` has passed since its last send began, the
sweep asks the provider (``Provider.payment_lookup``):

- paid → marked paid, with the provider's reference;
- certainly not paid (or pending: never sent) → sent again under the same idempotency key;
- the provider cannot tell → needs attention at once, with its reason: paying again could
  pay twice, so nothing is guessed;
- the provider unreachable → left for the next sweep; after ``CHECKS_MAX`` tries it needs
  attention.

A payment that needs attention waits for a person: ``payment_retry`` sends it again (they
checked that it was not paid), ``payment_resolve`` marks it paid or failed with a note. Every
resolution is in the audit log.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from annotation.locks import campaign_lock
from annotation.models import AuditLog, Campaign
from evalsite.errors import AnnotationError, Conflict, InvalidParameters
from providers import ProviderError, provider_get
from recruitment.ledger import payment_audit, payment_paid, payment_send
from recruitment.locks import payment_lock_by_key
from recruitment.models import Payment
from recruitment.payments import payment_sender, payment_target

logger = logging.getLogger(__name__)

# Longer than any send takes (the providers' read timeouts are 30 s), so the sweep never
# looks at a payment whose send is still under way.
GRACE = timedelta(minutes=5)
# Sweeps (every 10 minutes) that may find the provider unreachable before a person is asked.
CHECKS_MAX = 6
_OPEN = (Payment.Status.PENDING, Payment.Status.SENDING, Payment.Status.UNCERTAIN)


def payments_reconcile(*, actor: str = "reconcile", now: datetime | None = None) -> dict[str, int]:
    """Resolve every open payment past the grace period; return how many ended how.

    Outcomes: paid, failed, needs_attention, unreachable (left for the next sweep).
    """
    cutoff = (now or timezone.now()) - GRACE
    due = Payment.objects.filter(status__in=_OPEN).filter(
        Q(sent_at__lt=cutoff) | Q(sent_at__isnull=True, created_at__lt=cutoff)
    )
    counts: dict[str, int] = {}
    for payment in due.select_related("campaign", "worker", "assignment").order_by("pk"):
        outcome = payment_reconcile(payment=payment, actor=actor)
        counts[outcome] = counts.get(outcome, 0) + 1
    return counts


def payment_reconcile(*, payment: Payment, actor: str) -> str:
    """Ask the provider about one open payment and act on the answer; return the outcome.

    The check is claimed first (a conditional UPDATE of ``checks`` and ``sent_at``), so two
    sweeps never act on the same payment, and the next one waits ``GRACE`` again.
    """
    claimed = Payment.objects.filter(
        pk=payment.pk, status=payment.status, checks=payment.checks
    ).update(checks=F("checks") + 1, sent_at=timezone.now())
    if not claimed:
        return "skipped"
    payment.refresh_from_db()
    if payment.status == Payment.Status.PENDING:
        return _send_again(payment, actor, "never sent")
    config, submission_id = payment_target(payment)
    try:
        found = provider_get(payment.provider).payment_lookup(
            config=config,
            kind=payment.kind,
            worker_id=payment.worker.external_id,
            submission_id=submission_id,
            amount=payment.amount,
            reason=payment.reason,
            token=payment.idempotency_key,
        )
    except ProviderError as exc:
        if payment.checks < CHECKS_MAX:
            logger.warning("payment %s: %s (check %s)", payment.pk, exc.message, payment.checks)
            return "unreachable"
        return _flag(payment, f"{payment.checks} checks could not reach it: {exc.message}", actor)
    if found.state == "paid":
        payment_paid(payment, found.reference, actor, note="found paid on the provider")
        return "paid"
    if found.state == "absent":
        return _send_again(payment, actor, "the provider had not paid it")
    return _flag(payment, found.reason, actor)


def _send_again(payment: Payment, actor: str, why: str) -> str:
    """Send a payment known not to be paid again, under its own idempotency key."""
    _set_status(payment, Payment.Status.PENDING, expected=payment.status)
    payment_audit(
        payment,
        action=AuditLog.Action.SYNC,
        actor=actor,
        detail=f"{payment.kind} {payment.idempotency_key}: {why}; sent again",
    )
    try:
        sent = payment_send(
            campaign=payment.campaign,
            provider=provider_get(payment.provider),
            worker=payment.worker,
            assignment=payment.assignment,
            kind=payment.kind,
            amount=payment.amount,
            reason=payment.reason,
            key=payment.idempotency_key,
            actor=actor,
            send=payment_sender(payment),
        )
    except AnnotationError:  # recorded failed or uncertain by the ledger, with its reason
        payment.refresh_from_db()
        return str(payment.status)
    return str(sent.status)


def _flag(payment: Payment, reason: str, actor: str) -> str:
    """Mark a payment the sweep cannot resolve as needing a person, with the reason."""
    _set_status(payment, Payment.Status.NEEDS_ATTENTION, expected=payment.status, error=reason)
    payment_audit(
        payment,
        action=AuditLog.Action.REFUSED,
        actor=actor,
        detail=f"{payment.kind} {payment.idempotency_key} needs attention: {reason}",
    )
    return str(Payment.Status.NEEDS_ATTENTION)


def _set_status(payment: Payment, status: str, *, expected: str, error: str = "") -> Payment:
    """Move a payment from ``expected`` to ``status`` under its lock (after the campaign's,
    the one lock order); Conflict if someone else moved it first."""
    with transaction.atomic():
        campaign_lock(payment.campaign)
        locked = payment_lock_by_key(payment.idempotency_key)
        if locked is None or locked.status != expected:
            raise Conflict("This payment changed meanwhile; reload the page.")
        locked.status = status
        fields = ["status"]
        if error:
            locked.error = error[:2000]
            fields.append("error")
        locked.save(update_fields=fields)
    payment.status, payment.error = locked.status, locked.error
    return locked


def payments_attention(campaign: Campaign) -> list[Payment]:
    """Return the campaign's payments that need a person, oldest first."""
    return list(
        Payment.objects.filter(campaign=campaign, status=Payment.Status.NEEDS_ATTENTION)
        .select_related("worker")
        .order_by("pk")
    )


def payments_attention_count() -> int:
    """Return how many payments, in every campaign, need a person."""
    return Payment.objects.filter(status=Payment.Status.NEEDS_ATTENTION).count()


def _attention_payment(campaign: Campaign, payment_id: int) -> Payment:
    payment = (
        Payment.objects.filter(campaign=campaign, pk=payment_id)
        .select_related("campaign", "worker", "assignment")
        .first()
    )
    if payment is None or payment.status != Payment.Status.NEEDS_ATTENTION:
        raise InvalidParameters("No payment of this campaign needs attention under that id.")
    return payment


def payment_retry(*, campaign: Campaign, payment_id: int, actor: str) -> Payment:
    """Send a payment that needs attention again: the person checked that it was not paid."""
    payment = _attention_payment(campaign, payment_id)
    _send_again(payment, actor, "checked unpaid by a person")
    payment.refresh_from_db()
    return payment


def payment_resolve(
    *, campaign: Campaign, payment_id: int, paid: bool, note: str, actor: str
) -> Payment:
    """Close a payment that needs attention as paid or failed, as the person found on the
    provider's site; ``note`` (required) says what they found."""
    note = note.strip()
    if not note:
        raise InvalidParameters("Say what you found on the provider's site (a note is required).")
    payment = _attention_payment(campaign, payment_id)
    if paid:
        _set_status(payment, Payment.Status.SENDING, expected=Payment.Status.NEEDS_ATTENTION)
        payment_paid(payment, payment.provider_reference, actor, note=f"resolved: {note}")
        return payment
    _set_status(payment, Payment.Status.FAILED, expected=Payment.Status.NEEDS_ATTENTION, error=note)
    payment_audit(
        payment,
        action=AuditLog.Action.REFUSED,
        actor=actor,
        detail=f"{payment.kind} {payment.idempotency_key} resolved as not paid: {note}",
    )
    return payment
