"""The ledger refuses a payment it could not record faithfully, whichever way it is entered."""

from decimal import Decimal

import pytest

from annotation.models import Worker
from evalsite.errors import InvalidParameters
from providers import provider_get
from recruitment.ledger import payment_record, payment_send
from recruitment.models import Payment
from tests.factories import CampaignFactory


def _record(**changes):
    fields = {
        "campaign": CampaignFactory(budget=Decimal("10.00")),
        "provider": provider_get("local"),
        "worker": Worker.objects.create(provider="local", external_id="w1"),
        "assignment": None,
        "kind": "bonus",
        "amount": Decimal("1.00"),
        "reason": "thanks",
        "key": "k-1",
        "actor": "erin",
    }
    return fields | changes


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"amount": Decimal("0.00")}, "more than 0.00"),
        ({"key": ""}, "1–64 characters"),
        ({"key": "k" * 65}, "1–64 characters"),
    ],
)
@pytest.mark.parametrize("enter", ["record", "send"])
def test_a_payment_without_a_valid_amount_or_key_is_refused_and_nothing_recorded(
    enter, changes, message
):
    fields = _record(**changes)
    with pytest.raises(InvalidParameters, match=message):
        if enter == "record":
            payment_record(**fields)
        else:
            payment_send(**fields, send=lambda: "ref")
    assert not Payment.objects.exists()
