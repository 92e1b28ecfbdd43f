"""The two-way (items x raters) intervals of agreement statistics and rates (issue #33)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from annotation.protocols.ssa import ssa_scores
from evalstats import agreement, cluster_bootstrap
from evalstats.agreement import twoway
from evalstats.emotion_labels import kappa_by_source
from evalstats.options import report_options_set


def _pool_ratings(
    rng: np.random.Generator, n_items: int = 120, pool: int | None = 10, sd: float = 0.8
) -> pd.DataFrame:
    """Ratings 1-5 by 3 workers per item from a pool (None: a fresh worker each time)."""
    if pool is None:
        raters = np.arange(n_items * 3).reshape(n_items, 3)
        leniency = rng.normal(0.0, sd, n_items * 3)
    else:
        raters = np.argsort(rng.random((n_items, pool)), axis=1)[:, :3]
        leniency = rng.normal(0.0, sd, pool)
    latent = (
        rng.normal(0, 1, n_items)[:, None] + leniency[raters] + rng.normal(0, 0.7, (n_items, 3))
    )
    value = np.clip(np.round(3 + latent), 1, 5)
    return pd.DataFrame(
        {"item": np.repeat(np.arange(n_items), 3), "rater": raters.ravel(), "value": value.ravel()}
    )


@pytest.mark.parametrize("level", agreement.LEVELS)
def test_the_weighted_alpha_with_every_weight_one_is_krippendorffs_alpha(level: str) -> None:
    data = _pool_ratings(np.random.default_rng(1))
    cells = twoway.cells_code(data, level)
    stat = twoway.alpha_statistic(level, cells.values)
    assert twoway.full_weights(cells, stat) == pytest.approx(
        agreement.krippendorff_alpha(data, level), abs=1e-12
    )


def test_the_weighted_kappa_and_agreement_with_every_weight_one_are_the_usual_ones() -> None:
    data = _pool_ratings(np.random.default_rng(2))
    cells = twoway.cells_code(data)
    table = pd.crosstab(data["item"], data["value"]).to_numpy()
    assert twoway.full_weights(cells, twoway.fleiss_statistic) == pytest.approx(
        agreement.fleiss_kappa(table), abs=1e-12
    )
    assert twoway.full_weights(cells, twoway.percent_statistic) == pytest.approx(
        agreement.percent_agreement(data), abs=1e-12
    )


def _expanded_pairs(data: pd.DataFrame, c: np.ndarray, w: np.ndarray) -> list[list[tuple]]:
    """Per copy of a unit, its ordered pairs of values from copies of two different raters:
    the resample built by hand (a rater drawn twice rates each of its units twice)."""
    units = []
    for item, part in data.groupby("item"):
        judged = zip(part["rater"], part["value"], strict=True)
        copies = [(r, v) for r, v in judged for _ in range(w[r])]
        pairs = [(a[1], b[1]) for a, b in itertools.permutations(copies, 2) if a[0] != b[0]]
        units += [(len(copies), pairs)] * int(c[item])
    return units


def test_a_resample_counts_pairs_of_distinct_raters_only_as_a_brute_force_build_does() -> None:
    rng = np.random.default_rng(3)
    data = _pool_ratings(rng, n_items=15, pool=5)
    cells = twoway.cells_code(data, "nominal")
    c = rng.multinomial(15, np.full(15, 1 / 15))
    w = rng.multinomial(5, np.full(5, 1 / 5))
    a, self_w = twoway._counts(cells, w[:, None].astype(float))
    fast_pct = twoway.percent_statistic(a, self_w, c[:, None].astype(float))[0]
    fast_alpha = twoway.alpha_statistic("nominal", cells.values)(a, self_w, c[:, None] * 1.0)[0]
    units = [(m, p) for m, p in _expanded_pairs(data, c, w) if p]
    shares = [np.mean([x == y for x, y in p]) for _, p in units]
    assert fast_pct == pytest.approx(np.mean(shares), abs=1e-12)
    # Alpha: each unit's m values spread over its pairs; o_ck from those weights.
    o: dict[tuple, float] = {}
    for m, pairs in units:
        for pair in pairs:
            o[pair] = o.get(pair, 0.0) + m / len(pairs)
    n_c = pd.Series(o).groupby(level=0).sum()
    n = n_c.sum()
    observed = sum(v for (x, y), v in o.items() if x != y)
    expected = (n * n - (n_c * n_c).sum()) / (n - 1)
    assert fast_alpha == pytest.approx(1 - observed / expected, abs=1e-12)


def test_the_two_way_interval_is_wider_than_the_one_way_with_a_pool_of_raters() -> None:
    data = _pool_ratings(np.random.default_rng(4))
    for level in ("nominal", "ordinal", "interval"):
        two = agreement.krippendorff_alpha_ci(data, level, n_boot=400, interval="two-way")
        one = agreement.krippendorff_alpha_ci(data, level, n_boot=400, interval="units")
        assert two.value == one.value
        assert two.high - two.low > 1.2 * (one.high - one.low)
    two = agreement.percent_agreement_ci(data, n_boot=400, interval="two-way")
    one = agreement.percent_agreement_ci(data, n_boot=400, interval="units")
    assert two.high - two.low > 1.2 * (one.high - one.low)


def test_the_default_interval_is_two_way_when_raters_repeat_and_one_way_when_fresh() -> None:
    rng = np.random.default_rng(5)
    pooled, fresh = _pool_ratings(rng), _pool_ratings(rng, pool=None)
    assert agreement.interval_method(pooled) == twoway.TWO_WAY
    assert agreement.interval_method(fresh) == twoway.UNITS
    # With fresh raters the default is exactly the bootstrap over items.
    assert agreement.krippendorff_alpha_ci(fresh, seed=2) == agreement.krippendorff_alpha_ci(
        fresh, seed=2, interval="units"
    )
    assert agreement.krippendorff_alpha_ci(pooled, seed=2) == agreement.krippendorff_alpha_ci(
        pooled, seed=2, interval="two-way"
    )


def test_the_report_options_name_the_one_way_interval_as_the_alternative() -> None:
    data = _pool_ratings(np.random.default_rng(6))
    with report_options_set(interval="units"):
        assert agreement.interval_method(data) == twoway.UNITS
        units = agreement.krippendorff_alpha_ci(data, seed=1)
    assert units == agreement.krippendorff_alpha_ci(data, seed=1, interval="units")
    assert units != agreement.krippendorff_alpha_ci(data, seed=1)
    with pytest.raises(ValueError, match="interval"), report_options_set(interval="rows"):
        pass


def test_resamples_with_an_undefined_statistic_are_left_out_with_a_warning() -> None:
    # Two raters, one label except on one item: many resamples have a single category.
    data = pd.DataFrame(
        {"item": [0, 0, 1, 1, 2, 2, 3, 3], "rater": [0, 1] * 4, "value": [1, 1, 1, 1, 1, 2, 2, 2]}
    )
    with pytest.warns(agreement.AgreementUndefinedWarning, match="resamples"):
        estimate = agreement.krippendorff_alpha_ci(data, n_boot=300, interval="two-way")
    assert np.isfinite(estimate.low) and np.isfinite(estimate.high)


def _emotion_votes(rng: np.random.Generator, pool: int | None) -> pd.DataFrame:
    rows = []
    for dialogue in range(40):
        workers = (
            rng.choice(pool, 3, replace=False) if pool else [f"w{dialogue}-{k}" for k in range(3)]
        )
        for utterance in range(6):
            truth = rng.integers(0, 3)
            for worker in workers:
                label = truth if rng.random() < 0.7 else rng.integers(0, 3)
                rows.append((f"d{dialogue}", utterance, worker, ["joy", "anger", "neutral"][label]))
    return pd.DataFrame(rows, columns=["item", "utterance", "rater", "value"])


def test_kappa_by_source_names_the_two_way_interval_when_workers_label_many_dialogues() -> None:
    labels = ["joy", "anger", "neutral"]
    for pool, method in ((6, "dialogues × workers"), (None, "bootstrap over dialogues")):
        votes = _emotion_votes(np.random.default_rng(7), pool)
        counts = (
            votes.groupby(["item", "utterance", "value"]).size().unstack(fill_value=0)
        ).reindex(columns=labels, fill_value=0)
        counts = counts.reset_index().assign(source="")
        with_votes = kappa_by_source(counts, labels, n_boot=300, votes=votes).iloc[0]
        without = kappa_by_source(counts, labels, n_boot=300).iloc[0]
        assert method in with_votes["ci_method"]
        assert with_votes["kappa"] == without["kappa"]  # only the interval may change
        assert without["ci_method"] == cluster_bootstrap.DIALOGUES
    with report_options_set(interval="units"):
        units = kappa_by_source(counts, labels, n_boot=300, votes=votes).iloc[0]
    assert units["ci_method"] == cluster_bootstrap.DIALOGUES


def test_chats_are_resampled_by_worker_when_workers_hold_several() -> None:
    chats = np.repeat(np.arange(20), 5)
    pooled = chats // 5  # 4 workers of 5 chats each
    clusters, method = cluster_bootstrap.chat_clusters(chats, pooled, "auto")
    assert method == cluster_bootstrap.WORKERS and len(set(clusters)) == 4
    fresh = chats + 100  # one worker per chat
    assert cluster_bootstrap.chat_clusters(chats, fresh, "auto")[1] == cluster_bootstrap.CLUSTER
    assert cluster_bootstrap.chat_clusters(chats, pooled, "units")[1] == cluster_bootstrap.CLUSTER
    assert cluster_bootstrap.chat_clusters(chats, None, "auto")[1] == cluster_bootstrap.CLUSTER


def test_a_share_over_few_workers_gets_a_t_interval_and_over_chats_a_percentile_one() -> None:
    rng = np.random.default_rng(3)
    chats = np.repeat(np.arange(40), 8)
    workers = chats // 4  # 10 workers of 4 chats each
    y = (rng.random(len(chats)) < 0.7).astype(float)[:, None]
    bounds, method = cluster_bootstrap.chat_shares_ci(y, chats, workers, n_boot=400, seed=1)
    low, high = bounds[0]
    assert method == cluster_bootstrap.WORKERS
    draws = cluster_bootstrap.cluster_bootstrap_means(y, workers, n_boot=400, seed=1)[:, 0]
    # value -/+ t(9) sd sqrt(10 / 9): the percentile interval over 10 workers covered 85.3%.
    half = stats.t.ppf(0.975, 9) * np.std(draws, ddof=1) * np.sqrt(10 / 9)
    assert (low, high) == pytest.approx((y.mean() - half, y.mean() + half))
    bounds, method = cluster_bootstrap.chat_shares_ci(
        y, chats, chats, n_boot=400, seed=1, mean=True
    )
    assert method == cluster_bootstrap.CLUSTER
    draws = cluster_bootstrap.cluster_bootstrap_means(y, chats, n_boot=400, seed=1)[:, 0]
    assert bounds[0] == pytest.approx(tuple(np.percentile(draws, [2.5, 97.5])))
    assert bounds[1] == bounds[0]  # the mean of one share is that share


@pytest.mark.slow
def test_the_two_way_interval_covers_near_95_percent_where_the_item_bootstrap_does_not() -> None:
    # Truth: alpha of one very large study whose workers come from a pool of 4,000 (so
    # neither items nor workers are a fixed sample); 200 studies with a pool of 8 workers.
    rng = np.random.default_rng(8)
    truth = agreement.krippendorff_alpha(_pool_ratings(rng, n_items=20_000, pool=4000))
    hits = {"two-way": 0, "units": 0}
    for _ in range(200):
        data = _pool_ratings(rng, n_items=150, pool=8)
        for interval in hits:
            est = agreement.krippendorff_alpha_ci(data, n_boot=200, seed=None, interval=interval)
            hits[interval] += est.low <= truth <= est.high
    assert 0.90 <= hits["two-way"] / 200 <= 0.99  # 95% within Monte-Carlo error (se 1.5%)
    assert hits["units"] / 200 < 0.85


def test_interactive_ssa_scores_name_the_worker_bootstrap_when_workers_hold_several_chats() -> None:
    rng = np.random.default_rng(9)
    items = [f"t{i}" for i in range(120)]
    labels = pd.DataFrame(
        {
            "item": items,
            "model": "bot",
            "sensible": rng.random(120) < 0.7,
            "specific": rng.random(120) < 0.4,
        }
    )
    chats = pd.Series(np.repeat(np.arange(20), 6), index=items)  # 20 chats of 6 turns
    workers = pd.Series(np.repeat(np.arange(5), 24), index=items)  # 5 workers, 4 chats each
    pooled = ssa_scores(labels, n_boot=300, conversations=chats, workers=workers)
    alone = ssa_scores(labels, n_boot=300, conversations=chats)
    assert pooled["ci_method"].iloc[0] == cluster_bootstrap.WORKERS
    assert alone["ci_method"].iloc[0] == cluster_bootstrap.CLUSTER
    assert pooled["ssa"].iloc[0] == alone["ssa"].iloc[0]
    with report_options_set(interval="units"):
        units = ssa_scores(labels, n_boot=300, conversations=chats, workers=workers)
    assert units["ci_method"].iloc[0] == cluster_bootstrap.CLUSTER
    assert units["ssa_low"].iloc[0] == alone["ssa_low"].iloc[0]
