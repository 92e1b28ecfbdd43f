"""Style-controlled Bradley–Terry against plain Bradley–Terry, a direct maximisation of the
same penalised likelihood (scipy), and a simulated length-biased crowd with known truth."""

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize
from scipy.special import expit

from evalstats.options import report_options_set
from evalstats.ranking import BT_COLUMNS, DisconnectedComparisons, bradley_terry
from evalstats.style import (
    STYLE_KEYS,
    ArenaDesign,
    arena_marginal,
    arena_simulate,
    bradley_terry_style,
    style_features,
)

MODELS = ["A", "B", "C", "D"]


def arena(rng, strengths, *, conversations, gamma=0.0, log_length=None, workers=20):
    """Simulate an arena: each conversation pits two random models over 1-4 turns, judged by
    one of ``workers``; a turn's ``chars`` are each side's cumulative reply lengths (replies
    log-normal around ``log_length`` per model), and the voter's logit adds ``gamma`` times
    the normalised length difference."""
    k = len(strengths)
    log_length = np.zeros(k) if log_length is None else np.asarray(log_length)
    rows = []
    for c in range(conversations):
        i, j = rng.choice(k, 2, replace=False)
        worker = f"w{rng.integers(workers)}"
        total = np.zeros(2)
        for _ in range(rng.integers(1, 5)):
            total += np.exp(rng.normal([log_length[i], log_length[j]], 0.6)) * 300
            x = (total[0] - total[1]) / total.sum()
            won = rng.random() < expit(strengths[i] - strengths[j] + gamma * x)
            lists = rng.integers(0, 4, 2)  # formatting unrelated to the models or the vote
            rows.append(
                (f"c{c}", worker, MODELS[i], MODELS[j], "a" if won else "b", *total, *lists)
            )
    columns = ["item", "rater", "a", "b", "outcome", "chars_a", "chars_b", "lists_a", "lists_b"]
    return pd.DataFrame(rows, columns=columns)


def test_style_features_count_characters_headers_list_items_and_bold():
    text = (
        "# Title\n## Part\n####### not a header\n#neither\n"
        "Some **bold**, __bold too__ and ** not bold\nacross lines**.\n"
        "- one\n  * two\n+ three\n12. four\n-not an item\n**a bold line, not an item**"
    )
    assert style_features(text) == {"chars": len(text), "headers": 2, "lists": 4, "bold": 3}
    assert style_features("") == dict.fromkeys(STYLE_KEYS, 0)
    assert list(style_features("plain")) == list(STYLE_KEYS)


@pytest.mark.parametrize("prior", [0.0, 0.5])
def test_without_features_the_fit_is_bradley_terrys(prior):
    data = arena(np.random.default_rng(1), [0.6, 0.2, 0.0, -0.5], conversations=150)
    data.loc[::7, "outcome"] = "both"
    data.loc[::11, "outcome"] = "neither"
    fit = bradley_terry_style(data, features=(), prior=prior)
    pd.testing.assert_frame_equal(fit.table, bradley_terry(data, prior=prior), rtol=1e-8)
    assert fit.coefficients.empty
    with report_options_set(method="independent"):
        plain = bradley_terry(data, prior=prior)
        pd.testing.assert_frame_equal(
            bradley_terry_style(data, features=(), prior=prior).table, plain, rtol=1e-8
        )


def test_with_no_style_effect_the_strengths_match_plain_bradley_terry():
    data = arena(np.random.default_rng(2), [0.6, 0.2, 0.0, -0.5], conversations=600)
    fit = bradley_terry_style(data, features=("chars", "lists"))
    plain = bradley_terry(data).set_index("model")
    styled = fit.table.set_index("model").loc[plain.index]
    assert np.abs(styled["strength"] - plain["strength"]).max() < 0.03
    assert list(fit.table.columns) == BT_COLUMNS
    coef = fit.coefficients.set_index("feature")
    assert (coef["coefficient"].abs() < 0.25).all(), coef  # standard errors about 0.055


def penalised_fit(data, features):
    """Maximise Firth's penalised log-likelihood of the style model directly: strengths
    s_1..s_{k-1} free, s_k = -their sum; covariates (f_a - f_b) / (f_a + f_b) over their
    root mean square."""
    decided = data[data["outcome"] != "neither"]
    k = len(MODELS)
    x = np.zeros((len(decided), k - 1 + len(features)))
    for column, side in (("a", 1.0), ("b", -1.0)):
        for m, model in enumerate(MODELS):
            on = (decided[column] == model).to_numpy()
            if m < k - 1:
                x[on, m] += side
            else:
                x[on, : k - 1] -= side
    for f, name in enumerate(features):
        fa, fb = decided[f"{name}_a"].to_numpy(), decided[f"{name}_b"].to_numpy()
        diff = np.where(fa + fb > 0, (fa - fb) / np.maximum(fa + fb, 1e-300), 0.0)
        x[:, k - 1 + f] = diff / np.sqrt(np.mean(diff**2))
    y = decided["outcome"].map({"a": 1.0, "b": 0.0, "both": 0.5}).to_numpy()

    def minus_penalised(beta):
        eta = x @ beta
        loglik = np.sum(y * eta - np.logaddexp(0.0, eta))
        p = expit(eta)
        info = x.T @ (x * (p * (1 - p))[:, None])
        return -(loglik + 0.5 * np.linalg.slogdet(info)[1])

    beta = minimize(minus_penalised, np.zeros(x.shape[1]), method="BFGS", options={"gtol": 1e-9}).x
    strengths = np.append(beta[: k - 1], -beta[: k - 1].sum())
    return pd.Series(strengths, index=MODELS), beta[k - 1 :]


