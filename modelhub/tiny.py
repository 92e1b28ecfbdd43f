"""Build tiny transformers models offline: a word-level tokenizer trained on a few sentences and
a randomly initialised GPT-2, Llama or T5, saved with ``save_pretrained``.

Tests, the generation benchmark and the demo use them: nothing is ever downloaded. The models
are untrained unless ``tiny_model_train`` fits them to some texts, so their replies are word
salad; they exercise the real loading, batching, generation and scoring code all the same.
``chat`` gives the tokenizer the real chat template of a model family (Llama 3, ChatML as in
Qwen, Mistral v0.3, Gemma 2) with the special tokens it writes, so prompts are rendered exactly
as they are for the real models.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
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
# Words chat templates write around the turns (role names), so they are not unknown tokens.
CHAT_WORDS = "user assistant system model hello."

# The templates below are copied verbatim from the models' tokenizer_config.json.
LLAMA3_TEMPLATE = (
    "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
    "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim "
    "+ '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}"
    "{{ content }}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}"
)
CHATML_TEMPLATE = (  # Qwen2-Instruct
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n' }}{% endif %}"
    "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
MISTRAL_TEMPLATE = """{%- if messages[0]["role"] == "system" %}
    {%- set system_message = messages[0]["content"] %}
    {%- set loop_messages = messages[1:] %}
{%- else %}
    {%- set loop_messages = messages %}
{%- endif %}
{%- if not tools is defined %}
    {%- set tools = none %}
{%- endif %}
{%- set user_messages = loop_messages | selectattr("role", "equalto", "user") | list %}

