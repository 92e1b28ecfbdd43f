"""The demo's ACUTE-Eval study: built from the demo's interactive SSA chats, filled by the
simulated crowd, reported, and created once."""

from io import StringIO

import pandas as pd
import pytest

from annotation.models import Campaign, Item, Judgment, Participation
from evalsite.demo import demo_dialogues
from evalsite.demo.acute import ACUTE, acute_study_run
from evalsite.demo.chat import SSA_CHAT, SSA_CHAT_MODELS, chat_studies_create, ssa_chats_simulate
from modelhub.demo import demo_endpoints_register


def demo_chats() -> Campaign:
    """Hold the demo's interactive SSA chats (two per demo bot), as `manage.py demo` does."""
    pool = [u.text for d in demo_dialogues() for u in d.utterances]
    demo_endpoints_register(candidates=pool, tiny_model=False)
    chats = next(c for c in chat_studies_create() if c.slug == SSA_CHAT)
    ssa_chats_simulate(campaign=chats, seed=0)
    return chats


@pytest.mark.django_db(transaction=True)
def test_the_demo_compares_its_chats_whole_and_a_rerun_adds_nothing(tmp_path):
    chats = demo_chats()
    out = StringIO()
    [campaign] = acute_study_run(seed=0, out=tmp_path, write=out.write)
    assert campaign.slug == ACUTE and campaign.status == Campaign.Status.LIVE
    items = list(Item.objects.filter(campaign=campaign))
    assert len(items) == 4  # every GenericBot chat with every retrieval-bot chat
    dialogues = {d.key for d in chats.dialogues.all()}
    for item in items:
        assert (item.payload["model_a"], item.payload["model_b"]) == tuple(sorted(SSA_CHAT_MODELS))
        assert item.payload["dialogue_a"].split("/", 1)[1] in dialogues
    # 3 counted workers per pair, 4 questions and a reason each (a worker the end-of-run
    # review excluded is replaced), and each pair's fourth slot left free.
    judgments = Judgment.objects.filter(item__campaign=campaign)
    blocked = Participation.objects.filter(campaign=campaign, soft_blocked=True)
    counted = judgments.exclude(worker__in=blocked.values("worker"))
    assert counted.count() == 4 * 3 * 5
    assert {item.claims for item in Item.objects.filter(campaign=campaign)} == {3}
    total = judgments.count()
    table = pd.read_csv(tmp_path / "acute_win_rates.csv")
    assert list(table["question"]) == [
        "Engagingness",
        "Interestingness",
        "Humanness",
        "Knowledgeable",
    ]
    assert (table["n"] == 12).all()
    # The demo's truth prefers the retrieval bot (model_b); the simulated crowd mostly agrees.
    assert table["b_wins"].sum() > table["a_wins"].sum()
    assert "ACUTE-Eval" in out.getvalue()
    again = StringIO()
    assert acute_study_run(seed=0, out=tmp_path, write=again.write) == [campaign]
    assert judgments.count() == total  # a re-run adds nothing
    assert "Created campaign" not in again.getvalue()


@pytest.mark.django_db
def test_without_chats_of_two_models_the_demo_says_so_and_creates_nothing(tmp_path):
    out = StringIO()
    assert acute_study_run(seed=0, out=tmp_path, write=out.write) == []
    assert "No ACUTE-Eval demo" in out.getvalue()
    assert not Campaign.objects.filter(slug=ACUTE).exists()
