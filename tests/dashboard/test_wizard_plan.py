"""The launch wizard's review step shows what the draft's design can detect (the planner)."""

import html
import io
import re
import shlex

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from annotation.models import Campaign
from dashboard.drafts import draft_state
from dashboard.drafts.plan import (
    AB_STUDIES,
    BOOT,
    CHAT_STUDIES,
    KAPPA_STUDIES,
    LIKERT_STUDIES,
    SSA_STUDIES,
)
from evalstats.planner import (
    ABDesign,
    ChatDesign,
    Found,
    KappaDesign,
    LikertDesign,
    SSADesign,
    ab_detectable,
    chat_plan,
    kappa_plan,
    likert_plan,
    ssa_plan,
)
from tests.factories import ItemFactory, likert_payload

pytestmark = pytest.mark.django_db


@pytest.fixture
def ada(client, researcher) -> Client:
    client.force_login(researcher)
    return client


def start(ada: Client, protocol: str, slug: str, parameters: str = "") -> Campaign:
    response = ada.post(
        reverse("dashboard:wizard"),
        {"protocol": protocol, "slug": slug, "name": slug, "parameters": parameters},
    )
    assert response.status_code == 302
    return Campaign.objects.get(slug=slug)


def with_items(campaign: Campaign, counts: dict[str, int], redundancy: int) -> Campaign:
    for model, n in counts.items():
        for i in range(n):
            ItemFactory(campaign=campaign, key=f"{model}-{i}", payload=likert_payload(i, model))
    Campaign.objects.filter(pk=campaign.pk).update(redundancy=redundancy)
    campaign.refresh_from_db()
    return campaign


def review(ada: Client, campaign: Campaign) -> str:
    response = ada.get(reverse("dashboard:wizard_review", args=[campaign.slug]))
    assert response.status_code == 200
    return html.unescape(response.content.decode())


def shown(page: str, element: str) -> str:
    match = re.search(rf'id="{element}">([^<]*)<', page)
    assert match, f"no #{element} on the page"
    return match.group(1)


def test_a_likert_review_shows_the_difference_the_planner_finds_for_its_design(ada) -> None:
    # Three models: the smallest has 12 items; two comparisons with the reference on each of
    # the three aspects: Holm over six, as the report's (uncertainty.mean_comparisons).
    draft = with_items(start(ada, "likert", "ratings"), {"a": 12, "b": 14, "c": 15}, 3)
    page = review(ada, draft)
    direct = likert_plan(
        LikertDesign(items_per_model=12, ratings_per_item=3, comparisons=6),
        0.3,
        studies=LIKERT_STUDIES,
        seed=0,
    )
    assert shown(page, "plan-detectable") == f"{direct.detectable:.2f}"
    assert shown(page, "plan-width") == f"±{direct.mean_width / 2:.2f}"
    assert "points on the 1–5 scale" in page and "with 80% power" in page
    assert "noise sd 0.8" in page and "a fresh rater for every rating" in page
    command = "python manage.py plan likert --items 12 --ratings 3 --fresh --comparisons 6"
    assert shown(page, "plan-command") == f"{command} --studies {LIKERT_STUDIES} --seed 0"
    assert found_by(shown(page, "plan-command")) == f"{direct.detectable:.3g}"
    # Kept on the draft: a second view reads it back instead of simulating again.
    kept = draft_state(draft)["plan"]
    assert kept["result"]["detectable"] == pytest.approx(direct.detectable)
    assert shown(review(ada, draft), "plan-detectable") == f"{direct.detectable:.2f}"


def test_a_changed_design_is_planned_again(ada) -> None:
    draft = with_items(start(ada, "likert", "ratings"), {"a": 10, "b": 10}, 1)
    first = shown(review(ada, draft), "plan-detectable")
    Campaign.objects.filter(pk=draft.pk).update(redundancy=5)
    again = shown(review(ada, draft), "plan-detectable")
    direct = likert_plan(
        LikertDesign(items_per_model=10, ratings_per_item=5, comparisons=3),  # 3 aspects
        0.3,
        studies=LIKERT_STUDIES,
        seed=0,
    )
    assert again == f"{direct.detectable:.2f}" and float(again) < float(first)


def test_a_static_ssa_review_shows_the_difference_in_proportion(ada) -> None:
    draft = with_items(start(ada, "ssa", "meena-ssa"), {"a": 100, "b": 100}, 5)
    page = review(ada, draft)
    design = SSADesign(responses_per_model=100, raters_per_response=5, pool=20)
    first = ssa_plan(design, 0.05, studies=SSA_STUDIES, seed=0)
    refined = ssa_plan(design, first.detectable, studies=SSA_STUDIES, seed=0)
    assert shown(page, "plan-detectable") == f"{refined.detectable:.2f}"
    assert "in proportion" in page and "a pool of 20 workers" in page


def test_an_emocontext_draft_says_the_planner_does_not_cover_it(ada) -> None:
    draft = start(ada, "emocontext", "emo")
    page = review(ada, draft)
    assert "does not cover the emocontext protocol yet" in shown(page, "plan-problem")
    assert 'id="plan-detectable"' not in page
    assert "plan" not in draft_state(draft)


def pairs(campaign: Campaign, counts: dict[tuple[str, str], int], redundancy: int) -> Campaign:
    for (a, b), n in counts.items():
        for i in range(n):
            payload = {
                "context": ["Hi"],
                "model_a": a,
                "response_a": f"{a}{i}",
                "model_b": b,
                "response_b": f"{b}{i}",
                "example": f"e{i}",
            }
            ItemFactory(campaign=campaign, key=f"{a}-{b}-{i}", payload=payload)
    Campaign.objects.filter(pk=campaign.pk).update(redundancy=redundancy)
    campaign.refresh_from_db()
    return campaign