{#- This block checks for alternating user/assistant messages, skipping tool calling messages #}
{%- set ns = namespace() %}
{%- set ns.index = 0 %}
{%- for message in loop_messages %}
    {%- if not (message.role == "tool" or message.role == "tool_results" or (message.tool_calls is defined and message.tool_calls is not none)) %}
        {%- if (message["role"] == "user") != (ns.index % 2 == 0) %}
            {{- raise_exception("After the optional system message, conversation roles must alternate user/assistant/user/assistant/...") }}
        {%- endif %}
        {%- set ns.index = ns.index + 1 %}
    {%- endif %}
{%- endfor %}

{{- bos_token }}
{%- for message in loop_messages %}
    {%- if message["role"] == "user" %}
        {%- if tools is not none and (message == user_messages[-1]) %}
            {{- "[AVAILABLE_TOOLS] [" }}
            {%- for tool in tools %}
                {%- set tool = tool.function %}
                {{- '{"type": "function", "function": {' }}
                {%- for key, val in tool.items() if key != "return" %}
                    {%- if val is string %}
                        {{- '"' + key + '": "' + val + '"' }}
                    {%- else %}
                        {{- '"' + key + '": ' + val|tojson }}
                    {%- endif %}
                    {%- if not loop.last %}
                        {{- ", " }}
                    {%- endif %}
                {%- endfor %}
                {{- "}}" }}
                {%- if not loop.last %}
                    {{- ", " }}
                {%- else %}
                    {{- "]" }}
                {%- endif %}
            {%- endfor %}
            {{- "[/AVAILABLE_TOOLS]" }}
            {%- endif %}
        {%- if loop.last and system_message is defined %}
            {{- "[INST] " + system_message + "\\n\\n" + message["content"] + "[/INST]" }}
        {%- else %}
            {{- "[INST] " + message["content"] + "[/INST]" }}
        {%- endif %}
    {%- elif message.tool_calls is defined and message.tool_calls is not none %}
        {{- "[TOOL_CALLS] [" }}
        {%- for tool_call in message.tool_calls %}
            {%- set out = tool_call.function|tojson %}
            {{- out[:-1] }}
            {%- if not tool_call.id is defined or tool_call.id|length != 9 %}
                {{- raise_exception("Tool call IDs should be alphanumeric strings with length 9!") }}
            {%- endif %}
            {{- ', "id": "' + tool_call.id + '"}' }}
            {%- if not loop.last %}
                {{- ", " }}
            {%- else %}
                {{- "]" + eos_token }}
            {%- endif %}
        {%- endfor %}
    {%- elif message["role"] == "assistant" %}
        {{- " " + message["content"]|trim + eos_token}}
    {%- elif message["role"] == "tool_results" or message["role"] == "tool" %}
        {%- if message.content is defined and message.content.content is defined %}
            {%- set content = message.content.content %}
        {%- else %}
            {%- set content = message.content %}
        {%- endif %}
        {{- '[TOOL_RESULTS] {"content": ' + content|string + ", " }}
        {%- if not message.tool_call_id is defined or message.tool_call_id|length != 9 %}
            {{- raise_exception("Tool call IDs should be alphanumeric strings with length 9!") }}
        {%- endif %}
        {{- '"call_id": "' + message.tool_call_id + '"}[/TOOL_RESULTS]' }}
    {%- else %}
        {{- raise_exception("Only user and assistant roles are supported, with the exception of an initial optional system message!") }}
    {%- endif %}
{%- endfor %}
"""  # noqa: E501
GEMMA2_TEMPLATE = (
    "{{ bos_token }}{% if messages[0]['role'] == 'system' %}"
    "{{ raise_exception('System role not supported') }}{% endif %}"
    "{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}"
    "{% endif %}{% if (message['role'] == 'assistant') %}{% set role = 'model' %}{% else %}"
    "{% set role = message['role'] %}{% endif %}{{ '<start_of_turn>' + role + '\n' + "
    "message['content'] | trim + '<end_of_turn>\n' }}{% endfor %}{% if add_generation_prompt %}"
    "{{'<start_of_turn>model\n'}}{% endif %}"
)


@dataclass(frozen=True)
class ChatFamily:
    """A model family's chat template and the special tokens its tokenizer has for it."""

    template: str
    bos: str | None
    eos: str
    extra: tuple[str, ...]  # the other special tokens the template writes (end of turn, …)


CHAT_FAMILIES = {
    "llama3": ChatFamily(
        LLAMA3_TEMPLATE,
        "<|begin_of_text|>",
        "<|end_of_text|>",
        ("<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"),
    ),
    "chatml": ChatFamily(CHATML_TEMPLATE, None, "<|endoftext|>", ("<|im_start|>", "<|im_end|>")),
    "mistral": ChatFamily(MISTRAL_TEMPLATE, "<s>", "</s>", ("[INST]", "[/INST]")),
    "gemma2": ChatFamily(GEMMA2_TEMPLATE, "<bos>", "<eos>", ("<start_of_turn>", "<end_of_turn>")),
}


def tokenizer_build(
    texts: Sequence[str] = DEFAULT_TEXTS,
    *,
    chat: str | None = None,
    vocab_size: int | None = None,
    byte_level: bool = False,
) -> Any:
    """Train a tokenizer on ``texts``; return a PreTrainedTokenizerFast.

    By default a lower-cased word-level one (replies are whole words). ``chat`` names a family
    of ``CHAT_FAMILIES``: its template and special tokens replace [BOS]/[EOS]. ``vocab_size``
    pads the vocabulary with filler words (a model as wide as a real one: 128,256 for Llama 3).
    ``byte_level`` trains a GPT-2-style byte-level BPE instead, whose tokens split multi-byte
    characters (for streaming tests).
    """
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    family = CHAT_FAMILIES[chat] if chat else None
    bos, eos = (family.bos, family.eos) if family else ("[BOS]", "[EOS]")
    extra = list(family.extra) if family else []
    specials = ["[PAD]", "[UNK]", *([bos] if bos else []), eos, *extra]
    texts = [*texts, CHAT_WORDS] if family else list(texts)
    tokenizer = Tokenizer(models.BPE() if byte_level else models.WordLevel(unk_token="[UNK]"))
    if byte_level:
        tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tokenizer.decoder = decoders.ByteLevel()
        trainer: Any = trainers.BpeTrainer(
            vocab_size=400, special_tokens=specials,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        )  # fmt: skip
    else:
        tokenizer.normalizer = normalizers.Lowercase()
        tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
        trainer = trainers.WordLevelTrainer(special_tokens=specials)
    tokenizer.train_from_iterator(texts, trainer)
    if vocab_size is not None and not byte_level:
        tokenizer = _vocabulary_padded(tokenizer, vocab_size, specials)
    chat_kwargs = (
        {"extra_special_tokens": extra, "chat_template": family.template} if family else {}
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        pad_token="[PAD]",
        unk_token="[UNK]",
        bos_token=bos,
        eos_token=eos,
        **chat_kwargs,
    )


def _vocabulary_padded(tokenizer: Any, size: int, specials: Sequence[str]) -> Any:
    """Return the word-level tokenizer with filler words added up to ``size`` entries."""
    from tokenizers import Tokenizer, models

    vocab = dict(tokenizer.get_vocab())
    fillers = (f"w{i}" for i in range(size))
    while len(vocab) < size:
        word = next(fillers)
        vocab.setdefault(word, len(vocab))
    padded = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    padded.normalizer, padded.pre_tokenizer = tokenizer.normalizer, tokenizer.pre_tokenizer
    padded.add_special_tokens(list(specials))
    return padded


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
    arch: str = "gpt2",
    chat: str | None = None,
    vocab_size: int | None = None,
    byte_level: bool = False,
) -> Path:
    """Save a randomly initialised model and its tokenizer: GPT-2 or Llama (``causal``, by
    ``arch``) or T5 (``seq2seq``). ``chat``, ``vocab_size``, ``byte_level``: see
    ``tokenizer_build``."""
    import torch

    folder = Path(folder)
    tokenizer = tokenizer_build(texts, chat=chat, vocab_size=vocab_size, byte_level=byte_level)
    ids: dict[str, Any] = {
        "pad_token_id": tokenizer.pad_token_id,
        "bos_token_id": tokenizer.bos_token_id,
        "eos_token_id": tokenizer.eos_token_id,
    }
    torch.manual_seed(seed)
    shape = {"width": width, "layers": layers, "heads": heads, "positions": positions}
    model = _model_random(kind, arch, len(tokenizer), shape, ids)
    with torch.no_grad():  # make the special tokens unlikely, so greedy replies are not empty
        special = sorted(set(tokenizer.all_special_ids))
        model.get_input_embeddings().weight[special] *= 0.05
        output = model.get_output_embeddings()
        if (
            output is not None
            and output.weight.data_ptr() != model.get_input_embeddings().weight.data_ptr()
        ):
            output.weight[special] *= 0.05
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def _model_random(kind: str, arch: str, vocab: int, shape: dict[str, int], ids: dict) -> Any:
    from transformers import (
        GPT2Config,
        GPT2LMHeadModel,
        LlamaConfig,
        LlamaForCausalLM,
        T5Config,
        T5ForConditionalGeneration,
    )  # fmt: skip

    width, layers, heads = shape["width"], shape["layers"], shape["heads"]
    config: Any
    if kind == "causal" and arch == "gpt2":
        config = GPT2Config(
            vocab_size=vocab, n_positions=shape["positions"], n_embd=width, n_layer=layers,
            n_head=heads, **ids,
        )  # fmt: skip
        return GPT2LMHeadModel(config)
    if kind == "causal" and arch == "llama":
        config = LlamaConfig(
            vocab_size=vocab, hidden_size=width, intermediate_size=width * 2,
            num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=heads,
            max_position_embeddings=shape["positions"], tie_word_embeddings=False, **ids,
        )  # fmt: skip
        return LlamaForCausalLM(config)
    if kind == "seq2seq":
        config = T5Config(
            vocab_size=vocab, d_model=width, d_ff=width * 2, d_kv=width // heads,
            num_layers=layers, num_heads=heads, **ids,
        )  # fmt: skip
        config.decoder_start_token_id = ids["pad_token_id"]  # T5 starts from the pad token
        return T5ForConditionalGeneration(config)
    raise ValueError(f"kind must be 'causal' (arch gpt2/llama) or 'seq2seq', not {kind!r}/{arch!r}")


