"""A judge's answers never count as the crowd's: reports, exports, progress, counters,
tallies, quality control and the dashboard's spot checks of a judged campaign are those of
the unjudged one."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from annotation.exports import judgments_export, judgments_export_frame
from annotation.models import CampaignTally, Item, Worker
from annotation.quality import worker_quality
from annotation.selectors import campaign_progress, campaign_report
from annotation.tallies import tallies_rebuild
from dashboard.spot_checks import spot_checks
from evalstats.reports import report_text
from judges.services import judge_start


@pytest.fixture(autouse=True)
def _eager():
    from evalsite.celery import app

    before = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = before


def _crowd_view(campaign, folder) -> dict:
    out = io.StringIO()
    call_command("report", campaign.slug, "--n-boot", "50", stdout=out)
    files = {}
    for fmt in ("csv", "jsonl"):
        path = folder / f"export.{fmt}"
        judgments_export(campaign, path, fmt)
        files[fmt] = path.read_bytes()
    return {
        "report": report_text(campaign_report(campaign)),
        "command": out.getvalue(),
        "files": files,
        "frame": judgments_export_frame(campaign).to_csv(index=False),
        "progress": campaign_progress(campaign),
        "counters": list(Item.objects.order_by("pk").values_list("pk", "judged", "claims")),
        "tallies": list(
            CampaignTally.objects.order_by("hour", "shard", "level").values_list(
                "hour", "shard", "level", "pairs", "judgments"
            )
        ),
        "quality": worker_quality(campaign).to_csv(index=False),
        "spot_checks": [(c.pseudonym, c.count) for c in spot_checks(campaign, workers=50, seed=0)],
    }


@pytest.mark.parametrize("which", ["likert_campaign", "pairwise_campaign"])
def test_a_judged_campaigns_crowd_view_is_byte_identical_to_the_unjudged_one(
    which, request, judge_endpoint, fake_judge, tmp_path, django_capture_on_commit_callbacks
):
    campaign = request.getfixturevalue(which)
    before = _crowd_view(campaign, tmp_path)
    with django_capture_on_commit_callbacks(execute=True):
        judge_start(campaign=campaign, endpoint=judge_endpoint)
    assert Worker.objects.filter(provider=Worker.Provider.MODEL, judgments__isnull=False).exists()
    after = _crowd_view(campaign, tmp_path)
    assert after == before
    # a repair recount of the tallies leaves the judges out too
    tallies_rebuild([campaign.pk])
    assert _crowd_view(campaign, tmp_path)["tallies"] == before["tallies"]
