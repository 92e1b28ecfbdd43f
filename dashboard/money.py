"""Which currency a campaign's money is in, and amounts written with it ("12.50 USD").

A campaign's reward, budget, bonuses and ledger are in its provider's currency
(``Provider.currency``: MTurk pays in USD; a local study's ledger and a Prolific workspace in
settings' ``EVALSITE_CURRENCY``). A draft, or a campaign published nowhere yet, goes live on
the local provider. Every amount the dashboard shows names its currency.
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal

from django.conf import settings

from annotation.models import Campaign
from evalsite.errors import InvalidParameters
from providers import PROVIDER_NAMES, provider_get
from recruitment.models import Publication
from recruitment.services import payment_resolve, payment_retry


def provider_currency(name: str) -> str:
    """Return the ISO 4217 code a provider pays in (the site's for local and Prolific)."""
    own = provider_get(name).currency if name in PROVIDER_NAMES else ""
    return own or settings.EVALSITE_CURRENCY


def campaign_currencies(campaigns: Iterable[Campaign]) -> dict[int, str]:
    """Return each campaign's currency (pk → code) in one query: its publications' provider
    (the latest when there are several), else the local provider's."""
    ids = [c.pk for c in campaigns]
    found: dict[int, str] = {}
    rows = Publication.objects.filter(campaign__in=ids).order_by("campaign", "-pk")
    for campaign_id, provider in rows.values_list("campaign", "provider"):
        found.setdefault(campaign_id, provider_currency(provider))
    local = provider_currency("local")
    return {pk: found.get(pk, local) for pk in ids}


def campaign_currency(campaign: Campaign) -> str:
    """Return the currency of one campaign's money (``campaign_currencies``)."""
    return campaign_currencies([campaign])[campaign.pk]


def money_text(amount: Decimal | float | int | str | None, currency: str) -> str:
    """Write an amount to the cent with its currency code: "12.50 USD" ("–" for none)."""
    if amount is None or amount == "":
        return "–"
    return f"{Decimal(str(amount)):.2f} {currency}"


PAYMENT_ACTIONS = {
    "retry": "Send again (I checked: it was not paid)",
    "paid": "Mark paid",
    "failed": "Mark not paid",
}


def payment_act(*, campaign: Campaign, payment_id: str, action: str, note: str, actor: str) -> str:
    """Carry out a researcher's decision on a payment that needs attention (the flagged rows
    of the campaign page); return what happened. The services check and audit it."""
    if action not in PAYMENT_ACTIONS or not payment_id.isdigit():
        raise InvalidParameters("Choose a payment and one of: " + ", ".join(PAYMENT_ACTIONS) + ".")
    if action == "retry":
        payment = payment_retry(campaign=campaign, payment_id=int(payment_id), actor=actor)
    else:
        payment = payment_resolve(
            campaign=campaign,
            payment_id=int(payment_id),
            paid=action == "paid",
            note=note,
            actor=actor,
        )
    amount = money_text(payment.amount, provider_currency(payment.provider))
    return f"Payment {payment.pk} ({payment.kind} of {amount}): {payment.get_status_display()}."