# Called every ``FIT_REPORT_EVERY`` steps and after the last: (step, steps, loss, seconds).
FitProgress = Callable[[int, int, float, float], object]
FIT_REPORT_EVERY = 25


def tiny_model_train(
    folder: str | Path,
    dialogues: Sequence[Sequence[str]],
    *,
    steps: int = 200,
    seed: int = 0,
    progress: FitProgress | None = None,
) -> Path:
    """Fit the tiny causal model in ``folder`` to dialogues (turns joined by EOS); save it."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    texts = [tokenizer.eos_token.join(d) + tokenizer.eos_token for d in dialogues]
    return tiny_model_fit(folder, texts, steps=steps, seed=seed, progress=progress)


def tiny_model_fit(
    folder: str | Path,
    texts: Sequence[str],
    *,
    steps: int = 200,
    seed: int = 0,
    special_tokens: bool = True,
    progress: FitProgress | None = None,
) -> Path:
    """Fit the tiny causal model in ``folder`` to ``texts`` (e.g. conversations rendered with
    its chat template, ``special_tokens=False`` as templates write their own); save it.

    Fits on one CPU thread (the caller's thread count is restored): the matrices are so small
    that a second thread only adds synchronisation, and on a busy 2-core machine PyTorch's
    spinning threads made the demo's 300 steps take 141 s instead of 11 s. ``progress`` hears
    the loss every ``FIT_REPORT_EVERY`` steps and after the last.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = Path(folder)
    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(folder, local_files_only=True)
    config = model.config
    limit = getattr(config, "n_positions", None) or config.max_position_embeddings
    rows = [tokenizer(t, add_special_tokens=special_tokens)["input_ids"][-limit:] for t in texts]
    torch.manual_seed(seed)
    optimiser = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    started = time.monotonic()
    try:
        for step in range(1, steps + 1):
            batch = [rows[((step - 1) * 8 + i) % len(rows)] for i in range(8)]
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
            if progress is not None and (step % FIT_REPORT_EVERY == 0 or step == steps):
                progress(step, steps, float(loss.item()), time.monotonic() - started)
    finally:
        torch.set_num_threads(threads)
    model.eval()
    model.save_pretrained(folder)
    return folder
