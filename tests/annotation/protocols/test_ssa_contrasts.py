"""Contrast rows of the SSA and interactive-SSA reports (issue #33): every pair of models."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit
from statsmodels.stats.multitest import multipletests

from annotation.protocols import registry
from annotation.protocols.ssa import ssa_labels
from annotation.protocols.ssa.contrasts import COLUMNS, ssa_contrasts
from annotation.protocols.ssa.planner import ssa_design
from evalstats import cluster_bootstrap, uncertainty
from evalstats.contrasts import A_HIGHER, B_HIGHER
from evalstats.options import report_options_set
from evalstats.planner.chats import chat_difference


def static_study(
    rng: np.random.Generator, shifts: dict[str, float], *, items: int = 40, pool: int = 12
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Items and judgments of a static SSA study: 5 workers of a pool per response, each with
    a leniency; ``shifts`` moves each model's sensible and specific logits."""
    lenient = rng.normal(0.0, 0.8, (2, pool))
    rows, item_rows = [], []
    for model, shift in shifts.items():
        for i in range(items):
            item = f"{model}{i}"
            item_rows.append({"item": item, "payload": {"model": model}})
            theta, phi = rng.normal(0.8 + shift, 1.2), rng.normal(shift, 1.2)
            for rater in rng.choice(pool, 5, replace=False):
                sens = rng.random() < expit(theta + lenient[0, rater])
                spec = sens and rng.random() < expit(phi + lenient[1, rater])
                for question, yes in (("sensible", sens), ("specific", spec)):
                    rows.append(
                        {
                            "item": item,
                            "rater": f"w{rater}",
                            "question": question,
                            "value": "yes" if yes else "no",
                        }
                    )
    return pd.DataFrame(item_rows), pd.DataFrame(rows)


def chat_study(
    rng: np.random.Generator,
    shifts: dict[str, float],
    *,
    workers: int = 10,
    chats_each: int = 3,
    sd_worker: float = 1.0,
    shared: bool = True,
) -> pd.DataFrame:
    """Labels of interactive SSA turns: each worker of a pool chats ``chats_each`` times with
    every model (``shared``) or only with its own; a turn is sensible with
    expit(0.8 + shift + worker + chat + turn)."""
    rows = []
    habit = rng.normal(0.0, sd_worker, workers)
    for model, shift in shifts.items():
        if not shared:
            habit = rng.normal(0.0, sd_worker, workers)
        for w in range(workers):
            for c in range(chats_each):
                chat = f"{model}-w{w}-c{c}"
                level = 0.8 + shift + habit[w] + rng.normal(0.0, 0.5)
                for t in range(int(rng.integers(5, 11))):
                    sens = bool(rng.random() < expit(level + rng.normal(0.0, 1.0)))
                    rows.append(
                        {
                            "item": f"{chat}-t{t}",
                            "model": model,
                            "sensible": sens,
                            "specific": sens and bool(rng.random() < 0.6),
                            "chat": chat,
                            "worker": f"w{w}" if shared else f"{model}-w{w}",
                        }
                    )
    return pd.DataFrame(rows)


def chat_contrasts(labels: pd.DataFrame, **kwargs: object) -> pd.DataFrame:
    by_item = labels.set_index("item")
    return ssa_contrasts(labels, conversations=by_item["chat"], workers=by_item["worker"], **kwargs)


