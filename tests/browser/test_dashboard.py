"""A researcher uses the dashboard in a real Chromium on the demo's campaigns.

Reports and exports are Celery jobs: without a broker they run in the server's request; with
one (CI's PostgreSQL run) a real worker is started beside the live server.
"""

import io
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import connection

from annotation.models import Assignment, AuditLog, Campaign
from tests.browser.axe import assert_accessible
from tests.browser.waits import wait_js
from tests.conftest import tasks_eager

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.browser, pytest.mark.axe, pytest.mark.django_db(transaction=True)]


@contextmanager
def job_worker() -> Iterator[None]:
    """Run a real Celery worker for the jobs when a broker is configured, on PostgreSQL; else
    run them in the server's request, as without a broker (a worker process cannot see the
    SQLite test database), rather than stopping the test half-way."""
    if settings.CELERY_TASK_ALWAYS_EAGER:
        yield
        return
    if connection.vendor != "postgresql":
        with tasks_eager():
            yield
        return
    db = connection.settings_dict
    env = dict(os.environ)
    env["DATABASE_URL"] = f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"
    env["EVALSITE_DATA_DIR"] = str(settings.DATA_DIR)
    command = [sys.executable, "-m", "celery", "-A", "evalsite", "worker", "--pool", "solo"]
    worker = subprocess.Popen(
        [*command, "-Q", "default", "--loglevel", "WARNING"], cwd=ROOT, env=env
    )
    try:
        yield
    finally:
        worker.terminate()
        worker.wait(timeout=30)


def _log_in(page, live_server) -> None:
    User.objects.create_superuser("lead", password="a-long-test-password")
    page.goto(f"{live_server.url}/dashboard/")
    assert "/admin/login/" in page.url  # anonymous: sent to log in first
    page.fill("#id_username", "lead")
    page.fill("#id_password", "a-long-test-password")
    page.click("input[type=submit]")
    page.wait_for_url("**/dashboard/")


def _figures_rendered(page) -> int:
    """Count the report's figures that loaded as real, non-empty images."""
    wait_js(page, "() => [...document.querySelectorAll('img[data-figure]')].every(i => i.complete)")
    return page.evaluate(
        "() => [...document.querySelectorAll('img[data-figure]')]"
        ".filter(i => i.naturalWidth > 100 && i.naturalHeight > 100).length"
    )


def test_researcher_sees_reports_exports_and_approves_a_worker(
    live_server, browser, artifacts, tmp_path
) -> None:
    call_command(
        "demo", "--no-server", "--no-tiny-model", "--out", str(tmp_path), stdout=io.StringIO()
    )
    page = browser.new_page(viewport={"width": 1300, "height": 1000}, accept_downloads=True)
    _log_in(page, live_server)
    for slug in ("demo-likert", "demo-ab", "demo-ssa"):
        assert page.locator(f"#campaigns tr[data-slug='{slug}'] progress").count() == 1
    page.screenshot(path=artifacts / "dashboard_campaigns.png", full_page=True)
    assert_accessible(page, "dashboard: campaigns")

    with job_worker():
        for slug in ("demo-likert", "demo-ab", "demo-ssa"):
            page.goto(f"{live_server.url}/dashboard/")
            page.click(f"#campaigns tr[data-slug='{slug}'] a")
            page.wait_for_url(f"**/dashboard/c/{slug}/")
            with page.expect_navigation():
                page.click("#rebuild")
            # The demo built a report already, so its figures show before this job ends: wait
            # for the job's bar to finish and the page to reload with the new snapshot, or axe
            # below would run into that reload.
            page.wait_for_selector(
                "#jobs tr[data-kind=report][data-finished='0']", state="detached", timeout=90_000
            )
            page.wait_for_load_state()
            newest = page.locator("#jobs tr[data-kind=report] [data-field=status]").first
            assert newest.inner_text() == "done"
            page.wait_for_selector("img[data-figure]", timeout=90_000)
            expected = page.locator("img[data-figure]").count()
            assert expected >= 1
            assert _figures_rendered(page) == expected
            assert page.locator("#quality tbody tr").count() >= 5
            page.screenshot(path=artifacts / f"dashboard_{slug}.png", full_page=True)
            assert_accessible(page, f"dashboard: {slug} with its report")

        # Export the A/B judgments as CSV and download the file.
        page.goto(f"{live_server.url}/dashboard/c/demo-ab/")
        page.select_option("#export-form select[name=format]", "csv")
        page.click("#export")
        link = page.locator("#jobs tr[data-kind=export] a.download").first
        link.wait_for(timeout=90_000)
        with page.expect_download() as info:
            link.click()
        path = info.value.path()
        header = Path(path).read_text(encoding="utf-8").splitlines()[0]
        assert "rater" in header and "choice" not in header.split(",")[0]
        page.screenshot(path=artifacts / "dashboard_export.png", full_page=True)
        assert_accessible(page, "dashboard: an export done")

    # Approve a worker who has a submitted assignment.
    campaign = Campaign.objects.get(slug="demo-ab")
    assignment = Assignment.objects.filter(
        campaign=campaign, status=Assignment.Status.SUBMITTED
    ).first()
    assert assignment is not None
    pseudonym = assignment.worker.pseudonym
    row = page.locator(f"#quality tr[data-worker='{pseudonym}']")
    row.locator("select[name=action]").select_option("approve")
    row.locator("button").click()
    page.wait_for_selector(".messages .success")
    assert "Approved" in page.locator(".messages").inner_text()
    page.screenshot(path=artifacts / "dashboard_approved.png", full_page=True)
    assert_accessible(page, "dashboard: a worker approved")
    assert not Assignment.objects.filter(
        campaign=campaign, worker=assignment.worker, status=Assignment.Status.SUBMITTED
    ).exists()
    assert AuditLog.objects.filter(
        worker=assignment.worker, action=AuditLog.Action.APPROVE, actor="lead"
    ).exists()