def test_an_ab_review_shows_the_win_rate_and_the_bradley_terry_gap(ada) -> None:
    counts = {("x", "y"): 40, ("x", "z"): 50, ("y", "z"): 45}
    page = review(ada, pairs(start(ada, "pairwise", "ab"), counts, 3))
    design = ABDesign(items=40, judgments_per_item=3, pool=20)
    direct = ab_detectable(design, studies=AB_STUDIES, seed=0)
    assert shown(page, "plan-detectable") == f"{direct.detectable:.2f}"
    assert shown(page, "plan-power") == f"(Simulated power at that advantage: {direct.power:.0%}.)"
    assert "a win rate advantage of" in page and "over a 50% win rate" in page
    assert "Bradley–Terry over the 3 models" in page
    command = "python manage.py plan ab --items 40 --ratings 3 --pool 20"
    assert shown(page, "plan-command") == f"{command} --studies {AB_STUDIES} --seed 0"


def found_by(command: str) -> str:
    """Run the page's command line; return what it prints as found with 80% power."""
    out = io.StringIO()
    call_command(*shlex.split(command)[2:], stdout=out)
    line = next(x for x in out.getvalue().splitlines() if "found with 80% power" in x)
    return line.split("power: ", 1)[1]


@pytest.mark.parametrize("items", [4, 6, 12])
def test_a_small_ab_review_shows_the_advantage_its_command_prints(ada, items) -> None:
    # Six contexts, three judgments each once showed "0.00" (a 99% win rate's studies had a
    # standard error of 0), and then an advantage the studies found 28-40% of the time.
    # The page and the command now run one search on the simulated power
    # (planner.design_found) and print the same answer: an advantage found with 80% power,
    # or plainly none.
    draft = pairs(start(ada, "pairwise", f"ab-{items}"), {("x", "y"): items}, 3)
    page = review(ada, draft)
    printed = found_by(shown(page, "plan-command"))
    design = ABDesign(items=items, judgments_per_item=3, pool=20)
    direct = ab_detectable(design, studies=AB_STUDIES, seed=0)
    if 'id="plan-detectable"' in page:
        detectable = shown(page, "plan-detectable")
        assert detectable != "0.00" and float(detectable) > 0.1
        assert f"{float(printed.split()[0]):.2f}" == detectable
        assert direct.power >= 0.8 and f"{direct.detectable:.2f}" == detectable
    else:
        assert "This design finds no win-rate advantage with 80% power" in page
        assert printed.startswith("none: this design is too small") and direct.power < 0.8


def test_an_ab_advantage_found_with_its_power_carries_no_warning(ada, monkeypatch) -> None:
    from dashboard.drafts import plan as draft_plan_module

    found = Found(0.12, 0.17, AB_STUDIES, 0.8, power=0.8)
    monkeypatch.setattr(draft_plan_module, "design_found", lambda *a, **k: found)
    page = review(ada, pairs(start(ada, "pairwise", "fine"), {("x", "y"): 100}, 3))
    assert shown(page, "plan-detectable") == "0.12"
    assert 'id="plan-short"' not in page


def test_an_ab_design_too_small_for_any_advantage_says_so(ada, monkeypatch) -> None:
    from dashboard.drafts import plan as draft_plan_module

    missed = Found(0.49, 0.2, AB_STUDIES, 0.8, power=0.3, reached=False)
    monkeypatch.setattr(draft_plan_module, "design_found", lambda *a, **k: missed)
    page = review(ada, pairs(start(ada, "pairwise", "tiny"), {("x", "y"): 2}, 1))
    assert "This design finds no win-rate advantage with 80% power" in page
    assert shown(page, "plan-power") == "30%"
    assert 'id="plan-detectable"' not in page


def test_an_interactive_ssa_review_plans_from_the_settings_alone(ada) -> None:
    draft = start(ada, "ssa_interactive", "chats", '{"models": ["bot-a", "bot-b"]}')
    page = review(ada, draft)
    design = ChatDesign(conversations_per_model=100, min_turns=7, max_turns=14, n_boot=BOOT)
    first = chat_plan(design, 0.05, studies=CHAT_STUDIES, seed=0)
    refined = chat_plan(design, first.detectable, studies=CHAT_STUDIES, seed=0)
    assert shown(page, "plan-detectable") == f"{refined.detectable:.2f}"
    assert "sensible bot turns" in page and "bootstraps over conversations" in page
    assert "2 model(s): bot-a, bot-b" in page


def test_an_emotionlines_review_shows_the_width_of_kappa(ada) -> None:
    draft = start(ada, "emotionlines", "emotions")
    for i in range(30):
        lines = [{"speaker": "A", "text": f"line {u}"} for u in range(5 + i % 6)]
        ItemFactory(campaign=draft, key=f"d{i}", payload={"utterances": lines})
    Campaign.objects.filter(pk=draft.pk).update(redundancy=5)
    page = review(ada, draft)
    design = KappaDesign(dialogues=30, min_utterances=5, max_utterances=10, n_boot=BOOT)
    direct = kappa_plan(design, studies=KAPPA_STUDIES, seed=0)
    assert shown(page, "plan-width") == f"±{direct.mean_width / 2:.2f}"
    assert "in Fleiss' kappa" in page and "bootstrap over dialogues" in page


def test_a_likert_draft_without_items_asks_for_them_first(ada) -> None:
    page = review(ada, start(ada, "likert", "ratings"))
    assert "Add items first" in shown(page, "plan-problem")
