"""Provider specifics live behind the Provider interface, not in the payment services."""

from decimal import Decimal
from pathlib import Path

import pytest

import recruitment
from evalsite.errors import InvalidParameters
from providers import PROVIDERS, provider_get
from providers.base import HitSpec


def test_no_remote_provider_is_named_in_the_payment_services():
    for path in Path(recruitment.__file__).parent.glob("*.py"):
        text = path.read_text().lower()
        for provider in (p for p in PROVIDERS if p.remote):  # local is the unpublished default
            assert f'"{provider.name}"' not in text, f"{path.name} names {provider.name}"


def test_mturk_splits_work_into_hits_of_redundancy_and_others_into_one_study():
    mturk, prolific, local = (provider_get(n) for n in ("mturk", "prolific", "local"))
    reward = Decimal("0.50")
    assert mturk.hit_specs(units=3, redundancy=2, reward=reward) == (HitSpec(2, reward),) * 3
    for provider in (prolific, local):
        assert provider.hit_specs(units=3, redundancy=2, reward=reward) == (HitSpec(6, reward),)


def test_only_mturk_refuses_growing_a_hit_across_ten_assignments():
    with pytest.raises(InvalidParameters, match="Add at most 2"):
        provider_get("mturk").extend_check(hit_id="H", assignments=7, extra=3)
    provider_get("mturk").extend_check(hit_id="H", assignments=7, extra=2)
    provider_get("mturk").extend_check(hit_id="H", assignments=10, extra=50)
    provider_get("prolific").extend_check(hit_id="S", assignments=7, extra=3)


def test_completion_falls_back_to_the_code_without_the_provider_s_details():
    no_submit_to = provider_get("mturk").completion(
        config={}, assignment_id="A", submit_to="", code="C0DE"
    )
    no_study_code = provider_get("prolific").completion(
        config={}, assignment_id="A", submit_to="", code="C0DE"
    )
    assert (no_submit_to.kind, no_submit_to.code) == ("code", "C0DE")
    assert (no_study_code.kind, no_study_code.code) == ("code", "C0DE")
    posted = provider_get("mturk").completion(
        config={}, assignment_id="A", submit_to="https://www.mturk.com", code="C0DE"
    )
    assert posted.kind == "post" and posted.url.endswith("/mturk/externalSubmit")
