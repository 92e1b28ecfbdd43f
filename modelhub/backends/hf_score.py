"""Log-likelihoods of responses under a transformers model, computed where the model is.

The targets' log-probabilities are gathered on the device and copied to the host once per
batch (a few floats a row). Copying the log-softmax of batch × length × vocabulary to the host
and reading it a token at a time, as hf_local did before, was 38–46× slower on a GPU with a
128k vocabulary (issue 28); 4.7× on a 2-core CPU (bench/generation.py, section 5). Decoder-only
models are asked for the logits of the last positions only (``logits_to_keep``) where they
support it: the context's first tokens predict nothing scored.

``causal_logprobs_reference`` keeps both full-logits computations (gathered on the device, and
the old copy to the host) for the tests and the benchmark to compare with.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

from modelhub.backends.base import TokenScores
from modelhub.backends.hf_generate import pad_rows

_KEEPS_LOGITS: dict[Any, bool] = {}


def _keeps_logits(model: Any) -> bool:
    """Say whether the model's forward takes ``logits_to_keep`` (recent transformers LMs)."""
    kind = type(model)
    if kind not in _KEEPS_LOGITS:
        _KEEPS_LOGITS[kind] = "logits_to_keep" in inspect.signature(kind.forward).parameters
    return _KEEPS_LOGITS[kind]


def target_logprobs(logits: Any, positions: Any, tokens: Any) -> Any:
    """Return log p(tokens[b, j] | logits[b, positions[b, j]]) for a batch, on the device:
    log-softmax over the vocabulary of the selected positions only, in float32."""
    import torch

    rows = torch.arange(logits.shape[0], device=logits.device)[:, None]
    picked = logits[rows, positions].float()  # batch × targets × vocabulary
    chosen = picked.gather(-1, tokens[..., None]).squeeze(-1)
    return chosen - torch.logsumexp(picked, dim=-1)


def _index(rows: Sequence[Sequence[int]], starts: Sequence[int], device: Any) -> tuple[Any, Any]:
    """Return (positions, tokens) tensors: row b's target j is predicted at starts[b] + j."""
    import torch

    width = max(len(r) for r in rows)
    positions = torch.zeros((len(rows), width), dtype=torch.long)
    tokens = torch.zeros((len(rows), width), dtype=torch.long)
    for b, (row, start) in enumerate(zip(rows, starts, strict=True)):
        positions[b, : len(row)] = torch.arange(start, start + len(row))
        tokens[b, : len(row)] = torch.tensor(list(row), dtype=torch.long)
    return positions.to(device), tokens.to(device)


def _scores(values: Any, targets: Sequence[Sequence[int]]) -> list[TokenScores]:
    table = values.cpu().tolist()  # the one transfer of the batch
    return [TokenScores(tuple(table[b][: len(t)])) for b, t in enumerate(targets)]


def causal_logprobs(
    model: Any, contexts: Sequence[Sequence[int]], targets: Sequence[Sequence[int]], pad: int
) -> list[TokenScores]:
    """Score each target given its context with a decoder-only model (rows padded right)."""
    import torch

    rows = [list(c) + list(t) for c, t in zip(contexts, targets, strict=True)]
    ids, mask = pad_rows(rows, pad, left=False)
    width = ids.shape[1]
    keep = width - (min(len(c) for c in contexts) - 1)  # the earliest position scored
    extra = {"logits_to_keep": keep} if _keeps_logits(model) else {}
    with torch.inference_mode():
        logits = model(
            input_ids=ids.to(model.device), attention_mask=mask.to(model.device), **extra
        ).logits
        offset = width - logits.shape[1]  # logits[:, 0] is position ``offset``
        starts = [len(c) - 1 - offset for c in contexts]
        positions, tokens = _index(targets, starts, logits.device)
        return _scores(target_logprobs(logits, positions, tokens), targets)


def seq2seq_logprobs(
    model: Any, contexts: Sequence[Sequence[int]], targets: Sequence[Sequence[int]], pad: int
) -> list[TokenScores]:
    """Score each target as the decoder's output for its context (encoder input)."""
    import torch

    enc_ids, enc_mask = pad_rows(contexts, pad, left=False)
    labels, label_mask = pad_rows(targets, -100, left=False)
    device = model.device
    with torch.inference_mode():
        logits = model(
            input_ids=enc_ids.to(device),
            attention_mask=enc_mask.to(device),
            labels=labels.to(device),
            # decoder inputs are the labels shifted right after the start token: same mask
            decoder_attention_mask=label_mask.to(device),
        ).logits
        positions, tokens = _index(targets, [0] * len(targets), logits.device)
        return _scores(target_logprobs(logits, positions, tokens), targets)


def causal_logprobs_reference(
    model: Any,
    contexts: Sequence[Sequence[int]],
    targets: Sequence[Sequence[int]],
    pad: int,
    *,
    on_host: bool,
) -> list[TokenScores]:
    """Score as before, from the log-softmax of every position: gathered on the device
    (``on_host=False``) or copied to the host and read token by token (``on_host=True``, the
    old path). For the tests and the benchmark."""
    import torch

    rows = [list(c) + list(t) for c, t in zip(contexts, targets, strict=True)]
    ids, mask = pad_rows(rows, pad, left=False)
    with torch.inference_mode():
        logits = model(input_ids=ids.to(model.device), attention_mask=mask.to(model.device)).logits
        logp = torch.log_softmax(logits.float(), dim=-1)
        if on_host:
            logp = logp.cpu()
            return [
                TokenScores(tuple(logp[i, len(c) - 1 + j, tok].item() for j, tok in enumerate(t)))
                for i, (c, t) in enumerate(zip(contexts, targets, strict=True))
            ]
        positions, tokens = _index(targets, [len(c) - 1 for c in contexts], logp.device)
        values = logp[torch.arange(len(rows), device=logp.device)[:, None], positions]
        return _scores(values.gather(-1, tokens[..., None]).squeeze(-1), targets)
