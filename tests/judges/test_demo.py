"""The demo's judge: a tiny GPT-2 built locally judges the demo's Likert and A/B campaigns."""

from __future__ import annotations

import pandas as pd
import pytest

from annotation.models import Judgment, Worker
from evalsite.demo.judge import JUDGE, judges_demo
from tests.judges.conftest import campaign_make, likert_items, pairwise_items

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


@pytest.fixture(autouse=True)
def _eager():
    from evalsite.celery import app

    before = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = before


@pytest.mark.django_db(transaction=True)  # as in the demo: each commit runs its hooks at once
def test_the_demo_judges_its_campaigns_and_writes_the_agreement_report(settings, tmp_path):
    settings.DATA_DIR = tmp_path / "data"
    likert = campaign_make("demo-likert", "likert", likert_items(4))
    ab = campaign_make("demo-ab", "pairwise", pairwise_items(4))
    other = campaign_make("other", "likert", likert_items(2), crowd=False)
    lines: list[str] = []
    written = judges_demo(campaigns=[likert, ab, other], out=tmp_path / "out", write=lines.append)
    text = "\n".join(lines)
    assert f"LLM judge on demo-likert: {JUDGE}, a tiny untrained GPT-2" in text
    judged = Judgment.objects.filter(worker__provider=Worker.Provider.MODEL)
    assert judged.filter(item__campaign=likert).values("item").distinct().count() == 12
    assert judged.filter(item__campaign=ab).values("item").distinct().count() == 12
    assert not judged.filter(item__campaign=other).exists()
    names = {p.name for p in written}
    assert {"demo-likert_judges_agreement.csv", "demo-ab_judges_position_bias.csv"} <= names
    assert (tmp_path / "out" / "demo-ab_judges_agreement.png").stat().st_size > 5_000
    bias = pd.read_csv(tmp_path / "out" / "demo-ab_judges_position_bias.csv")
    assert bias["items_both_orders"].iloc[0] == 12