def test_static_contrast_is_the_crossed_contrast_of_the_two_models_majority_labels() -> None:
    items, judgments = static_study(np.random.default_rng(1), {"a": 0.0, "b": -0.8})
    labels = ssa_labels(items, judgments)
    table = ssa_contrasts(labels, judgments=judgments).set_index("metric")
    # The crossed contrast built here from the votes, as bench/coverage.py builds the design.
    votes = judgments.pivot_table(
        index=["item", "rater"], columns="question", values="value", aggfunc="first"
    ).reset_index()
    for q in ("sensible", "specific"):
        votes[q] = (votes[q] == "yes").astype(float)
    votes["ws"] = uncertainty.pivotal_weights(votes, "sensible")
    votes["wp"] = uncertainty.pivotal_weights(votes, "specific")
    effects = uncertainty.rater_effects(votes, ["sensible", "specific"], weights=["ws", "wp"])
    slopes = votes.assign(s=uncertainty.majority_slopes(votes, "sensible"), p=0.0)
    sens = labels.set_index("item")["sensible"].astype(float)
    diff = uncertainty.crossed_contrast(
        sens[sens.index.str.startswith("a")],
        sens[sens.index.str.startswith("b")],
        slopes,
        effects,
        columns=["s", "p"],
    )
    row = table.loc["sensibleness"]
    assert (row["model_a"], row["model_b"]) == ("a", "b")
    assert row[["difference", "low", "high", "se"]].tolist() == pytest.approx(
        [100 * diff.value, 100 * diff.low, 100 * diff.high, 100 * diff.se]
    )
    assert row["p"] == pytest.approx(diff.p)
    assert row["ci_method"] == uncertainty.CROSSED
    assert list(table.reset_index().columns) == COLUMNS


def test_static_report_has_every_pair_per_metric_matching_its_scores() -> None:
    items, judgments = static_study(np.random.default_rng(2), {"a": 0.0, "b": 0.3, "c": -1.5})
    report = registry.get("ssa").report({"n_boot": 200}, items, judgments)
    table, scores = report.tables["ssa_contrasts"], report.tables["scores"].set_index("model")
    assert len(table) == 9  # 3 pairs x 3 metrics
    assert set(zip(table["model_a"], table["model_b"], strict=True)) == {
        ("a", "b"),
        ("a", "c"),
        ("b", "c"),
    }
    for _, row in table[table["metric"] != "ssa"].iterrows():
        gap = scores.loc[row["model_a"], row["metric"]] - scores.loc[row["model_b"], row["metric"]]
        assert row["difference"] == pytest.approx(gap)  # no ties with 5 workers
    assert any("ssa_contrasts" in note for note in report.notes)


def test_interactive_contrast_is_the_planners_chat_difference() -> None:
    """Fresh workers: conversations nested in models, each model drawn apart exactly as
    ``planner.chat_difference`` does, so the report prints the test the planner simulates."""
    labels = chat_study(np.random.default_rng(3), {"a": 0.0, "b": -0.4}, workers=40, chats_each=1)
    chats = labels.set_index("item")["chat"]
    table = ssa_contrasts(labels, conversations=chats, n_boot=300, seed=11).set_index("metric")
    parts = [labels[labels["model"] == m] for m in ("a", "b")]
    model, reference = (
        (p["sensible"].astype(float).to_numpy(), pd.factorize(p["chat"])[0]) for p in parts
    )
    diff = chat_difference(model, reference, n_boot=300, seed=11)
    row = table.loc["sensibleness"]
    assert row[["difference", "low", "high"]].tolist() == pytest.approx(
        [100 * diff.value, 100 * diff.low, 100 * diff.high]
    )
    assert row["ci_method"].startswith(cluster_bootstrap.CLUSTER)
    assert "drawn apart" in row["ci_method"]


def test_workers_who_chat_with_every_model_are_drawn_once_for_all() -> None:
    labels = chat_study(np.random.default_rng(4), {"a": 0.0, "b": 0.0}, sd_worker=1.5)
    joint = chat_contrasts(labels, n_boot=400).set_index("metric").loc["sensibleness"]
    assert joint["ci_method"].startswith(cluster_bootstrap.WORKERS)
    assert "one draw for all models" in joint["ci_method"]
    # Drawing each model's workers apart leaves their shared habits in the difference.
    apart = cluster_bootstrap.cluster_bootstrap_groups(
        labels[["sensible"]].astype(float).to_numpy(),
        labels["model"] + labels["worker"],
        labels["model"].to_numpy(),
        n_boot=400,
    ).draws
    assert joint["se"] < 0.7 * 100 * np.std(apart["a"][:, 0] - apart["b"][:, 0])


