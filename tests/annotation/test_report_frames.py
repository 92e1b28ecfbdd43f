"""The report's compact read of the judgments: the same rows and values, fewer objects."""

import pandas as pd
import pytest

from annotation.models import Participation
from annotation.selectors import (
    REPORT_COLUMNS,
    campaign_judgments_frame,
    campaign_report_judgments_frame,
)
from tests.annotation.test_exports import MIXES, _campaign_with


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
