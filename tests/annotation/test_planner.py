"""Tests of evalstats.planner: the simulated power agrees with theory and with itself."""

from __future__ import annotations

import io
import random

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from django.core.management import CommandError, call_command, load_command_class
from scipy import stats
from scipy.special import expit
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa
from statsmodels.stats.proportion import proportion_confint

from annotation.protocols import registry
from annotation.simulation import crowd_make, crowd_run
from evalstats import planner, ranking, uncertainty
from evalstats.agreement import fleiss_kappa
from evalstats.planner import common as planner_common
from evalstats.planner import likert as planner_likert
from tests.factories import AssignmentFactory, CampaignFactory, ItemFactory, JudgmentFactory


def test_power_with_fresh_raters_matches_the_normal_approximation() -> None:
    design = planner.LikertDesign(items_per_model=60, ratings_per_item=1, pool=None)
    se = np.sqrt(2 * (0.6**2 + 0.5**2 + 0.8**2) / 60)
    plan = planner.likert_plan(design, 0.35, studies=200, seed=1)
    expected = stats.norm.cdf(0.35 / se - stats.norm.ppf(0.975))
    assert plan.power == pytest.approx(expected, abs=3 * plan.power_se + 0.02)
    assert plan.detectable == pytest.approx(
        (stats.norm.ppf(0.975) + stats.norm.ppf(0.8)) * se, rel=0.1
    )


def test_the_detectable_difference_is_found_with_the_target_power() -> None:
    design = planner.LikertDesign(items_per_model=40, ratings_per_item=3, pool=8, sd_rater=0.8)
    first = planner.likert_plan(design, 0.0, studies=100, seed=2)
    assert first.power < 0.06  # no difference: found about alpha / 2 of the time
    check = planner.likert_plan(design, first.detectable, studies=200, seed=3)
    assert check.power == pytest.approx(0.8, abs=0.08)


def test_holm_comparisons_raise_the_detectable_difference() -> None:
    one = planner.likert_plan(planner.LikertDesign(), 0.3, studies=40, seed=4)
    five = planner.likert_plan(planner.LikertDesign(comparisons=5), 0.3, studies=40, seed=4)
    assert five.detectable > one.detectable and five.power <= one.power


def test_components_from_a_pilot_recover_the_simulated_ones() -> None:
    design = planner.LikertDesign(
        items_per_model=300, ratings_per_item=3, pool=30, sd_rater=0.7, sd_taste=0.5
    )
    pilot = planner_likert._study(np.random.default_rng(5), design, 0.2)
    found = planner.likert_components(pilot)
    assert found["sd_item"] == pytest.approx(0.6, abs=0.1)
    assert found["sd_rater"] == pytest.approx(0.7, abs=0.25)
    assert found["sd_noise"] == pytest.approx(0.8, abs=0.1)
    assert found["sd_taste"] == pytest.approx(0.5, abs=0.2)


def test_the_likert_plan_analyses_a_study_exactly_as_the_report_does() -> None:
    design = planner.LikertDesign(items_per_model=40, ratings_per_item=3, pool=10, sd_taste=0.6)
    study = planner_likert._study(np.random.default_rng(6), design, 0.3)
    mine = planner_likert._contrast(study)
    table = uncertainty.mean_comparisons(study.assign(aspect="overall"), reference="reference")
    report = table.set_index("model").loc["model"]
    assert (mine.value, mine.low, mine.high, mine.p) == pytest.approx(
        (report["diff"], report["diff_low"], report["diff_high"], report["p"])
    )


def test_with_taste_the_detectable_difference_is_found_with_the_target_power() -> None:
    """Raters whose taste differs per model: the report's interval widens for it (issue
    #33), and the plan, which analyses its studies as the report does, promises what a
    simulation of the planned study achieves."""
    design = planner.LikertDesign(items_per_model=40, ratings_per_item=3, pool=10, sd_taste=0.6)
    first = planner.likert_plan(design, 0.3, studies=100, seed=7)
    check = planner.likert_plan(design, first.detectable, studies=200, seed=8)
    assert check.power == pytest.approx(0.8, abs=0.08)


