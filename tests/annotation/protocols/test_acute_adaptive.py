"""ACUTE-Eval with adaptive allocation: the option, the steering and the report's note."""

from collections import Counter

import pytest

from annotation import steering_plan
from annotation.models import Item, Judgment
from annotation.protocols import registry
from annotation.selectors import campaign_report
from annotation.simulation import SimulatedWorker, crowd_run
from tests.annotation.protocols.test_acute import payload
from tests.factories import CampaignFactory

ACUTE = registry.get("acute")
# A and B are close (their order is uncertain); C is far below both.
QUALITY = {"A": 1.0, "B": 1.05, "C": -2.0}


def _campaign(allocation: str):
    parameters = ACUTE.clean_parameters(
        {"allocation": allocation, "adaptive_min_per_pair": 4, "justification": "off"}
    )
    campaign = CampaignFactory(
        protocol="acute", parameters=parameters, redundancy=1, items_per_assignment=5
    )
    Item.objects.bulk_create(
        Item(campaign=campaign, key=f"{n}/{a}~{b}", payload=payload(a, b, f"Bot {a}", f"Bot {b}"))
        for a, b in (("A", "B"), ("A", "C"), ("B", "C"))
        for n in range(60)
    )
    return campaign


def _judged_pairs(campaign) -> Counter:
    items = Judgment.objects.filter(item__campaign=campaign).values_list("item__key", flat=True)
    return Counter(key.split("/")[1] for key in set(items))


def test_acute_takes_the_allocation_option_and_refuses_bad_values():
    assert ACUTE.clean_parameters({})["allocation"] == "uniform"
    assert ACUTE.clean_parameters({"allocation": "adaptive"})["adaptive_min_per_pair"] == 10
    with pytest.raises(Exception, match="'uniform'"):
        ACUTE.clean_parameters({"allocation": "sometimes"})


@pytest.mark.django_db(transaction=True)
def test_an_adaptive_acute_campaign_steers_to_the_uncertain_pair_and_says_so():
    campaign = _campaign("adaptive")
    crowd = [SimulatedWorker(f"sim-{n}", "good") for n in range(12)]
    for start in range(0, 60, 10):  # the plan refreshed every 10 items, as the worker would
        steering_plan.plan_refresh(campaign_id=campaign.pk)
        crowd_run(
            campaign=campaign,
            workers=crowd,
            truth=lambda item: {"quality": QUALITY},
            seed=start,
            max_items=10,
        )
    judged = _judged_pairs(campaign)
    assert sum(judged.values()) == 60
    assert min(judged.values()) >= 4  # every pair got its floor
    assert judged["A~B"] > 2 * max(judged["A~C"], judged["B~C"])
    notes = " ".join(campaign_report(campaign).notes)
    assert "Allocation: adaptive" in notes
    table = campaign_report(campaign).tables["win_rates"]
    corrected = table["win_rate_corrected"]
    assert corrected.notna().all() and corrected.between(0, 1).all()


def test_the_win_table_adds_corrected_rates_only_under_adaptive_allocation():
    import pandas as pd

    from annotation.protocols.acute import win_table
    from evalstats import adaptive_rates

    rows = [("q", n, f"w{n}", "A", "B", "a" if n % 3 else "b") for n in range(30)]
    rows += [("q", 30 + n, f"w{n}", "A", "C", "a" if n % 5 else "b") for n in range(12)]
    data = pd.DataFrame(rows, columns=["question", "item", "rater", "a", "b", "outcome"])
    names = {"q": "Engaging"}
    assert "win_rate_corrected" not in win_table(data, names).columns
    table = win_table(data, names, adaptive_first=4)
    expected = adaptive_rates.pair_rates(data, first=4).set_index(["model_a", "model_b"])
    got = table.set_index(["model_a", "model_b"])["win_rate_corrected"]
    assert got.to_dict() == expected["corrected"].to_dict()
    # Four judgments per pair say less than all of them: the rate differs from the raw one.
    assert (got - table.set_index(["model_a", "model_b"])["win_rate"]).abs().max() > 0.01
