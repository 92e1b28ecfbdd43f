"""`manage.py demo --no-server` runs the whole platform and writes its report files."""

import html
import io
import re

import pandas as pd
import pytest
import torch
from django.core.management import call_command

import modelhub.demo
from annotation.models import Campaign, Item, Judgment
from annotation.protocols import LiveChat, registry
from annotation.services import worker_visit
from dashboard.selectors import campaign_row, report_latest
from modelhub.demo import STREAMING_BOT, demo_endpoints_register
from modelhub.models import ModelEndpoint
from providers import Arrival


@pytest.fixture
def celery_eager():
    """Run the demo judge's job in this process: with a broker configured (CI on PostgreSQL)
    it would wait for a worker, as `make demo` says it does."""
    from evalsite.celery import app

    before = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = before


@pytest.mark.django_db(transaction=True)
def test_demo_without_server_fills_the_campaigns_leaves_room_and_builds_dashboard_reports(
    tmp_path, celery_eager, admin_client
):
    out = io.StringIO()
    call_command("demo", "--no-server", "--no-tiny-model", "--out", str(tmp_path), stdout=out)
    campaign = Campaign.objects.get(slug="demo-likert")
    assert campaign.status == Campaign.Status.LIVE
    items = campaign.items.count()
    assert items >= 90  # 30+ dialogues x 3 models
    # every item holds its 3 simulated raters (3 questions each; where the end-of-run review
    # excluded a worker, the crowd came back for the slots the top-up re-opened), and the
    # extra slot stays free
    crowd = Judgment.objects.filter(item__campaign=campaign).exclude(worker__provider="model")
    assert set(campaign.items.values_list("claims", flat=True)) == {3}
    assert crowd.count() >= items * 3 * 3
    crowd_before = crowd.count()
    # and the demo's LLM judge (evalsite/demo/judge.py) answered apart, one rater
    judged = Judgment.objects.filter(item__campaign=campaign, worker__provider="model")
    assert judged.count() == items * 3
    assert (tmp_path / "demo-likert_judges_agreement.csv").exists()
    assert (tmp_path / "demo-ab_judges_position_bias.csv").exists()
    scores = pd.read_csv(tmp_path / "likert_scores.csv")
    assert set(scores["model"]) == {"generic-bot", "gold", "retrieval-minilm"}
    assert (scores["n"] >= 100).all()
    gold = scores[scores["model"] == "gold"].set_index("aspect")["mean"]
    bot = scores[scores["model"] == "generic-bot"].set_index("aspect")["mean"]
    assert (gold["Empathy/Sympathy"] > bot["Empathy/Sympathy"]) and (
        gold["Relevance"] > bot["Relevance"]
    )
    assert (tmp_path / "likert_likert.png").stat().st_size > 10_000
    assert (tmp_path / "likert_agreement.csv").exists()
    assert "± 1 SEM, as in the paper; does not account for raters" in out.getvalue()

    # The A/B study: gold beats GenericBot clearly, and the ranking says so.
    pairs = pd.read_csv(tmp_path / "pairwise_pairs.csv").set_index(["model_a", "model_b"])
    assert (
        pairs.loc[("generic-bot", "gold"), "b_wins"] > pairs.loc[("generic-bot", "gold"), "a_wins"]
    )
    ranking = pd.read_csv(tmp_path / "pairwise_bradley_terry.csv")
    assert ranking["model"].iloc[0] == "gold"
    assert (tmp_path / "pairwise_ratio_heatmap.png").stat().st_size > 10_000

    # The SSA study: GenericBot is hardly ever judged specific (never, by the simulated
    # crowd's truth; a noisy majority may slip); the hidden gold checks were served.
    ssa = pd.read_csv(tmp_path / "ssa_scores.csv").set_index("model")
    assert ssa.loc["generic-bot", "specificity"] <= 10
    assert ssa.loc["gold", "ssa"] > ssa.loc["generic-bot", "ssa"]
    ssa_campaign = Campaign.objects.get(slug="demo-ssa")
    assert ssa_campaign.items.filter(gold__isnull=False).exists()
    assert Judgment.objects.filter(item__campaign=ssa_campaign, item__gold__isnull=False).exists()

    # The EmotionLines study: every line of every demo dialogue labeled by 5 workers.
    emotion = pd.read_csv(tmp_path / "emotionlines_agreement.csv").iloc[0]
    assert emotion["raters"] == 5 and emotion["kappa"] > 0.2
    shares = pd.read_csv(tmp_path / "emotionlines_distribution.csv").iloc[0]
    assert shares["dialogues"] == 8 and shares["neutral"] > shares["fear"]

    # The arena: the simulated crowd's votes rank the retrieval bot above GenericBot.
    board = pd.read_csv(tmp_path / "arena_leaderboard.csv")
    assert list(board["model"]) == ["retrieval-minilm", "generic-bot"]
    assert board["n"].sum() >= 2 * 24  # every conversation voted at least once

    campaigns = list(Campaign.objects.filter(slug__startswith="demo-"))
    expected = {"demo-acute", "demo-ssa-chat", "demo-ed-chat", "demo-arena"}
    assert {c.slug for c in campaigns} >= expected
    _assert_room_for_a_newcomer(campaigns, admin_client)
    _assert_dashboard_reports(campaigns, admin_client)

    # A second run reuses the campaigns and adds nothing (no judgment, no report).
    reports = [report_latest(c).pk for c in campaigns]
    call_command(
        "demo", "--no-server", "--no-tiny-model", "--out", str(tmp_path), stdout=io.StringIO()
    )
    assert crowd.count() == crowd_before and judged.count() == items * 3
    assert [report_latest(c).pk for c in campaigns] == reports