def test_holm_adjusts_the_pairs_of_each_metric_and_names_the_higher_model() -> None:
    items, judgments = static_study(np.random.default_rng(5), {"a": 0.0, "b": 0.2, "c": -2.0})
    table = ssa_contrasts(ssa_labels(items, judgments), judgments=judgments)
    for _, part in table.groupby("metric"):
        expected = multipletests(part["p"], method="holm")[1]
        assert part["p_holm"].to_numpy() == pytest.approx(expected)
        assert (part["p_holm"] >= part["p"]).all()
    found = table[table["p_holm"] < 0.05]
    assert len(found) >= 2  # c is far below a and b
    assert (found.loc[found["difference"] > 0, "verdict"] == A_HIGHER).all()
    assert (found.loc[found["difference"] < 0, "verdict"] == B_HIGHER).all()
    assert not table.loc[table["p_holm"] >= 0.05, "verdict"].isin([A_HIGHER, B_HIGHER]).any()


def test_independent_method_and_one_model_give_what_they_say() -> None:
    items, judgments = static_study(np.random.default_rng(6), {"a": 0.0, "b": 0.0}, items=10)
    labels = ssa_labels(items, judgments)
    with report_options_set(method="independent"):
        table = ssa_contrasts(labels, judgments=judgments, n_boot=100)
    assert table["ci_method"].str.endswith("(independent: comparison only)").all()
    one = ssa_contrasts(labels[labels["model"] == "a"], judgments=judgments)
    assert one.empty and list(one.columns) == COLUMNS


def test_the_planner_counts_every_pair_the_report_tests() -> None:
    design = ssa_design({}, redundancy=5, sizes={"a": 50, "b": 60, "c": 70, "d": 80}, n_boot=0)
    assert design.comparisons == 6 and design.responses_per_model == 50


def test_bootstrap_p_value_agrees_with_the_interval_and_is_never_zero() -> None:
    rng = np.random.default_rng(7)
    for centre in (0.0, 0.5, 1.0, 1.96, 2.2, 3.0, 6.0):
        draws = rng.normal(centre, 1.0, 999)
        est = cluster_bootstrap.bootstrap_contrast(centre, draws)
        assert 0 < est.p <= 1
        if est.p < 0.045:
            assert est.low > 0
        if est.p > 0.055:
            assert est.low < 0


def _static_found(rng: np.random.Generator, shift: float) -> bool:
    items, judgments = static_study(rng, {"a": 0.0, "b": shift}, items=40, pool=20)
    row = ssa_contrasts(ssa_labels(items, judgments), judgments=judgments).iloc[0]
    return bool(row["p_holm"] < 0.05)


def _chats_found(rng: np.random.Generator, shift: float) -> bool:
    labels = chat_study(rng, {"a": 0.0, "b": shift}, workers=10, chats_each=3)
    row = chat_contrasts(labels, n_boot=200, seed=int(rng.integers(1 << 31))).iloc[0]
    return bool(row["p_holm"] < 0.05)


@pytest.mark.slow  # about 12 s of CPU: under the shared machine's load, longer on the clock
def test_static_contrast_rejects_no_difference_about_five_percent_and_finds_a_large_one() -> None:
    """Known truth: models equal (a pool of 20 workers with leniency), then b 2 logits lower."""
    rng = np.random.default_rng(8)
    null = sum(_static_found(rng, 0.0) for _ in range(50))
    # A 5% test rejects 2.5 of 50 on average; 7 or more has chance < 4%.
    assert null <= 6
    assert sum(_static_found(rng, -2.0) for _ in range(8)) >= 7


def test_interactive_contrast_rejects_no_difference_about_five_percent_and_finds_a_large_one() -> (
    None
):
    """Known truth: 10 workers with strong habits (sd 1) chat 3 times with each model."""
    rng = np.random.default_rng(9)
    null = sum(_chats_found(rng, 0.0) for _ in range(120))
    # A 5% test rejects 6 of 120 on average; 13 or more has chance < 1.5%.
    assert null <= 12
    assert sum(_chats_found(rng, -2.0) for _ in range(10)) >= 9
