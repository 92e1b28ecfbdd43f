"""`manage.py demo --no-server` runs the whole platform and writes its report files."""

import io

import pandas as pd
import pytest
from django.core.management import call_command

from annotation.models import Campaign, Judgment


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
def test_demo_without_server_fills_the_campaign_and_writes_the_report(tmp_path, celery_eager):
    out = io.StringIO()
    call_command("demo", "--no-server", "--no-tiny-model", "--out", str(tmp_path), stdout=out)
    campaign = Campaign.objects.get(slug="demo-likert")
    assert campaign.status == Campaign.Status.LIVE
    items = campaign.items.count()
    assert items >= 90  # 30+ dialogues x 3 models
    # every item got its simulated ratings (3 questions each), the extra slot stays free
    crowd = Judgment.objects.filter(item__campaign=campaign).exclude(worker__provider="model")
    assert crowd.count() == items * 3 * 3
    # and the demo's LLM judge (annotation/demo/judge.py) answered apart, one rater
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
    assert "mean ± SEM" in out.getvalue()

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

    # A second run reuses the campaigns and adds nothing.
    call_command(
        "demo", "--no-server", "--no-tiny-model", "--out", str(tmp_path), stdout=io.StringIO()
    )
    assert crowd.count() == items * 3 * 3 and judged.count() == items * 3
