"""The transformers backend on tiny models built offline: batching, padding, scoring."""

import math

import pytest

from modelhub.backends import BackendError, Example, backend_load
from modelhub.backends.base import Reply
from modelhub.backends.hf_local import HFLocal

EXAMPLES = [
    Example(turns=("hi! how are you today?",)),
    Example(turns=("i got promoted at work and i am so proud!", "that is great news!")),
    Example(turns=("ok",)),
    Example(
        turns=(
            "do you have any pets? i don't know what to get.",
            "i like to play tennis and read books.",
            "what do you like to do on weekends?",
        )
    ),
    Example(turns=("my dog died last week and i miss him.",)),
]
GREEDY = {"max_new_tokens": 6}


@pytest.fixture(params=["causal", "seq2seq"])
def model_path(request, tiny_causal, tiny_seq2seq) -> str:
    return tiny_causal if request.param == "causal" else tiny_seq2seq


def test_kind_is_read_from_the_model_config(tiny_causal, tiny_seq2seq):
    assert HFLocal(path=tiny_causal).kind == "causal"
    assert HFLocal(path=tiny_seq2seq).kind == "seq2seq"


def test_greedy_batched_output_equals_one_at_a_time(model_path):
    # Contexts of different lengths in one batch: padding on the wrong side, or positions not
    # taken from the attention mask, change the batched replies.
    backend = HFLocal(path=model_path, batch_size=8)
    batched = backend.generate(EXAMPLES, GREEDY)
    one_at_a_time = [backend.generate([e], GREEDY)[0] for e in EXAMPLES]
    assert batched == one_at_a_time
    assert all(reply for reply in batched)  # the tiny models do say something
    assert len(batched[0].split()) <= GREEDY["max_new_tokens"]


def test_batch_size_smaller_than_the_examples_splits_them(model_path):
    whole = HFLocal(path=model_path, batch_size=8).generate(EXAMPLES, GREEDY)
    assert HFLocal(path=model_path, batch_size=2).generate(EXAMPLES, GREEDY) == whole


def test_scores_are_per_token_log_likelihoods_and_do_not_depend_on_batching(model_path):
    backend = HFLocal(path=model_path, batch_size=8)
    responses = ["i am fine", "that is great news", "ok", "i like tennis", "i am so sorry"]
    batched = backend.score(EXAMPLES, responses)
    for example, response, scores in zip(EXAMPLES, responses, batched, strict=True):
        alone = backend.score([example], [response])[0]
        assert len(scores.logprobs) == len(response.split()) + 1  # the words and EOS
        assert all(lp < 0 for lp in scores.logprobs)
        assert scores.logprobs == pytest.approx(alone.logprobs, abs=1e-4)
    # a random model over a vocabulary of V words is close to uniform: perplexity ≈ V
    vocabulary = len(backend._load()[0])
    ppl = math.exp(-sum(s.total for s in batched) / sum(len(s.logprobs) for s in batched))
    assert vocabulary / 3 < ppl < vocabulary * 3


def test_sampling_is_reproducible_with_a_seed_and_sample_and_rank_returns_one_reply(model_path):
    backend = HFLocal(path=model_path, batch_size=8)
    params = {"strategy": "sample", "top_k": 10, "temperature": 1.2, "seed": 3}
    assert backend.generate(EXAMPLES, params) == backend.generate(EXAMPLES, params)
    meena = {"preset": "meena", "num_samples": 4, "max_new_tokens": 5, "seed": 1}
    replies = backend.generate(EXAMPLES[:2], meena)
    assert len(replies) == 2 and all(isinstance(r, str) for r in replies)


def test_sample_and_rank_picks_the_most_likely_candidate(tiny_causal, monkeypatch):
    backend = HFLocal(path=tiny_causal, batch_size=8)
    candidates = ["i am fine", "ok", "that is great news"]
    monkeypatch.setattr(
        backend, "sample_replies", lambda examples, d, n: [[Reply(c) for c in candidates[:n]]]
    )
    scores = backend.score([EXAMPLES[0]] * 3, candidates)
    best = max(range(3), key=lambda i: scores[i].mean)
    meena = {"preset": "meena", "num_samples": 3, "repetition_filter": False}
    assert backend.generate([EXAMPLES[0]], meena) == [candidates[best]]


def test_contexts_longer_than_the_model_keep_their_latest_tokens(tiny_causal):
    backend = HFLocal(path=tiny_causal, max_context_tokens=500)
    long_context = Example(turns=("i like to play tennis and read books. " * 40, "ok"))
    assert isinstance(backend.generate([long_context], GREEDY)[0], str)
    assert len(backend.score([long_context], ["ok"])[0].logprobs) == 2


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({}, "needs 'path'"),
        ({"path": "/nonexistent"}, "not a saved model folder"),
        ({"path": "{causal}", "kind": "rnn"}, "kind must be one of"),
        ({"path": "{causal}", "batch_size": 0}, "must be > 0"),
        ({"path": "{causal}", "batch_size": "8"}, "'batch_size' must be int"),
        ({"path": "{causal}", "temperature": 1}, "bad configuration"),
    ],
)
def test_bad_configuration_is_a_clear_error(tiny_causal, config, message):
    config = {
        k: v.format(causal=tiny_causal) if isinstance(v, str) else v for k, v in config.items()
    }
    with pytest.raises(ValueError, match=message):
        backend_load("hf_local", config)


def test_bad_decoding_parameters_are_refused_before_loading(tiny_causal):
    with pytest.raises(ValueError, match="top_p"):
        HFLocal(path=tiny_causal).generate(EXAMPLES, {"strategy": "sample", "top_p": 2})


def test_a_batch_slower_than_the_timeout_is_an_error_not_a_truncated_reply(tiny_causal):
    backend = HFLocal(path=tiny_causal, timeout_s=1e-6)
    with pytest.raises(BackendError, match="timeout_s"):
        backend.generate(EXAMPLES, {"max_new_tokens": 20})
