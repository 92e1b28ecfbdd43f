"""hf_local's score() gathers the targets' log-probabilities on the device: the values are
those of the full log-softmax, whether gathered on the device or read on the host (the old
path), for batches of contexts of different lengths."""

import pytest

from modelhub.backends import Example
from modelhub.backends.hf_local import HFLocal
from modelhub.backends.hf_score import causal_logprobs, causal_logprobs_reference, target_logprobs
from modelhub.tiny import DEFAULT_TEXTS, tiny_model_build

RESPONSES = ["i am fine", "that is great news", "ok", "i like tennis and books", "so sorry"]
EXAMPLES = [Example(turns=tuple(DEFAULT_TEXTS[i : i + 1 + 2 * (i % 3)])) for i in range(5)]


@pytest.fixture(scope="module")
def wide_llama(tmp_path_factory) -> str:
    """A Llama-shaped model with a wider vocabulary (filler words): a real vocabulary's
    log-softmax, in miniature."""
    folder = tmp_path_factory.mktemp("wide")
    return str(tiny_model_build(folder, arch="llama", chat="llama3", vocab_size=5000))


@pytest.fixture(params=["gpt2", "llama3", "wide"])
def scorer(request, tiny_causal, tiny_chat, wide_llama) -> HFLocal:
    path = {"gpt2": tiny_causal, "llama3": tiny_chat["llama3"], "wide": wide_llama}
    return HFLocal(path=path[request.param], batch_size=8)


def test_score_on_the_device_equals_the_full_log_softmax_on_the_host(scorer):
    tokenizer, model, prompter = scorer._loaded()
    pairs = [
        prompter.score_ids(e.turns, r, scorer._context_budget)
        for e, r in zip(EXAMPLES, RESPONSES, strict=True)
    ]
    contexts, targets = [c for c, _ in pairs], [t for _, t in pairs]
    assert len({len(c) for c in contexts}) > 1  # padding differs between rows
    scores = scorer.score(EXAMPLES, RESPONSES)
    pad = tokenizer.pad_token_id
    host = causal_logprobs_reference(model, contexts, targets, pad, on_host=True)
    device = causal_logprobs_reference(model, contexts, targets, pad, on_host=False)
    for mine, old, gathered, target in zip(scores, host, device, targets, strict=True):
        assert len(mine.logprobs) == len(target)
        assert mine.logprobs == pytest.approx(old.logprobs, abs=1e-4)
        assert gathered.logprobs == pytest.approx(old.logprobs, abs=1e-4)


def test_only_the_scored_positions_logits_are_computed(tiny_causal, monkeypatch):
    backend = HFLocal(path=tiny_causal)
    tokenizer, model, _ = backend._loaded()
    shapes = []
    forward = model.forward

    def recording(*args, **kwargs):
        output = forward(*args, **kwargs)
        shapes.append((kwargs["input_ids"].shape[1], output.logits.shape[1]))
        return output

    monkeypatch.setattr(model, "forward", recording)
    contexts, targets = [[5, 6, 7, 8, 9, 10], [5, 6, 7, 8]], [[11, 3], [12, 13, 3]]
    scores = causal_logprobs(model, contexts, targets, tokenizer.pad_token_id)
    assert shapes == [(8, 5)]  # 8 positions, 5 scored: from the shorter context's last on
    monkeypatch.undo()
    expected = causal_logprobs_reference(model, contexts, targets, 0, on_host=True)
    assert [s.logprobs for s in scores] == [pytest.approx(e.logprobs, abs=1e-5) for e in expected]


def test_target_logprobs_is_the_log_softmax_at_the_chosen_positions():
    import torch

    torch.manual_seed(0)
    logits = torch.randn(2, 5, 11)
    positions = torch.tensor([[0, 3], [4, 1]])
    tokens = torch.tensor([[2, 10], [0, 7]])
    expected = torch.log_softmax(logits, -1)
    values = target_logprobs(logits, positions, tokens)
    for b in range(2):
        for j in range(2):
            position, token = positions[b, j], tokens[b, j]
            assert values[b, j].item() == pytest.approx(expected[b, position, token].item(), 1e-6)