def test_a_design_with_too_small_a_pool_is_refused() -> None:
    with pytest.raises(ValueError, match="pool"):
        planner.LikertDesign(ratings_per_item=3, pool=2)


@pytest.mark.django_db
def test_plan_command_prints_power_and_the_detectable_difference() -> None:
    out = io.StringIO()
    call_command(
        "plan",
        "likert",
        "--items",
        "30",
        "--ratings",
        "3",
        "--pool",
        "6",
        "--studies",
        "20",
        stdout=out,
    )
    text = out.getvalue()
    assert "power to find a difference of 0.3:" in text and "with 80% power:" in text


@pytest.mark.django_db
def test_plan_command_refuses_an_impossible_design() -> None:
    with pytest.raises(CommandError, match="pool"):
        call_command("plan", "likert", "--ratings", "3", "--pool", "2", stdout=io.StringIO())


def test_plan_command_estimates_the_components_from_a_pilot(campaign) -> None:
    crowd_run(campaign=campaign, workers=crowd_make(good=3, noisy=0, spammer=0))
    out = io.StringIO()
    call_command("plan", "likert", "--pilot", campaign.slug, "--studies", "10", stdout=out)
    assert "From the pilot: sd_item" in out.getvalue()


def test_ssa_power_at_the_refined_detectable_difference_is_the_target() -> None:
    design = planner.SSADesign(responses_per_model=100, pool=15)
    null = planner.ssa_plan(design, 0.0, studies=80, seed=6)
    assert null.power < 0.08
    refined = planner.ssa_plan(design, null.detectable, studies=60, seed=7)
    check = planner.ssa_plan(design, refined.detectable, studies=200, seed=8)
    assert check.power == pytest.approx(0.8, abs=0.08)


@pytest.mark.django_db
def test_plan_command_plans_static_ssa() -> None:
    out = io.StringIO()
    call_command("plan", "ssa", "--items", "60", "--pool", "10", "--studies", "20", stdout=out)
    text = out.getvalue()
    assert "60 responses per model, 5 worker(s) each from a pool of 10 raters" in text
    assert "power to find a difference of 0.05:" in text


# --- A/B, Bradley–Terry, interactive SSA, kappa ----------------------------------------------


def _within(plan: planner.Plan, expected: float, expected_se: float, slack: float) -> None:
    """Assert the plan's power is the brute force's within Monte-Carlo error (3 se) + slack."""
    se = np.hypot(plan.power_se, expected_se)
    assert plan.power == pytest.approx(expected, abs=3 * se + slack)


def test_the_ab_plan_analyses_a_study_exactly_as_the_report_does() -> None:
    outcomes = planner.ab_outcomes(np.random.default_rng(9), planner.ABDesign(), 0.6)
    mine = planner.ab_win_rate(outcomes)
    report = ranking.win_rates(outcomes).iloc[0]
    assert (mine.value, mine.low, mine.high) == pytest.approx(
        (report["win_rate"], report["ci_low"], report["ci_high"])
    )


def test_ab_power_with_independent_judgments_is_the_exact_wilson_power() -> None:
    # Fresh workers, no spreads: decisive judgments are Bernoulli(0.6); the exact power sums
    # over the binomial numbers of decisive judgments and of wins (statsmodels' Wilson).
    design = planner.ABDesign(
        items=120, judgments_per_item=1, pool=None, sd_item=0, sd_rater=0, sd_position=0
    )
    plan = planner.ab_plan(design, 0.1, studies=300, seed=10)
    exact = 0.0
    for n in range(2, 121):
        x = np.arange(n + 1)
        low, _ = proportion_confint(x, n, alpha=0.05, method="wilson")
        hit = stats.binom.pmf(x, n, 0.6) @ (low > 0.5)
        exact += stats.binom.pmf(n, 120, 0.8) * hit
    _within(plan, exact, 0.0, 0.03)