def _assert_room_for_a_newcomer(campaigns, client):
    """Every demo campaign's worker URL opens the study for someone new: the simulated crowd
    left a slot of every item free, and the page is the study's, not an end page."""
    for campaign in campaigns:
        if not isinstance(registry.get(campaign.protocol), LiveChat):
            items = Item.objects.filter(campaign=campaign, gold__isnull=True)
            assert items.exists()
            assert not items.filter(claims__gte=campaign.redundancy).exists(), campaign.slug
            # and filled: every item holds the simulated count, or one less where the top-up
            # cap left an excluded worker's slot to people
            assert not items.filter(claims__lt=campaign.redundancy - 2).exists(), campaign.slug
            arrival = Arrival(provider="simulated", worker_id="newcomer")
            assert worker_visit(campaign=campaign, arrival=arrival).kind == "item", campaign.slug
        page = client.get(f"/task/{campaign.slug}/?workerId=someone-new").content.decode()
        heading = re.search(r"<h1[^>]*>(.*?)</h1>", page, re.S)
        assert heading is not None and "No more items" not in page, campaign.slug
        assert heading.group(1).strip().startswith(campaign.name), heading.group(1)


def _assert_dashboard_reports(campaigns, client):
    """Every demo campaign's dashboard page shows the report the demo built (through the
    dashboard's own report job), counting every judgment the campaign has."""
    for campaign in campaigns:
        snapshot = report_latest(campaign)
        assert snapshot is not None, campaign.slug
        assert snapshot.result["judgments"] == campaign_row(campaign).judgments
        page = client.get(f"/dashboard/c/{campaign.slug}/").content.decode()
        assert "No report built yet" not in page and html.escape(snapshot.result["title"]) in page


@pytest.mark.django_db
def test_the_demo_model_training_prints_its_progress_on_one_thread(tmp_path, settings, monkeypatch):
    settings.DATA_DIR = tmp_path
    monkeypatch.setattr(modelhub.demo, "TINY_MODEL_STEPS", 30)
    lines: list[str] = []
    threads = torch.get_num_threads()
    dialogues = [["hi, how are you?", "fine, thanks. and you?", "great, i got a puppy!"]] * 4
    demo_endpoints_register(candidates=["ok"], dialogues=dialogues, write=lines.append)
    assert "30 steps, one CPU thread" in lines[0]
    steps = [re.match(r"\s+step (\d+)/30\s+loss (\d+\.\d+)\s+\d+ s$", line) for line in lines[1:]]
    assert [int(m.group(1)) for m in steps if m] == [25, 30]
    assert float(steps[-1].group(2)) < float(steps[0].group(2)) + 1  # a number, not NaN
    assert torch.get_num_threads() == threads  # the process keeps its threads
    assert ModelEndpoint.objects.filter(name__in=["tiny-gpt2", STREAMING_BOT]).count() == 2
