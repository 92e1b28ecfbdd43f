"""The report's compact read of the judgments: the same rows and values, fewer objects."""

import pandas as pd
import pytest

from annotation.judgment_reads import (
    REPORT_COLUMNS,
    campaign_judgments_frame,
    campaign_report_judgments_frame,
)
from annotation.models import Judgment, Participation
from annotation.protocols import registry
from annotation.selectors import campaign_items_frame, campaign_report
from tests.annotation.test_exports import MIXES, _campaign_with
from tests.factories import AssignmentFactory, CampaignFactory, ItemFactory, JudgmentFactory


@pytest.mark.django_db
@pytest.mark.parametrize("mix", MIXES)
def test_report_frame_is_the_judgments_frame_without_timestamps(mix):
    values = MIXES[mix]
    presentations = [{"order": ["b", "a"] if n % 3 else ["a", "b"]} for n in range(len(values))]
    campaign = _campaign_with(values, presentations=presentations, blocked=2)
    compact = campaign_report_judgments_frame(campaign, chunk_rows=4)
    reference = campaign_judgments_frame(campaign)[REPORT_COLUMNS]
    pd.testing.assert_frame_equal(compact, reference)
    assert Participation.objects.filter(soft_blocked=True).exists()


@pytest.mark.django_db
def test_equal_presentations_are_one_object():
    campaign = _campaign_with([1, 2] * 9, presentations=[{"order": ["a", "b"]}] * 18)
    presentations = campaign_report_judgments_frame(campaign)["presentation"]
    assert len({id(p) for p in presentations}) == 1


@pytest.mark.django_db
def test_a_campaign_without_judgments_gives_an_empty_report_frame():
    campaign = _campaign_with([])
    frame = campaign_report_judgments_frame(campaign)
    assert list(frame.columns) == REPORT_COLUMNS and frame.empty


def _pairwise_campaign():
    campaign = CampaignFactory(
        protocol="pairwise", parameters=registry.get("pairwise").default_parameters()
    )
    models = ["gold", "bot", "retrieval"]
    items = [
        ItemFactory(
            campaign=campaign,
            payload={
                "context": [f"Hello {n}"],
                "model_a": models[n % 3],
                "response_a": f"Hi {n}",
                "model_b": models[(n + 1) % 3],
                "response_b": f"Yo {n}",
                "example": f"e{n}",
            },
        )
        for n in range(12)
    ]
    choices = ["first", "second", "both", "neither", "first"]
    for r in range(4):
        assignment = AssignmentFactory(campaign=campaign)
        for n, item in enumerate(items):
            JudgmentFactory(
                assignment=assignment,
                item=item,
                question="choice",
                value=choices[(n * 3 + r) % 5],
                presentation={"order": ["b", "a"] if (n + r) % 2 else ["a", "b"]},
            )
    return campaign


@pytest.mark.django_db
@pytest.mark.parametrize("protocol", ["pairwise", "likert"])
def test_campaign_report_is_the_report_of_the_whole_frames(protocol):
    if protocol == "pairwise":
        campaign = _pairwise_campaign()
    else:
        campaign = _campaign_with([1, 2, 3, 4, 5, 4, 3, 2, 2, 4, 5, 5] * 3)
        for old, new in [("q0", "empathy"), ("q1", "relevance"), ("q2", "fluency")]:
            Judgment.objects.filter(question=old).update(question=new)
    protocol_ = registry.get(campaign.protocol)
    parameters = protocol_.clean_parameters(campaign.parameters)
    whole = protocol_.report(
        parameters, campaign_items_frame(campaign), campaign_judgments_frame(campaign)
    )
    report = campaign_report(campaign)
    assert set(report.tables) == set(whole.tables) and report.notes == whole.notes
    for name, table in whole.tables.items():
        pd.testing.assert_frame_equal(report.tables[name], table)


@pytest.mark.django_db
def test_items_frame_reads_only_the_payload_keys_asked_for():
    campaign = _pairwise_campaign()
    frame = campaign_items_frame(campaign, keys=("model_a", "model_b", "missing"))
    first = frame["payload"].iloc[0]
    assert first == {"model_a": "gold", "model_b": "bot", "missing": None}
    assert list(frame["item"]) == list(campaign_items_frame(campaign)["item"])