def test_ab_power_with_clustered_judgments_matches_a_brute_force_t_test() -> None:
    # Three fresh workers per context, contexts spread on the logit: plain loops, and the
    # one-sample t test of the contexts' mean wins (the crossed interval's reduction here).
    design = planner.ABDesign(items=80, judgments_per_item=3, pool=None, both=0, neither=0)
    plan = planner.ab_plan(design, 0.08, studies=200, seed=11)
    spread = float(np.sqrt(1.0**2 + 0.3**2 + 0.5**2))
    mu = planner_common._mean_logit(0.58, spread)
    rand = random.Random(12)
    found = 0
    for _ in range(200):
        means = []
        for _ in range(80):
            item = rand.gauss(0, 1.0)
            wins = [
                rand.random() < expit(mu + item + rand.gauss(0, 0.3) + rand.gauss(0, 0.5))
                for _ in range(3)
            ]
            means.append(sum(wins) / 3)
        test = stats.ttest_1samp(means, 0.5)
        found += test.pvalue < 0.05 and np.mean(means) > 0.5
    _within(plan, found / 200, np.sqrt(0.25 / 200), 0.04)


def test_bt_difference_is_the_report_strengths_difference() -> None:
    design = planner.BTDesign()
    item, ia, ib, score = planner.bt_votes(np.random.default_rng(14), design, 0.5)
    names = np.array(list("ABCD"))
    outcome = np.where(score == 1, "a", np.where(score == 0, "b", "both"))
    data = pd.DataFrame({"item": item, "a": names[ia], "b": names[ib], "outcome": outcome})
    table = ranking.bradley_terry(data).set_index("model")
    est = planner.bt_difference((item, ia, ib, score), design)
    assert est.value == pytest.approx(table.loc["A", "strength"] - table.loc["B", "strength"])
    # One judgment per item: the same Wald interval as the report's, for the difference.
    assert est.high - est.low > table.loc["A", "ci_high"] - table.loc["A", "ci_low"]


def test_bt_power_matches_a_logistic_regression_wald_test() -> None:
    # No ties, no prior: at 40 judgments per pair Firth's fit is close to the maximum-
    # likelihood one, which statsmodels' Logit refits in plain loops on its own studies.
    design = planner.BTDesign(models=3, items_per_pair=40, both=0, neither=0, prior=0)
    plan = planner.bt_plan(design, 0.5, studies=200, seed=15)
    rand = random.Random(16)
    found = 0
    for _ in range(200):
        rows, ys = [], []
        for i, j in ((0, 1), (0, 2), (1, 2)):
            x = [0.0, 0.0]  # model 1 is the reference: its column is dropped
            for m, sign in ((i, 1.0), (j, -1.0)):
                if m != 1:
                    x[0 if m == 0 else 1] = sign
            for _ in range(40):
                rows.append(x)
                ys.append(float(rand.random() < expit(0.5 * ((i == 0) - (j == 0)))))
        fit = sm.Logit(np.array(ys), np.array(rows)).fit(disp=0)
        found += fit.params[0] / fit.bse[0] > stats.norm.ppf(0.975)
    _within(plan, found / 200, np.sqrt(0.25 / 200), 0.03)


@pytest.mark.parametrize("comparisons", [1, 3])
def test_chat_power_matches_a_brute_force_ratio_z_test(comparisons) -> None:
    # Plain loops; each model's share of sensible turns is a ratio of sums over chats,
    # its variance the linearised (delta-method) one over conversations; Holm's first step
    # over the report's pairs of models (issue #33: the planner counted one).
    design = planner.ChatDesign(conversations_per_model=60, comparisons=comparisons)
    plan = planner.chat_plan(design, 0.08, studies=150, seed=17)
    spread = float(np.sqrt(0.5**2 + 0.5**2 + 1.0**2))
    rand = random.Random(18)
    found = 0
    for _ in range(150):
        shares, variances = [], []
        for share in (0.78, 0.7):
            mu = planner_common._mean_logit(share, spread)
            ys, ns = [], []
            for _ in range(60):
                chat = rand.gauss(0, 0.5) + rand.gauss(0, 0.5)
                n = rand.randint(7, 14)
                ys.append(
                    sum(rand.random() < expit(mu + chat + rand.gauss(0, 1)) for _ in range(n))
                )
                ns.append(n)
            y, n = np.array(ys, float), np.array(ns, float)
            r = y.sum() / n.sum()
            shares.append(r)
            variances.append(np.sum((y - r * n) ** 2) / (60 * 59) / n.mean() ** 2)
        z = (shares[0] - shares[1]) / np.sqrt(sum(variances))
        found += z > stats.norm.ppf(1 - 0.025 / comparisons)
    _within(plan, found / 150, np.sqrt(0.25 / 150), 0.04)


