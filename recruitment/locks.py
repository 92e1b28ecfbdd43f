"""Row locks of recruitment: a payment's row, by its idempotency key. It takes its place in the
one lock order written in ``annotation.locks`` (step 4: right after the campaign)."""

from __future__ import annotations

from recruitment.models import Payment


def payment_lock_by_key(key: str) -> Payment | None:
    """Lock the payment recorded under the idempotency ``key``; None if there is none. The
    caller holds the campaign's lock, which is what serialises recording a new one."""
    return Payment.objects.select_for_update().filter(idempotency_key=key).first()
