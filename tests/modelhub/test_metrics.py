"""Automatic metrics: perplexity, BLEU (sacrebleu), distinct-n, P@1,100, correlation."""

import math

import numpy as np
import pytest
from sacrebleu.metrics import BLEU

from modelhub.metrics import (
    bleu,
    correlation,
    correlation_figure,
    distinct_n,
    distractor_sets,
    perplexity,
    precision_at_1,
)


def test_perplexity_pools_tokens_across_responses():
    assert perplexity([[math.log(0.5)] * 3, [math.log(0.5)]]) == pytest.approx(2.0)
    # a 1-token response weighs one token, not one response
    assert perplexity([[math.log(0.25)], [0.0, 0.0, 0.0]]) == pytest.approx(4 ** (1 / 4))
    with pytest.raises(ValueError):
        perplexity([[], []])


def test_bleu_is_the_average_of_sacrebleus_bleu_1_to_4():
    hyps = ["the cat sat on the mat", "i am so sorry to hear that"]
    refs = ["the cat sat on a mat", "i am sorry to hear that"]
    result = bleu(hyps, refs)
    expected = [BLEU(max_ngram_order=n).corpus_score(hyps, [refs]).score for n in (1, 2, 3, 4)]
    assert [result.bleu1, result.bleu2, result.bleu3, result.bleu4] == pytest.approx(expected)
    assert result.average == pytest.approx(sum(expected) / 4)
    assert result.bleu1 > result.bleu4 > 0
    assert bleu(refs, refs).average == pytest.approx(100)
    with pytest.raises(ValueError):
        bleu(hyps, refs[:1])


def test_distinct_n_counts_unique_ngrams_over_all_responses():
    texts = ["I don't know.", "I don't know.", "ok"]
    assert distinct_n(texts, 1) == pytest.approx(4 / 7)
    assert distinct_n(texts, 2) == pytest.approx(2 / 4)
    assert distinct_n([], 2) == 0.0


def test_precision_at_1_counts_rows_where_gold_scores_highest_and_ties_lose():
    scores = np.array([[0.9, 0.1, 0.2], [0.1, 0.9, 0.2], [0.5, 0.5, 0.1]])
    assert precision_at_1(scores) == pytest.approx(1 / 3)
    assert precision_at_1(scores, gold=[0, 1, 2]) == pytest.approx(2 / 3)


def test_distractor_sets_put_the_gold_first_among_99_other_references():
    refs = [f"reply {i}" for i in range(150)]
    sets = distractor_sets(refs, size=100, seed=1)
    assert all(len(s) == 100 == len(set(s)) and s[0] == r for s, r in zip(sets, refs, strict=True))
    assert sets == distractor_sets(refs, size=100, seed=1)
    with pytest.raises(ValueError, match="at least 100"):
        distractor_sets(refs[:50])


def test_correlation_of_perplexity_and_ssa_across_models():
    # Meena's Figure 1 shape: lower perplexity, higher SSA
    ppl = [10.2, 10.7, 11.6, 12.4, 17.3]
    ssa = [79, 72, 62, 56, 31]
    result = correlation(ppl, ssa)
    assert result.pearson < -0.95 and result.spearman == pytest.approx(-1)
    assert result.r2 == pytest.approx(result.pearson**2)
    assert result.n == 5
    with pytest.raises(ValueError, match="at least 3"):
        correlation([1, 2], [3, 4])
    with pytest.raises(ValueError, match="same value"):
        correlation([1, 1, 1], [1, 2, 3])


def test_the_correlation_figure_is_drawn_without_pyplot(tmp_path):
    figure = correlation_figure(["a", "b", "c"], [10, 12, 17], [79, 60, 31])
    path = tmp_path / "ppl_ssa.png"
    figure.savefig(path)
    assert path.stat().st_size > 1000
    assert "R² = " in figure.axes[0].get_title()
