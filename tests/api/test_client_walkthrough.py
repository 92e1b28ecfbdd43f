"""docs/api.md's walkthrough, run block by block with the generated client (clients/python),
installed on its own into a temporary folder, in another Python process, against a live
server."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

from annotation.models import Campaign
from annotation.simulation import crowd_make, crowd_run
from dashboard import services
from dashboard.models import Job
from recruitment.models import Payment
from webhooks.models import WebhookEndpoint

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "api.md"
DONE = "--- block done ---"

# Runs in the other process: each block read from stdin (its length on a line, then its
# text) runs in one namespace; after the last, what it imported is reported.
DRIVER = f"""
import json, os, sys
namespace = {{"URL": os.environ["EVALSITE_URL"], "KEY": os.environ["EVALSITE_KEY"]}}
while size := sys.stdin.readline().strip():
    exec(compile(sys.stdin.read(int(size)), "docs/api.md", "exec"), namespace)
    print({DONE!r}, flush=True)
roots = sorted({{name.split(".")[0] for name in sys.modules}})
print(json.dumps(roots), flush=True)
"""


def _blocks() -> list[str]:
    text = DOC.read_text().split("## The Python client and a walkthrough", 1)[1]
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def _between(block: str) -> None:
    """What happens between blocks off the page: a crowd works after the launch; a report
    job queued on a broker is run here (the test starts no Celery worker)."""
    if "campaign_status.sync(" in block:
        campaign = Campaign.objects.get(slug="empathy-pilot")
        run = crowd_run(campaign=campaign, workers=crowd_make(good=4, noisy=1, spammer=0), seed=2)
        assert run.total > 0, run.errors
    if "report_start.sync(" in block and not settings.CELERY_TASK_ALWAYS_EAGER:
        for job in Job.objects.filter(status=Job.Status.QUEUED):
            services.job_run(job.pk)


def _install(target: Path) -> None:
    """``pip install --no-deps --target`` the client from a copy (a build leaves files in its
    source folder); the venv's setuptools builds it, so no index is needed."""
    source = target.parent / "client-source"
    shutil.copytree(ROOT / "clients" / "python", source)
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation"]
        + ["--no-index", "--target", str(target), str(source)],
        check=True,
    )


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_walkthrough_in_docs_api_md_runs_with_the_installed_client(
    live_server, key, tmp_path, settings
) -> None:
    settings.WEBHOOKS_ALLOW_PRIVATE = True  # the page's example.org is not looked up
    _install(tmp_path / "site")
    blocks = _blocks()
    assert len(blocks) >= 7
    env = {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": str(tmp_path / "site"),  # the client only: not the repository
        "EVALSITE_URL": live_server.url,
        "EVALSITE_KEY": key,
    }
    process = subprocess.Popen(
        [sys.executable, "-c", DRIVER],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdin and process.stdout
    try:
        for block in blocks:
            process.stdin.write(f"{len(block)}\n{block}")
            process.stdin.flush()
            output = []
            while (line := process.stdout.readline()) and line.strip() != DONE:
                output.append(line)
            assert line, f"The block failed:\n{block}\n{process.communicate()[1]}"
            _between(block)
        process.stdin.write("\n")
        process.stdin.flush()
        imported = json.loads(process.stdout.readline())
    finally:
        process.kill()
        process.wait()
    assert "evalsite_client" in imported
    assert not {"django", "celery", "evalsite", "annotation"} & set(imported), imported
    campaign = Campaign.objects.get(slug="empathy-pilot")
    assert campaign.items.count() == 12 and campaign.status == Campaign.Status.LIVE
    assert (tmp_path / "figure.png").read_bytes().startswith(b"\x89PNG")
    assert Payment.objects.filter(kind=Payment.Kind.BONUS).count() == 1
    assert WebhookEndpoint.objects.get(campaign=campaign).events == ["job.done"]
