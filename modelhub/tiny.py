"""Build tiny transformers models offline: a word-level tokenizer trained on a few sentences and
a randomly initialised GPT-2 or T5, saved with ``save_pretrained``.

Tests, the generation benchmark and the demo use them: nothing is ever downloaded. The models
are untrained unless ``tiny_model_train`` fits them to some texts, so their replies are word
salad; they exercise the real loading, batching, generation and scoring code all the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[BOS]", "[EOS]"]
DEFAULT_TEXTS = [
    "hi! how are you today?",
    "i am fine, thank you. and you?",
    "i'd love to go to japan too. have you been there?",
    "i got promoted at work and i am so proud!",
    "that is great news, congratulations!",
    "my dog died last week and i miss him.",
    "i am so sorry to hear that.",
    "what do you like to do on weekends?",
    "i like to play tennis and read books.",
    "do you have any pets? i don't know what to get.",
    "ok, that sounds nice. tell me more about it.",
]


def tokenizer_build(texts: Sequence[str] = DEFAULT_TEXTS) -> Any:
    """Train a lower-cased word-level tokenizer on ``texts``; return a PreTrainedTokenizerFast."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.train_from_iterator(texts, trainers.WordLevelTrainer(special_tokens=SPECIAL_TOKENS))
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        pad_token="[PAD]",
        unk_token="[UNK]",
        bos_token="[BOS]",
        eos_token="[EOS]",
    )


def tiny_model_build(
    folder: str | Path,
    *,
    kind: str = "causal",
    texts: Sequence[str] = DEFAULT_TEXTS,
    width: int = 32,
    layers: int = 2,
    heads: int = 2,
    positions: int = 128,
    seed: int = 0,
) -> Path:
    """Save a randomly initialised GPT-2 (``causal``) or T5 (``seq2seq``) and its tokenizer."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, T5Config, T5ForConditionalGeneration

    folder = Path(folder)
    tokenizer = tokenizer_build(texts)
    ids: dict[str, Any] = {"pad_token_id": 0, "bos_token_id": 2, "eos_token_id": 3}
    torch.manual_seed(seed)
    config: Any
    model: Any
    if kind == "causal":
        config = GPT2Config(
            vocab_size=len(tokenizer), n_positions=positions, n_embd=width, n_layer=layers,
            n_head=heads, **ids,
        )  # fmt: skip
        model = GPT2LMHeadModel(config)
    elif kind == "seq2seq":
        config = T5Config(
            vocab_size=len(tokenizer), d_model=width, d_ff=width * 2, d_kv=width // heads,
            num_layers=layers, num_heads=heads, **ids,
        )  # fmt: skip
        config.decoder_start_token_id = 0  # T5 starts decoding from the pad token
        model = T5ForConditionalGeneration(config)
    else:
        raise ValueError(f"kind must be 'causal' or 'seq2seq', not {kind!r}")
    with torch.no_grad():  # make the special tokens unlikely, so greedy replies are not empty
        model.get_input_embeddings().weight[: len(SPECIAL_TOKENS)] *= 0.05
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def tiny_model_train(
    folder: str | Path, dialogues: Sequence[Sequence[str]], *, steps: int = 200, seed: int = 0
) -> Path:
    """Fit the tiny causal model in ``folder`` to dialogues (turns joined by EOS); save it."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = Path(folder)
    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(folder, local_files_only=True)
    limit = model.config.n_positions
    rows = [
        tokenizer(tokenizer.eos_token.join(d) + tokenizer.eos_token)["input_ids"][-limit:]
        for d in dialogues
    ]
    torch.manual_seed(seed)
    optimiser = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    for step in range(steps):
        batch = [rows[(step * 8 + i) % len(rows)] for i in range(8)]
        width = max(len(r) for r in batch)
        ids = torch.tensor([r + [0] * (width - len(r)) for r in batch])
        mask = (
            torch.arange(width)[None, :] < torch.tensor([len(r) for r in batch])[:, None]
        ).long()
        labels = ids.masked_fill(mask == 0, -100)
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        loss.backward()
        optimiser.step()
        optimiser.zero_grad()
    model.eval()
    model.save_pretrained(folder)
    return folder