def test_an_interactive_ssa_design_counts_every_pair_of_models_for_holm() -> None:
    from annotation.protocols.ssa_interactive.planner import chat_design

    three = chat_design({}, redundancy=1, sizes={"a": 0, "b": 0, "c": 0}, n_boot=200)
    two = chat_design({}, redundancy=1, sizes={"a": 0, "b": 0}, n_boot=200)
    assert (three.comparisons, two.comparisons) == (3, 1)


def test_the_kappa_generator_gives_the_assumed_kappa() -> None:
    for kappa in (0.34, 0.7):
        design = planner.KappaDesign(dialogues=4000, kappa=kappa)
        table, _ = planner.kappa_votes(np.random.default_rng(19), design)
        assert fleiss_kappa(table) == pytest.approx(kappa, abs=0.015)


def test_kappa_width_matches_a_brute_force_dialogue_bootstrap() -> None:
    # Plain loops over dialogues, statsmodels' Fleiss kappa on every resample.
    design = planner.KappaDesign(dialogues=60, n_boot=200)
    plan = planner.kappa_plan(design, studies=30, seed=20)
    rng = np.random.default_rng(21)
    widths = []
    for _ in range(30):
        table, dialogue = planner.kappa_votes(rng, design)
        rows = [table[dialogue == d] for d in range(60)]
        boot = []
        for _ in range(200):
            drawn = np.concatenate([rows[d] for d in rng.integers(0, 60, 60)])
            boot.append(sm_fleiss_kappa(drawn))
        low, high = np.percentile(boot, [2.5, 97.5])
        widths.append(high - low)
    se = np.hypot(plan.width_se, np.std(widths, ddof=1) / np.sqrt(30))
    assert plan.mean_width == pytest.approx(np.mean(widths), abs=3 * se + 0.005)
    assert plan.dialogues_for(plan.mean_width / 2, 60) == 240


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: planner.ABDesign(judgments_per_item=3, pool=2), "pool"),
        (lambda: planner.ABDesign(both=0.5, neither=0.5), "tie shares"),
        (lambda: planner.ABDesign(items=1), "at least 2 items"),
        (lambda: planner.BTDesign(models=1), "at least 2 models"),
        (lambda: planner.BTDesign(prior=-1), "prior"),
        (lambda: planner.ChatDesign(min_turns=9, max_turns=7), "min_turns"),
        (lambda: planner.ChatDesign(sensible=1.0), "sensible"),
        (lambda: planner.KappaDesign(kappa=0), "kappa"),
        (lambda: planner.KappaDesign(raters=1), "2 raters"),
        (lambda: planner.KappaDesign(shares=(1.0, 0.0)), "share"),
    ],
)
def test_an_impossible_design_is_refused_with_its_reason(make, message) -> None:
    with pytest.raises(ValueError, match=message):
        make()


