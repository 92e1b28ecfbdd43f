"""Transformers models from a local folder: decoder-only (GPT-2, Llama, …) and encoder–decoder
(T5, BART, BlenderBot, …), batched, on CUDA when there is one.

Configuration::

    {"path": "/models/dialogpt-small",   # a save_pretrained() folder; never downloaded
     "kind": "auto",                     # or "causal" / "seq2seq" (auto: from the config)
     "device": "auto",                   # "cuda" when available, else "cpu"
     "dtype": "auto",                    # bf16 (or fp16) on CUDA, fp32 on CPU
     "batch_size": 16, "max_context_tokens": 512,
     "turn_separator": null,             # default: the EOS token (causal), "\\n" (seq2seq)
     "timeout_s": 120}                   # per batch; a slower batch is an error, never truncated

Decoder-only models are padded on the left, so every sequence in a batch ends where generation
starts and positions come from the attention mask; encoder–decoder models pad the encoder input
on the right. Contexts longer than ``max_context_tokens`` lose their oldest tokens.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from modelhub.backends.base import (
    Backend,
    BackendError,
    Example,
    TokenScores,
    config_check,
    context_text,
)
from modelhub.decoding import Candidate, DecodingParams, decoding_validate, sample_and_rank

KINDS = ("auto", "causal", "seq2seq")
DTYPES = ("auto", "float32", "float16", "bfloat16")
_LOADED: dict[tuple[str, str, str, str], tuple[Any, Any]] = {}
_LOAD_LOCK = threading.Lock()


class HFLocal(Backend):
    """Generate with, and score under, a transformers model saved in a local folder."""

    name = "hf_local"

    def __init__(
        self,
        path: str,
        kind: str = "auto",
        device: str = "auto",
        dtype: str = "auto",
        batch_size: int = 16,
        max_context_tokens: int = 512,
        turn_separator: str | None = None,
        timeout_s: float = 120.0,
    ) -> None:
        config_check(
            self.name,
            locals(),
            required=["path"],
            types={
                "path": str,
                "batch_size": int,
                "max_context_tokens": int,
                "turn_separator": str,
                "timeout_s": (int, float),
            },
        )
        folder = Path(path)
        if not (folder / "config.json").is_file():
            raise ValueError(f"hf_local: {path!r} is not a saved model folder (no config.json)")
        if kind not in KINDS or dtype not in DTYPES or device not in ("auto", "cpu", "cuda"):
            raise ValueError(
                f"hf_local: kind must be one of {KINDS}, dtype one of {DTYPES}, "
                f"device auto/cpu/cuda; got {kind!r}, {dtype!r}, {device!r}"
            )
        if batch_size < 1 or max_context_tokens < 1 or timeout_s <= 0:
            raise ValueError("hf_local: batch_size, max_context_tokens and timeout_s must be > 0")
        from transformers import AutoConfig

        try:
            model_config = AutoConfig.from_pretrained(folder, local_files_only=True)
        except (OSError, ValueError) as exc:
            raise ValueError(f"hf_local: cannot read the model config in {path!r}: {exc}") from None
        is_seq2seq = bool(getattr(model_config, "is_encoder_decoder", False))
        if kind == "auto":
            kind = "seq2seq" if is_seq2seq else "causal"
        self.path, self.kind, self.device, self.dtype = str(folder), kind, device, dtype
        self.batch_size, self.max_context_tokens = batch_size, max_context_tokens
        self.turn_separator, self.timeout_s = turn_separator, float(timeout_s)
        self.max_positions: int | None = getattr(model_config, "n_positions", None) or getattr(
            model_config, "max_position_embeddings", None
        )

    # -- loading -------------------------------------------------------------------------

    def _load(self) -> tuple[Any, Any]:
        """Return (tokenizer, model), loaded once per process and configuration."""
        import torch

        device = self.device
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        dtype = self.dtype
        if dtype == "auto":
            cuda = device == "cuda"
            dtype = "float32" if not cuda else "bfloat16"
            if cuda and not torch.cuda.is_bf16_supported():
                dtype = "float16"
        key = (self.path, self.kind, device, dtype)
        with _LOAD_LOCK:
            if key not in _LOADED:
                _LOADED[key] = self._load_fresh(device, getattr(torch, dtype))
        return _LOADED[key]

    def _load_fresh(self, device: str, dtype: Any) -> tuple[Any, Any]:
        from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer

        auto: Any = AutoModelForCausalLM if self.kind == "causal" else AutoModelForSeq2SeqLM
        try:
            tokenizer = AutoTokenizer.from_pretrained(self.path, local_files_only=True)
            model: Any = auto.from_pretrained(self.path, dtype=dtype, local_files_only=True)
        except (OSError, ValueError) as exc:
            raise BackendError(f"hf_local: cannot load the model in {self.path!r}: {exc}") from None
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
        tokenizer.truncation_side = "left"  # keep the most recent turns
        return tokenizer, model.to(device).eval()

    # -- inputs --------------------------------------------------------------------------

    def _separator(self, tokenizer: Any) -> str:
        if self.turn_separator is not None:
            return self.turn_separator
        if self.kind == "causal" and tokenizer.eos_token:
            return str(tokenizer.eos_token)
        return "\n"

    def _prompts(self, tokenizer: Any, examples: Sequence[Example]) -> list[str]:
        separator = self._separator(tokenizer)
        texts = [context_text(e.turns, separator) for e in examples]
        # A decoder-only model continues the text: end with the separator so it starts a turn.
        return [t + separator for t in texts] if self.kind == "causal" else texts

    def _context_budget(self, max_new_tokens: int) -> int:
        if self.kind == "causal" and self.max_positions:
            return max(1, min(self.max_context_tokens, self.max_positions - max_new_tokens))
        return self.max_context_tokens

    # -- generation ----------------------------------------------------------------------

    def generate(self, examples: Sequence[Example], params: Mapping[str, Any]) -> list[str]:
        decoding = decoding_validate(params)
        if not examples:
            return []
        n = decoding.num_samples if decoding.strategy == "sample_and_rank" else 1
        samples = self.sample(examples, decoding, n=n)
        if n == 1:
            return [s[0] for s in samples]
        flat = [(e, text) for e, texts in zip(examples, samples, strict=True) for text in texts]
        scores = self.score([e for e, _ in flat], [t for _, t in flat])
        replies = []
        for i, example in enumerate(examples):
            candidates = [
                Candidate(text=text, logprob=s.total, n_tokens=len(s.logprobs))
                for (_, text), s in zip(
                    flat[i * n : (i + 1) * n], scores[i * n : (i + 1) * n], strict=True
                )
            ]
            replies.append(sample_and_rank(candidates, example.turns, decoding).text)
        return replies

    def sample(
        self, examples: Sequence[Example], decoding: DecodingParams, *, n: int = 1
    ) -> list[list[str]]:
        """Return ``n`` responses per example (greedy when decoding is greedy), in batches."""
        import torch

        tokenizer, model = self._load()
        prompts = self._prompts(tokenizer, examples)
        if decoding.seed is not None:
            torch.manual_seed(decoding.seed)
        out: list[list[str]] = []
        per_batch = max(1, self.batch_size // n) if n > 1 else self.batch_size
        for start in range(0, len(prompts), per_batch):
            out.extend(self._generate_batch(prompts[start : start + per_batch], decoding, n))
        return out

    def _generate_batch(self, prompts: list[str], d: DecodingParams, n: int) -> list[list[str]]:
        import torch

        tokenizer, model = self._load()
        tokenizer.padding_side = "left" if self.kind == "causal" else "right"
        enc = tokenizer(
            prompts,
            return_tensors="pt",
            padding=True,
            truncation=True,
            max_length=self._context_budget(d.max_new_tokens),
        ).to(model.device)
        sampling = {"temperature": d.temperature, "top_k": d.top_k or None, "top_p": d.top_p}
        if not d.do_sample:
            sampling = {"temperature": None, "top_k": None, "top_p": None}
        started = time.monotonic()
        with torch.inference_mode():
            output = model.generate(
                **enc,
                max_new_tokens=d.max_new_tokens,
                do_sample=d.do_sample,
                num_return_sequences=n,
                pad_token_id=tokenizer.pad_token_id,
                max_time=self.timeout_s,
                **sampling,
            )
        if time.monotonic() - started >= self.timeout_s:
            raise BackendError(
                f"hf_local: a batch of {len(prompts)} took more than timeout_s={self.timeout_s}; "
                "lower batch_size or max_new_tokens, or raise timeout_s"
            )
        new_tokens = output[:, enc["input_ids"].shape[1] :] if self.kind == "causal" else output
        texts = [
            self._clean(t, tokenizer)
            for t in tokenizer.batch_decode(new_tokens, skip_special_tokens=True)
        ]
        return [texts[i * n : (i + 1) * n] for i in range(len(prompts))]

    def _clean(self, text: str, tokenizer: Any) -> str:
        separator = self._separator(tokenizer)
        if separator.strip() or separator == "\n":  # the model went on to the next turn
            text = text.split(separator, 1)[0]
        return text.strip()

    # -- scoring -------------------------------------------------------------------------

    def score(self, examples: Sequence[Example], responses: Sequence[str]) -> list[TokenScores]:
        """Return the log-likelihood of each response token (and of the EOS that ends it)."""
        if len(examples) != len(responses):
            raise ValueError("score needs one response per example")
        tokenizer, _ = self._load()
        prompts = self._prompts(tokenizer, examples)
        scores: list[TokenScores] = []
        for start in range(0, len(prompts), self.batch_size):
            batch = slice(start, start + self.batch_size)
            scores.extend(self._score_batch(prompts[batch], list(responses[batch])))
        return scores

    def _response_ids(self, tokenizer: Any, response: str) -> list[int]:
        ids = list(tokenizer(response.strip(), add_special_tokens=False)["input_ids"])
        return ids + ([tokenizer.eos_token_id] if tokenizer.eos_token_id is not None else [])

    def _score_batch(self, prompts: list[str], responses: list[str]) -> list[TokenScores]:
        import torch

        tokenizer, model = self._load()
        targets = [self._response_ids(tokenizer, r) for r in responses]
        budget = self._context_budget(max(len(t) for t in targets))
        contexts = tokenizer(prompts, truncation=True, max_length=budget)["input_ids"]
        if self.kind == "causal":
            start = (
                tokenizer.bos_token_id
                if tokenizer.bos_token_id is not None
                else tokenizer.eos_token_id
            )
            contexts = [c or [start] for c in contexts]  # the first response token needs a context
            rows = [list(c) + t for c, t in zip(contexts, targets, strict=True)]
            ids, mask = _pad_right(rows, tokenizer.pad_token_id)
            with torch.inference_mode():
                logits = model(
                    input_ids=ids.to(model.device), attention_mask=mask.to(model.device)
                ).logits
            logp = torch.log_softmax(logits.float(), dim=-1).cpu()
            return [
                TokenScores(tuple(logp[i, len(c) - 1 + j, tok].item() for j, tok in enumerate(t)))
                for i, (c, t) in enumerate(zip(contexts, targets, strict=True))
            ]
        enc_ids, enc_mask = _pad_right([list(c) for c in contexts], tokenizer.pad_token_id)
        labels, label_mask = _pad_right(targets, -100)
        with torch.inference_mode():
            logits = model(
                input_ids=enc_ids.to(model.device),
                attention_mask=enc_mask.to(model.device),
                labels=labels.to(model.device),
                # decoder inputs are the labels shifted right after the start token: same mask
                decoder_attention_mask=label_mask.to(model.device),
            ).logits
        logp = torch.log_softmax(logits.float(), dim=-1).cpu()
        return [
            TokenScores(tuple(logp[i, j, tok].item() for j, tok in enumerate(t)))
            for i, t in enumerate(targets)
        ]


def _pad_right(rows: list[list[int]], pad: int) -> tuple[Any, Any]:
    import torch

    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, row in enumerate(rows):
        ids[i, : len(row)] = torch.tensor(row, dtype=torch.long)
        mask[i, : len(row)] = 1
    return ids, mask
