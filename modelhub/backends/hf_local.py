"""Transformers models from a local folder: decoder-only (GPT-2, Llama, …) and encoder–decoder
(T5, BART, BlenderBot, …), batched, on CUDA when there is one.

Configuration::

    {"path": "/models/llama-3-8b-instruct",  # a save_pretrained() folder; never downloaded
     "kind": "auto",                     # or "causal" / "seq2seq" (auto: from the config)
     "device": "auto",                   # "cuda" when available, else "cpu"
     "dtype": "auto",                    # bf16 (or fp16) on CUDA, fp32 on CPU
     "batch_size": 16, "max_context_tokens": 512,
     "batch_wait_ms": 5,                 # micro-batching of concurrent one-turn requests; 0: off
     "chat_template": "auto",            # the tokenizer's own / "none" (joined) / inline jinja
     "system_prompt": null, "leading_bot": "user", "opening_user_turn": "Hello.",
     "system_role": true,                # chat messages: see backends/conversation.py
     "turn_separator": null,             # joined turns: EOS (causal), "\\n" (seq2seq)
     "timeout_s": 120}                   # per batch; a slower batch is an error, never truncated

Prompts (``hf_prompts``): with a chat template (the tokenizer's by default) the context becomes
chat messages valid for every template, rendered with the assistant's generation prompt, and
generation stops at the template's end-of-turn token; without one (GPT-2, DialoGPT,
BlenderBot, T5) the turns are joined by the separator as before. ``score`` scores the reply as
the assistant turn of that same prompt. Every ``Reply`` names its ``prompt_format``. Contexts
longer than the budget lose their oldest turns (templates) or oldest tokens (joined).

Decoder-only models are padded on the left, so every sequence in a batch ends where generation
starts and positions come from the attention mask; encoder–decoder models pad the encoder input
on the right. Single-example requests from concurrent threads share batches (``hf_batch``);
``stream`` yields the reply's text as it is generated.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from modelhub.backends.base import Backend, BackendError, Example, Reply, TokenScores, config_check
from modelhub.backends.hf_batch import BatchRun, Request, lane_get, run_alone
from modelhub.backends.hf_generate import GenerationSettings, TextPieces, generate_rows
from modelhub.backends.hf_prompts import CHAT_KEYS, Prompter, PromptSpec, prompt_spec
from modelhub.backends.hf_score import causal_logprobs, seq2seq_logprobs
from modelhub.decoding import Candidate, DecodingParams, decoding_validate, sample_and_rank

KINDS = ("auto", "causal", "seq2seq")
DTYPES = ("auto", "float32", "float16", "bfloat16")
MAX_BATCH_WAIT_MS = 1000
CHAT_MAX_NEW_TOKENS = 512  # a chat model's reply is a paragraph, not a dialogue turn
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
        chat_template: str = "auto",
        system_prompt: str | None = None,
        leading_bot: str | None = None,
        opening_user_turn: str | None = None,
        system_role: bool | None = None,
        batch_wait_ms: float = 5.0,
    ) -> None:
        config = dict(locals())
        _config_check(config)
        model_config = _model_config(Path(path))
        is_seq2seq = bool(getattr(model_config, "is_encoder_decoder", False))
        if kind == "auto":
            kind = "seq2seq" if is_seq2seq else "causal"
        self.path, self.kind, self.device, self.dtype = str(Path(path)), kind, device, dtype
        self.batch_size, self.max_context_tokens = batch_size, max_context_tokens
        self.timeout_s, self.batch_wait_ms = float(timeout_s), float(batch_wait_ms)
        self.max_positions: int | None = getattr(model_config, "n_positions", None) or getattr(
            model_config, "max_position_embeddings", None
        )
        self.spec: PromptSpec = prompt_spec(
            Path(path),
            chat_template=chat_template,
            turn_separator=turn_separator,
            chat_config={k: config[k] for k in CHAT_KEYS},
            seq2seq=kind == "seq2seq",
        )
        self.default_max_new_tokens = CHAT_MAX_NEW_TOKENS if self.spec.template else 40
        self._prompter: Prompter | None = None
        self._key: tuple[str, str, str, str] | None = None
        self._bind_lock = threading.Lock()

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
        self._key = key
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
        backend = getattr(tokenizer, "backend_tokenizer", None)
        if backend is not None:  # threads share it: no setting may change after this
            backend.no_truncation()
            backend.no_padding()
        return tokenizer, model.to(device).eval()

    def _loaded(self) -> tuple[Any, Any, Prompter]:
        """Return (tokenizer, model, prompter), loading on first use."""
        tokenizer, model = self._load()
        with self._bind_lock:
            if self._prompter is None:
                eos = model.generation_config.eos_token_id
                eos_ids = [eos] if isinstance(eos, int) else list(eos or [])
                self._prompter = self.spec.bind(tokenizer, eos_ids)
            return tokenizer, model, self._prompter

    def prompt(self, example: Example) -> str:
        """Return the prompt text the model is given for ``example`` (before truncation)."""
        return self._loaded()[2].render(example.turns)

    def _context_budget(self, max_new_tokens: int) -> int:
        if self.kind == "causal" and self.max_positions:
            return max(1, min(self.max_context_tokens, self.max_positions - max_new_tokens))
        return self.max_context_tokens

    def _settings(self, tokenizer: Any, prompter: Prompter) -> GenerationSettings:
        return GenerationSettings(
            self.kind == "seq2seq", tokenizer.pad_token_id, prompter.generate_eos, self.timeout_s
        )

    # -- generation ----------------------------------------------------------------------

    def generate(self, examples: Sequence[Example], params: Mapping[str, Any]) -> list[str]:
        return [reply.text for reply in self.replies(examples, params)]

    def replies(self, examples: Sequence[Example], params: Mapping[str, Any]) -> list[Reply]:
        """Return one Reply per example; one example alone may share a batch with other
        threads' (see ``hf_batch``)."""
        decoding = decoding_validate(params)
        if not examples:
            return []
        if decoding.strategy == "sample_and_rank":
            return self._ranked(examples, decoding)
        if len(examples) == 1 and self._shares_batches(decoding):
            return [self._shared_reply(examples[0], decoding)]
        return [samples[0] for samples in self.sample_replies(examples, decoding)]

    def sample_replies(
        self, examples: Sequence[Example], decoding: DecodingParams, *, n: int = 1
    ) -> list[list[Reply]]:
        """Return ``n`` Replies per example, run in this thread in batches of ``batch_size``."""
        import torch

        tokenizer, model, prompter = self._loaded()
        budget = self._context_budget(decoding.max_new_tokens)
        prompts = [prompter.prompt_ids(e.turns, budget) for e in examples]
        settings = self._settings(tokenizer, prompter)
        if decoding.seed is not None:
            torch.manual_seed(decoding.seed)
        out: list[list[Reply]] = []
        per_batch = max(1, self.batch_size // n) if n > 1 else self.batch_size
        for start in range(0, len(prompts), per_batch):
            chunk = prompts[start : start + per_batch]
            rows = generate_rows(model, chunk, decoding, settings, n=n)
            replies = [prompter.reply(row, decoding.max_new_tokens) for row in rows]
            out.extend(replies[i * n : (i + 1) * n] for i in range(len(chunk)))
        return out

    def _ranked(self, examples: Sequence[Example], decoding: DecodingParams) -> list[Reply]:
        """Meena's sample-and-rank: the most likely of ``num_samples`` samples per example."""
        n = decoding.num_samples
        samples = self.sample_replies(examples, decoding, n=n)
        flat = [reply for replies in samples for reply in replies]
        scores = self.score([e for e in examples for _ in range(n)], [r.text for r in flat])
        chosen = []
        for i, example in enumerate(examples):
            replies, mine = flat[i * n : (i + 1) * n], scores[i * n : (i + 1) * n]
            candidates = [
                Candidate(text=r.text, logprob=s.total, n_tokens=len(s.logprobs))
                for r, s in zip(replies, mine, strict=True)
            ]
            best = sample_and_rank(candidates, example.turns, decoding)
            chosen.append(next(r for r, c in zip(replies, candidates, strict=True) if c is best))
        return chosen

    # -- micro-batching and streaming ----------------------------------------------------

    def _shares_batches(self, decoding: DecodingParams) -> bool:
        # a seeded sample must not depend on which requests happened to share its batch
        return self.batch_wait_ms > 0 and (decoding.seed is None or not decoding.do_sample)

    def _request(self, example: Example, decoding: DecodingParams, *, stream: bool) -> Request:
        prompter = self._loaded()[2]
        budget = self._context_budget(decoding.max_new_tokens)
        return Request(prompter.prompt_ids(example.turns, budget), stream=stream)

    def _batch_run(self, decoding: DecodingParams) -> tuple[BatchRun, GenerationSettings]:
        tokenizer, model, prompter = self._loaded()
        settings = self._settings(tokenizer, prompter)
        run = partial(_rows_listened, model, decoding, settings)
        return run, settings

    def _submitted(self, request: Request, decoding: DecodingParams) -> Callable[[], bool]:
        """Send ``request`` to its lane (or a thread of its own when batches are not shared);
        return the function that says whether its answer may still come."""
        run, settings = self._batch_run(decoding)
        if not self._shares_batches(decoding):
            if decoding.seed is not None and decoding.do_sample:
                import torch

                torch.manual_seed(decoding.seed)
            return run_alone(run, request)
        key = (self._key, decoding, settings, self.batch_size, self.batch_wait_ms)
        lane = lane_get(key, run, self.batch_size, self.batch_wait_ms / 1000)
        lane.submit(request)
        return lane.alive

    def _shared_reply(self, example: Example, decoding: DecodingParams) -> Reply:
        request = self._request(example, decoding, stream=False)
        alive = self._submitted(request, decoding)
        _, row = request.next_message(alive)
        return self._loaded()[2].reply(row, decoding.max_new_tokens)

    def stream(self, example: Example, params: Mapping[str, Any]) -> Iterator[str | Reply]:
        """Yield the reply's text as the model writes it, then the Reply (whose text the
        pieces add up to: what ``replies`` gives). Sample-and-rank cannot stream."""
        decoding = decoding_validate(params)
        if decoding.strategy == "sample_and_rank":
            yield from super().stream(example, params)
            return
        prompter = self._loaded()[2]
        request = self._request(example, decoding, stream=True)
        pieces = TextPieces(prompter)
        try:
            alive = self._submitted(request, decoding)
            while True:
                kind, value = request.next_message(alive)
                if kind == "token":
                    if piece := pieces.push(value):
                        yield piece
                    continue
                reply = prompter.reply(value, decoding.max_new_tokens)
                if rest := pieces.rest(reply.text):
                    yield rest
                yield reply
                return
        finally:
            request.abandoned = True  # a closed stream: its batch need not run it

    # -- scoring -------------------------------------------------------------------------

    def score(self, examples: Sequence[Example], responses: Sequence[str]) -> list[TokenScores]:
        """Return the log-likelihood of each response token (and of the token that ends the
        turn: the template's end of turn, or EOS), given the prompt ``generate`` would use."""
        if len(examples) != len(responses):
            raise ValueError("score needs one response per example")
        if not examples:
            return []
        tokenizer, model, prompter = self._loaded()
        pairs = [
            prompter.score_ids(e.turns, r, self._context_budget)
            for e, r in zip(examples, responses, strict=True)
        ]
        logprobs = causal_logprobs if self.kind == "causal" else seq2seq_logprobs
        scores: list[TokenScores] = []
        for start in range(0, len(pairs), self.batch_size):
            batch = pairs[start : start + self.batch_size]
            contexts, targets = [c for c, _ in batch], [t for _, t in batch]
            scores.extend(logprobs(model, contexts, targets, tokenizer.pad_token_id))
        return scores


def _rows_listened(
    model: Any,
    decoding: DecodingParams,
    settings: GenerationSettings,
    prompts: list[list[int]],
    listeners: list[Any],
) -> list[list[int]]:
    return generate_rows(model, prompts, decoding, settings, listeners=listeners)


def _config_check(config: Mapping[str, Any]) -> None:
    """Raise ValueError for a configuration that cannot work, before anything is loaded."""
    config_check(
        HFLocal.name,
        config,
        required=["path"],
        types={
            "path": str,
            "batch_size": int,
            "max_context_tokens": int,
            "turn_separator": str,
            "timeout_s": (int, float),
            "chat_template": str,
            "batch_wait_ms": (int, float),
        },
    )
    kind, dtype, device = config["kind"], config["dtype"], config["device"]
    if kind not in KINDS or dtype not in DTYPES or device not in ("auto", "cpu", "cuda"):
        raise ValueError(
            f"hf_local: kind must be one of {KINDS}, dtype one of {DTYPES}, "
            f"device auto/cpu/cuda; got {kind!r}, {dtype!r}, {device!r}"
        )
    if config["batch_size"] < 1 or config["max_context_tokens"] < 1 or config["timeout_s"] <= 0:
        raise ValueError("hf_local: batch_size, max_context_tokens and timeout_s must be > 0")
    if not 0 <= config["batch_wait_ms"] <= MAX_BATCH_WAIT_MS:
        raise ValueError(
            f"hf_local: batch_wait_ms must be between 0 (no micro-batching) and "
            f"{MAX_BATCH_WAIT_MS}, not {config['batch_wait_ms']!r}"
        )
    if not config["chat_template"].strip():
        raise ValueError("hf_local: chat_template must be 'auto', 'none' or a jinja template")


def _model_config(folder: Path) -> Any:
    """Return the model's config (read without loading weights); ValueError when missing."""
    from transformers import AutoConfig

    if not (folder / "config.json").is_file():
        raise ValueError(f"hf_local: {str(folder)!r} is not a saved model folder (no config.json)")
    try:
        return AutoConfig.from_pretrained(folder, local_files_only=True)
    except (OSError, ValueError) as exc:
        raise ValueError(
            f"hf_local: cannot read the model config in {str(folder)!r}: {exc}"
        ) from None
