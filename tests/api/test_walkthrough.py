"""docs/api.md's walkthrough, run block by block with the client against a live server."""

import re
from pathlib import Path

import pytest
from django.conf import settings

from annotation.models import Campaign
from annotation.simulation import crowd_make, crowd_run
from dashboard import services
from dashboard.models import Job
from recruitment.models import Payment

DOC = Path(__file__).resolve().parents[2] / "docs" / "api.md"


def _blocks() -> list[str]:
    text = DOC.read_text().split("## The Python client and a walkthrough", 1)[1]
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def _between(block: str) -> None:
    """What happens between blocks off the page: a crowd works after the launch; a report
    job queued on a broker is run here (the test starts no Celery worker)."""
    if "site.launch(" in block:
        campaign = Campaign.objects.get(slug="empathy-pilot")
        run = crowd_run(campaign=campaign, workers=crowd_make(good=4, noisy=1, spammer=0), seed=2)
        assert run.total > 0, run.errors
    if "report_build(" in block and not settings.CELERY_TASK_ALWAYS_EAGER:
        for job in Job.objects.filter(status=Job.Status.QUEUED):
            services.job_run(job.pk)


@pytest.mark.django_db(transaction=True)
def test_the_walkthrough_in_docs_api_md_runs(live_server, key, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    blocks = _blocks()
    assert len(blocks) >= 6
    namespace = {"URL": live_server.url, "KEY": key}
    for block in blocks:
        exec(compile(block, str(DOC), "exec"), namespace)  # noqa: S102
        _between(block)
    assert namespace["progress"]["percent"] == 100
    assert namespace["report"]["tables"] and (tmp_path / "figure.png").stat().st_size > 0
    assert Payment.objects.filter(kind=Payment.Kind.BONUS).count() == 1
    assert Campaign.objects.get(slug="empathy-pilot").items.count() == 12
    namespace["site"].close()
