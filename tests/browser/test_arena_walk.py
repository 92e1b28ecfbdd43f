"""An arena study end to end: the wizard makes it live from two registered models, a worker
chats and votes in Chromium (both panes streamed by a model server speaking the OpenAI wire
protocol), the researcher reads the leaderboard in Chromium, and the votes leave in the
public battle format and are re-ranked from it."""

from __future__ import annotations

import io
import json

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from playwright.sync_api import expect

from annotation.models import Campaign
from dashboard.models import Job
from dashboard.services import job_run, job_start
from tests.browser.asgi_server import _daphne, asgi_live_server  # noqa: F401 (fixtures)
from tests.browser.test_arena import (  # noqa: F401 (fixtures)
    TIMEOUT,
    _ready,
    _register,
    _replies,
    inference_threads,
    streamer,
)
from tests.dashboard.test_wizard_arena import settings_data

pytestmark = pytest.mark.browser
MODELS = ["arena-red", "arena-green"]
PASSWORD = "a-long-test-password"


def _wizard(client: Client) -> Campaign:
    """Make the arena live through the wizard's pages, open to local links."""
    parameters = json.dumps({"models": MODELS, "heartbeat_s": 1})
    start = {"protocol": "arena", "slug": "walk", "name": "Walk", "parameters": parameters}
    assert client.post(reverse("dashboard:wizard"), start).status_code == 302
    draft = Campaign.objects.get(slug="walk")
    settings = reverse("dashboard:wizard_settings", args=[draft.slug])
    saved = client.post(settings, settings_data(draft, open_links="on"))
    assert saved.status_code == 302, saved.content.decode()[:2000]
    assert client.post(reverse("dashboard:wizard_launch", args=[draft.slug])).status_code == 302
    draft.refresh_from_db()
    assert draft.status == Campaign.Status.LIVE and draft.open_links
    return draft


def test_an_arena_study_from_the_wizard_to_the_leaderboard_and_the_battles(
    asgi_live_server,  # noqa: F811
    browser,
    streamer,  # noqa: F811
    inference_threads,  # noqa: F811
    settings,
    tmp_path,
):
    settings.DATA_DIR = tmp_path
    _register(streamer, MODELS)
    ada = User.objects.create_user("ada", password=PASSWORD, is_staff=True)
    client = Client()
    client.force_login(ada)
    campaign = _wizard(client)

    # A worker in the browser: one exchange, a vote by click, the end and the reveal.
    worker = browser.new_page(viewport={"width": 1100, "height": 900})
    worker.goto(f"{asgi_live_server}/task/{campaign.slug}/?workerId=walker")
    _ready(worker)
    worker.locator("#message-text").fill("Which sea is the saltiest?")
    worker.locator("#message-text").press("Enter")
    replies = _replies(worker, 1)
    worker.get_by_role("radio", name="B is better").check()
    worker.get_by_role("button", name="Vote", exact=True).click()
    worker.get_by_role("button", name="Finish the conversation").click()
    reveal = worker.locator("#arena-reveal")
    expect(reveal).to_be_visible(timeout=TIMEOUT)
    winner = replies["b"].split(" ")[0]
    assert f"chatbot B was {winner}" in reveal.inner_text()

    # The researcher's leaderboard, built by the dashboard's report job.
    job = job_start(campaign=campaign, kind=Job.Kind.REPORT)
    job_run(job.pk)
    board = browser.new_page(viewport={"width": 1280, "height": 900})
    board.goto(f"{asgi_live_server}/dashboard/c/{campaign.slug}/leaderboard/")
    board.fill("#id_username", "ada")
    board.fill("#id_password", PASSWORD)
    board.click("input[type=submit]")
    board.wait_for_url("**/leaderboard/")
    rows = board.locator("table[data-table=leaderboard] tbody tr")
    expect(rows).to_have_count(2, timeout=TIMEOUT)
    assert winner in rows.first.inner_text()  # one vote, for B: B's model ranks first

    # The votes in the public battle format, re-ranked from the file.
    out = tmp_path / "battles.jsonl"
    call_command("export", campaign.slug, "--format", "battles", "--out", out, stdout=io.StringIO())
    (battle,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert battle["winner"] == "model_b" and battle["model_b"] == winner
    assert battle["conversation_b"][0]["content"] == "Which sea is the saltiest?"
    ranked = io.StringIO()
    call_command("arena_rank", out, stdout=ranked)
    assert winner in ranked.getvalue()
