"""Batched generation for hf_local from token ids, and streaming of each row's tokens.

``generate_rows`` pads a batch of prompts itself (left for decoder-only models, so every row
ends where generation starts and positions come from the attention mask; right for
encoder–decoder inputs) rather than asking the tokenizer to: padding and truncation options
reconfigure the shared Rust tokenizer, which concurrent threads use. ``RowStreamer`` speaks
transformers' streamer interface (``put``/``end``) and hands each row's new token to that
row's listener, so one batched ``generate`` streams to many callers. ``TextPieces`` turns one
row's tokens into text pieces as they come.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from modelhub.backends.base import BackendError
from modelhub.backends.hf_prompts import Prompter
from modelhub.decoding import DecodingParams

log = logging.getLogger(__name__)
Listener = Callable[[int], None]


@dataclass(frozen=True)
class GenerationSettings:
    """What a batched generate needs besides the prompts and the decoding parameters.

    Hashable: with the model and the decoding it keys the micro-batcher's lanes, so requests
    batched together agree on all of it."""

    seq2seq: bool
    pad_id: int
    eos_ids: tuple[int, ...] | None  # None: the model's generation config decides
    timeout_s: float


def pad_rows(rows: Sequence[Sequence[int]], pad: int, *, left: bool) -> tuple[Any, Any]:
    """Return (ids, attention mask) tensors of the rows padded to the longest one."""
    import torch

    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, row in enumerate(rows):
        span = slice(width - len(row), width) if left else slice(0, len(row))
        ids[i, span] = torch.tensor(list(row), dtype=torch.long)
        mask[i, span] = 1
    return ids, mask


class RowStreamer:
    """Hand each row's new tokens to that row's listener as ``generate`` produces them.

    ``generate`` first puts the whole input (the prompts, or the decoder's start tokens), then
    one token per row per step; a finished row keeps receiving padding, which its listener
    ignores (it has seen its stop token). A listener that fails is dropped, never the batch.
    """

    def __init__(self, listeners: Sequence[Listener | None]) -> None:
        self.listeners = list(listeners)
        self.started = False

    def put(self, value: Any) -> None:
        if not self.started:  # the prompt
            self.started = True
            return
        for row, token in enumerate(value.reshape(-1).tolist()):
            listener = self.listeners[row] if row < len(self.listeners) else None
            if listener is None:
                continue
            try:
                listener(int(token))
            except Exception:  # noqa: BLE001 - one caller's failure must not stop the batch
                log.exception("hf_local: a stream listener failed; its row goes on unstreamed")
                self.listeners[row] = None

    def end(self) -> None:
        """Nothing to flush: each row's reply is built from the returned tokens."""


def generate_rows(
    model: Any,
    prompts: Sequence[Sequence[int]],
    decoding: DecodingParams,
    settings: GenerationSettings,
    *,
    n: int = 1,
    listeners: Sequence[Listener | None] | None = None,
) -> list[list[int]]:
    """Return the new tokens of every row: ``n`` per prompt, a prompt's samples together.

    Raise BackendError when the batch takes longer than ``settings.timeout_s`` (generate
    stops at that time; the replies would be truncated, so none is returned)."""
    import torch

    ids, mask = pad_rows(prompts, settings.pad_id, left=not settings.seq2seq)
    sampling: dict[str, Any] = {
        "temperature": decoding.temperature,
        "top_k": decoding.top_k or None,
        "top_p": decoding.top_p,
    }
    if not decoding.do_sample:
        sampling = {"temperature": None, "top_k": None, "top_p": None}
    if settings.eos_ids is not None:
        sampling["eos_token_id"] = list(settings.eos_ids)
    if listeners is not None and any(listener is not None for listener in listeners):
        sampling["streamer"] = RowStreamer(listeners)
    started = time.monotonic()
    with torch.inference_mode():
        output = model.generate(
            input_ids=ids.to(model.device),
            attention_mask=mask.to(model.device),
            max_new_tokens=decoding.max_new_tokens,
            do_sample=decoding.do_sample,
            num_return_sequences=n,
            pad_token_id=settings.pad_id,
            max_time=settings.timeout_s,
            **sampling,
        )
    if time.monotonic() - started >= settings.timeout_s:
        raise BackendError(
            f"hf_local: a batch of {len(prompts)} took more than timeout_s={settings.timeout_s}; "
            "lower batch_size or max_new_tokens, or raise timeout_s"
        )
    start = 1 if settings.seq2seq else ids.shape[1]  # the decoder's start token, or the prompt
    return [list(map(int, row)) for row in output[:, start:].tolist()]


class TextPieces:
    """Turn one reply's tokens, as they come, into pieces that concatenate to its final text.

    Each step decodes the whole reply so far (a multi-byte character spans tokens, and a
    tokenizer may join a space to the punctuation after it, so decoding token by token is not
    stable) and emits only what can no longer change: never a partial character (U+FFFD at the
    end), trailing whitespace (the final text is stripped), the turn separator or the start
    of one, or anything after the reply ended.
    """

    def __init__(self, prompter: Prompter) -> None:
        self.prompter = prompter
        self.tokens: list[int] = []
        self.emitted = ""
        self.ended = False

    def push(self, token: int) -> str:
        """Add a token; return the new piece ("" when nothing new is certain yet)."""
        if self.ended:
            return ""
        if token in self.prompter.stop_ids:
            self.ended = True
            return ""
        self.tokens.append(token)
        text = self.prompter.decode(self.tokens)
        shown, self.ended = self.prompter.visible(text)
        if not self.ended:
            shown = _held_back(text, self.prompter.cut)
        if len(shown) <= len(self.emitted) or not shown.startswith(self.emitted):
            return ""
        piece, self.emitted = shown[len(self.emitted) :], shown
        return piece

    def rest(self, final_text: str) -> str:
        """Return what the final text adds to the pieces emitted so far."""
        if final_text.startswith(self.emitted):
            return final_text[len(self.emitted) :]
        log.warning("hf_local: streamed pieces differ from the final reply %r", final_text[:80])
        return ""


def _held_back(text: str, cut: str | None) -> str:
    """Return ``text`` without what may still change: a partial separator or character at the
    end, and surrounding whitespace."""
    if cut and (cut.strip() or cut == "\n"):
        for size in range(min(len(cut) - 1, len(text)), 0, -1):
            if text.endswith(cut[:size]):
                text = text[:-size]
                break
    return text.rstrip("\ufffd").strip()
