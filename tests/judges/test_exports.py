"""The LLM judges' judgments are exported on request, by the judge's name, apart from the
crowd's (command, dashboard job and API alike go through ``judgments_export``)."""

from __future__ import annotations

import io

import pandas as pd
import pytest
from django.core.management import CommandError, call_command

from annotation.exports import frame_write, judgments_export, judgments_export_frame
from annotation.models import Judgment, Worker
from dashboard import services as dashboard_services
from dashboard.models import Job
from judges.services import judge_start


@pytest.fixture
def judged(likert_campaign, judge_endpoint, fake_judge, django_capture_on_commit_callbacks):
    from evalsite.celery import app

    before, app.conf.task_always_eager = app.conf.task_always_eager, True
    try:
        with django_capture_on_commit_callbacks(execute=True):
            judge_start(campaign=likert_campaign, endpoint=judge_endpoint)
    finally:
        app.conf.task_always_eager = before
    return likert_campaign


def test_the_judges_export_holds_their_judgments_only_each_named_by_its_judge(judged, tmp_path):
    judges = Judgment.objects.filter(worker__provider=Worker.Provider.MODEL)
    crowd = Judgment.objects.exclude(worker__provider=Worker.Provider.MODEL)
    assert judges.count() == 3 * 36 and crowd.exists()
    for fmt in ("csv", "jsonl", "parquet"):
        rows = judgments_export(judged, tmp_path / f"j.{fmt}", fmt, judges=True)
        assert rows == judges.count()
    frame = pd.read_csv(tmp_path / "j.csv")
    assert set(frame["rater"]) == {"fake-judge@likert-v1:json"}
    assert len(frame) == judges.count() and not frame["flagged"].any()
    # The streamed file is the whole frame's, as for the crowd.
    reference = tmp_path / "reference.csv"
    frame_write(judgments_export_frame(judged, judges=True), reference, "csv")
    assert (tmp_path / "j.csv").read_text() == reference.read_text()
    # The crowd's export is unchanged: no judge in it.
    assert judgments_export(judged, tmp_path / "crowd.csv", "csv") == crowd.count()
    assert "fake-judge" not in (tmp_path / "crowd.csv").read_text()


def test_the_command_and_the_dashboard_job_export_the_judges_on_request(judged, tmp_path):
    out = io.StringIO()
    call_command("export", judged.slug, "--judges", "--out", str(tmp_path / "j.csv"), stdout=out)
    assert out.getvalue().startswith(f"wrote {3 * 36} judgments")
    with pytest.raises(CommandError, match="not dialogues"):
        call_command("export", judged.slug, "--judges", "--dialogues", stdout=io.StringIO())
    job = dashboard_services.job_start(
        campaign=judged, kind=Job.Kind.EXPORT, options={"format": "csv", "judges": True}
    )
    assert dashboard_services.job_run(job.pk)
    job.refresh_from_db()
    assert job.status == Job.Status.DONE and job.result == {"rows": 3 * 36}
    assert job.files == [f"{judged.slug}_judge_judgments.csv"]