def test_point_estimates_agree_with_a_direct_maximisation_of_the_penalised_likelihood():
    rng = np.random.default_rng(3)
    data = arena(
        rng, [0.8, 0.2, 0.0, -0.5], conversations=120, gamma=1.0, log_length=[0, 0.3, -0.2, 0.5]
    )
    data.loc[::9, "outcome"] = "both"
    data.loc[::13, "outcome"] = "neither"
    strengths, coefficients = penalised_fit(data, ["chars", "lists"])
    fit = bradley_terry_style(data, features=("chars", "lists"))
    mine = fit.table.set_index("model")["strength"].loc[MODELS]
    np.testing.assert_allclose(mine.to_numpy(), strengths.to_numpy(), atol=1e-4)
    np.testing.assert_allclose(fit.coefficients["coefficient"], coefficients, atol=1e-4)


def test_style_control_recovers_the_true_order_from_a_length_biased_crowd():
    # C is the weakest model but writes three times longer replies, and voters prefer length.
    strengths, gamma = np.array([0.6, 0.3, 0.0]), 2.0
    rng = np.random.default_rng(4)
    data = arena(
        rng, strengths, conversations=1200, gamma=gamma, log_length=[0.0, 0.0, np.log(3.0)]
    )
    plain = bradley_terry(data)
    assert plain["model"].iloc[0] == "C"  # the length bias puts the weakest model first
    fit = bradley_terry_style(data, features=("chars",))
    assert list(fit.table["model"]) == ["A", "B", "C"]
    table = fit.table.set_index("model")
    truth = strengths - strengths.mean()
    assert ((table["ci_low"] <= truth) & (truth <= table["ci_high"])).all(), table
    coef = fit.coefficients.set_index("feature").loc["chars"]
    true_coefficient = gamma * coef["scale"]  # per standard deviation of the difference
    assert coef["ci_low"] <= true_coefficient <= coef["ci_high"], (coef, true_coefficient)


def test_a_feature_that_never_differs_or_repeats_another_is_dropped_with_a_note():
    data = arena(np.random.default_rng(5), [0.3, 0.1, 0.0, -0.2], conversations=80)
    data["headers_a"] = data["headers_b"] = 2
    data["bold_a"], data["bold_b"] = data["chars_a"] / 100, data["chars_b"] / 100
    fit = bradley_terry_style(data, features=("chars", "headers", "bold"))
    assert list(fit.coefficients["feature"]) == ["chars"]
    assert "'headers' dropped: it never differs" in fit.notes[0]
    assert "'bold' dropped: collinear with the models and chars" in fit.notes[1]


def test_disconnected_comparisons_and_missing_style_columns_are_refused():
    rows = [("A", "B", "a"), ("A", "B", "b"), ("C", "D", "a"), ("C", "D", "b")]
    data = pd.DataFrame(rows, columns=["a", "b", "outcome"]).assign(item=range(4))
    data = data.assign(chars_a=[10, 20, 30, 40], chars_b=[20, 10, 40, 30])
    with pytest.raises(DisconnectedComparisons):
        bradley_terry_style(data, features=("chars",))
    with pytest.raises(ValueError, match="bold_a"):
        bradley_terry_style(data, features=("chars", "bold"))


def test_the_simulated_arenas_truth_is_the_generating_model_without_random_effects():
    design = ArenaDesign(strengths=(0.5, 0.0, -0.5), log_length=(0.0, 0.4, -0.4), gamma=1.0)
    strengths, coefficient = arena_marginal(design, conversations=20_000)
    np.testing.assert_allclose(strengths, [0.5, 0.0, -0.5], atol=1e-3)
    assert abs(coefficient - 1.0) < 1e-3
    shaken = ArenaDesign(**{**design.__dict__, "sd_conversation": 1.0, "sd_taste": 0.5})
    attenuated, smaller = arena_marginal(shaken, conversations=20_000)
    assert 0.5 < attenuated[0] / 0.5 < 0.95 and 0.5 < smaller < 0.95  # the marginal effects
    votes = arena_simulate(shaken, np.random.default_rng(6), conversations=50)
    assert votes.groupby("item")["rater"].nunique().eq(1).all()
    assert votes.groupby("item").size().between(1, 4).all()


def test_the_fit_does_not_depend_on_which_side_a_model_was_shown():
    data = arena(np.random.default_rng(7), [0.4, 0.1, 0.0, -0.3], conversations=200, gamma=1.0)
    flipped = data.copy()
    swap = np.arange(len(data)) % 2 == 0
    for left, right in (("a", "b"), ("chars_a", "chars_b"), ("lists_a", "lists_b")):
        flipped.loc[swap, [left, right]] = data.loc[swap, [right, left]].to_numpy()
    flipped.loc[swap, "outcome"] = data.loc[swap, "outcome"].map({"a": "b", "b": "a"})
    one = bradley_terry_style(data, features=("chars", "lists"))
    other = bradley_terry_style(flipped, features=("chars", "lists"))
    pd.testing.assert_frame_equal(one.table, other.table, rtol=1e-8)
    pd.testing.assert_frame_equal(one.coefficients, other.coefficients, rtol=1e-8)
