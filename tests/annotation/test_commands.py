"""Management commands: output and clear errors."""

import io

import pytest
from django.core.management import CommandError, call_command

from annotation.simulation import crowd_make, crowd_run


def test_report_prints_progress_and_writes_files(campaign, tmp_path):
    crowd_run(campaign=campaign, workers=crowd_make(good=3, noisy=0, spammer=0))
    out = io.StringIO()
    call_command("report", campaign.slug, "--out", str(tmp_path), stdout=out)
    text = out.getvalue()
    assert "18 of 18 judgments (100%), 3 workers" in text
    assert "mean ± SEM" in text
    assert (tmp_path / f"{campaign.slug}_scores.csv").exists()


def test_report_of_an_unknown_campaign_is_a_command_error(campaign):
    with pytest.raises(CommandError, match="No campaign 'nope'; campaigns: "):
        call_command("report", "nope")
