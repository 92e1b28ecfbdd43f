"""`manage.py demo --no-server` runs the whole platform and writes its report files."""

import io

import pandas as pd
import pytest
from django.core.management import call_command

from annotation.models import Campaign, Judgment


@pytest.mark.django_db(transaction=True)
def test_demo_without_server_fills_the_campaign_and_writes_the_report(tmp_path):
    out = io.StringIO()
    call_command("demo", "--no-server", "--out", str(tmp_path), stdout=out)
    campaign = Campaign.objects.get(slug="demo-likert")
    assert campaign.status == Campaign.Status.LIVE
    items = campaign.items.count()
    assert items >= 60  # 30+ dialogues x 2 models
    # every item got its simulated ratings (3 questions each), the extra slot stays free
    assert Judgment.objects.filter(item__campaign=campaign).count() == items * 3 * 3
    scores = pd.read_csv(tmp_path / "likert_scores.csv")
    assert set(scores["model"]) == {"generic-bot", "gold"}
    assert (scores["n"] >= 100).all()
    gold = scores[scores["model"] == "gold"].set_index("aspect")["mean"]
    bot = scores[scores["model"] == "generic-bot"].set_index("aspect")["mean"]
    assert (gold["Empathy/Sympathy"] > bot["Empathy/Sympathy"]) and (
        gold["Relevance"] > bot["Relevance"]
    )
    assert (tmp_path / "likert_likert.png").stat().st_size > 10_000
    assert (tmp_path / "likert_agreement.csv").exists()
    assert "mean ± SEM" in out.getvalue()

    # A second run reuses the campaign and adds nothing.
    call_command("demo", "--no-server", "--out", str(tmp_path), stdout=io.StringIO())
    assert Judgment.objects.filter(item__campaign=campaign).count() == items * 3 * 3