def test_an_impossible_difference_is_refused() -> None:
    with pytest.raises(ValueError, match="advantage"):
        planner.ab_plan(planner.ABDesign(), 0.5)
    with pytest.raises(ValueError, match="between 0 and 1"):
        planner.chat_plan(planner.ChatDesign(sensible=0.9), 0.2)
    with pytest.raises(ValueError, match="the difference"):
        planner.bt_plan(planner.BTDesign(), -0.5, studies=1)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        (["ab", "--items", "40"], "win rate advantage over 50% found with 80% power:"),
        (["pairwise", "--fresh", "--both", "0"], "from fresh raters"),
        (["bt", "--models", "3"], "log-strength difference found with 80%"),
        (["bt", "--prior", "0.5"], "4 models"),
        (["ssa_interactive", "--conversations", "30", "--turns", "7", "9"], "7-9 labelled"),
        (["kappa", "--dialogues", "30", "--width", "0.1"], "dialogues for an expected width"),
        (["emotionlines", "--kappa", "0.5"], "kappa 0.5:"),
    ],
)
def test_plan_command_plans_every_protocol(arguments, expected) -> None:
    out = io.StringIO()
    call_command("plan", *arguments, "--studies", "5", stdout=out)
    assert expected in out.getvalue()


def test_plan_command_help_names_every_protocol_and_option() -> None:
    parser = load_command_class("annotation", "plan").create_parser("manage.py", "plan")
    text = parser.format_help()
    for word in ("ssa_interactive", "kappa", "--dialogues", "--turns", "--prior", "--both"):
        assert word in text


@pytest.mark.django_db
def test_plan_command_refuses_options_of_another_protocol() -> None:
    with pytest.raises(CommandError, match="bt takes"):
        call_command("plan", "bt", "--comparisons", "3", stdout=io.StringIO())
    with pytest.raises(CommandError, match="kappa"):
        call_command("plan", "kappa", "--kappa", "1.2", stdout=io.StringIO())


@pytest.mark.django_db
def test_plan_command_reads_the_tie_shares_of_an_ab_pilot() -> None:
    pilot = CampaignFactory(
        protocol="pairwise", parameters=registry.get("pairwise").default_parameters()
    )
    choices = ["first", "second", "both", "neither", "first"]  # 1/5 both, 1/5 neither
    items = [
        ItemFactory(
            campaign=pilot,
            payload={
                "context": ["Hi"],
                "model_a": "x",
                "response_a": f"a{n}",
                "model_b": "y",
                "response_b": f"b{n}",
                "example": f"e{n}",
            },
        )
        for n in range(10)
    ]
    for r in range(2):
        assignment = AssignmentFactory(campaign=pilot)
        for n, item in enumerate(items):
            JudgmentFactory(
                assignment=assignment,
                item=item,
                question="choice",
                value=choices[(n + r) % 5],
                presentation={"order": ["a", "b"]},
            )
    out = io.StringIO()
    call_command("plan", "ab", "--pilot", pilot.slug, "--studies", "5", stdout=out)
    assert "From the pilot: both 0.20, neither 0.20" in out.getvalue()


@pytest.mark.django_db
def test_plan_command_reads_kappa_and_label_shares_from_an_emotionlines_pilot() -> None:
    protocol = registry.get("emotionlines")
    pilot = CampaignFactory(protocol="emotionlines", parameters=protocol.default_parameters())
    labels = pilot.parameters["labels"]
    rand = random.Random(22)
    lines = [{"speaker": "A", "text": f"line {i}"} for i in range(4)]
    items = [
        ItemFactory(campaign=pilot, payload=protocol.clean_item({"utterances": lines}))
        for _ in range(12)
    ]
    for _ in range(5):
        assignment = AssignmentFactory(campaign=pilot)
        for item in items:
            for u in range(4):
                truth = labels[(item.pk + u) % 3]
                value = truth if rand.random() < 0.7 else rand.choice(labels)
                JudgmentFactory(assignment=assignment, item=item, question=f"u{u}", value=value)
    out = io.StringIO()
    call_command("plan", "kappa", "--pilot", pilot.slug, "--studies", "5", stdout=out)
    text = out.getvalue()
    assert "From the pilot: kappa" in text and "5 raters" in text
    with pytest.raises(CommandError, match="is a emotionlines campaign"):
        call_command("plan", "ab", "--pilot", pilot.slug, stdout=io.StringIO())
