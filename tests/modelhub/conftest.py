"""Fixtures of the model side: tiny transformers models built offline, the MiniLM encoder's
cache folder, and an OpenAI-compatible HTTP server on loopback."""

from __future__ import annotations

import os

# Nothing in these tests may reach a model hub: fail loudly instead of downloading.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import pytest  # noqa: E402

from modelhub.tiny import (  # noqa: E402
    CHAT_FAMILIES,
    DEFAULT_TEXTS,
    tiny_model_build,
    tiny_model_fit,
)


@pytest.fixture(scope="session")
def tiny_causal(tmp_path_factory) -> str:
    """A randomly initialised 2-layer GPT-2 and its word-level tokenizer, saved to a tmp dir."""
    return str(tiny_model_build(tmp_path_factory.mktemp("gpt2"), kind="causal"))


@pytest.fixture(scope="session")
def tiny_seq2seq(tmp_path_factory) -> str:
    """A randomly initialised 2-layer T5 and its word-level tokenizer, saved to a tmp dir."""
    return str(tiny_model_build(tmp_path_factory.mktemp("t5"), kind="seq2seq"))


@pytest.fixture(scope="session")
def tiny_chat(tmp_path_factory) -> dict[str, str]:
    """Tiny random Llama-shaped models whose tokenizers carry the real chat templates (and
    special tokens) of Llama 3, ChatML (Qwen), Mistral v0.3 and Gemma 2, by family name."""
    return {
        family: str(tiny_model_build(tmp_path_factory.mktemp(family), arch="llama", chat=family))
        for family in CHAT_FAMILIES
    }


@pytest.fixture(scope="session")
def tiny_chat_trained(tmp_path_factory) -> str:
    """A tiny Llama 3-templated model fitted to one-exchange conversations: it answers in
    words and ends its turn with <|eot_id|> (not its EOS, <|end_of_text|>)."""
    from transformers import AutoTokenizer

    folder = tiny_model_build(
        tmp_path_factory.mktemp("llama3-trained"), arch="llama", chat="llama3"
    )
    tokenizer = AutoTokenizer.from_pretrained(folder)
    n = len(DEFAULT_TEXTS)
    texts = [
        tokenizer.apply_chat_template(
            [
                {"role": "user", "content": DEFAULT_TEXTS[i]},
                {"role": "assistant", "content": DEFAULT_TEXTS[(i + 1) % n]},
            ],
            tokenize=False,
        )
        for i in range(n)
    ]
    return str(tiny_model_fit(folder, texts, steps=60, special_tokens=False))


@pytest.fixture
def cache_dir(tmp_path, monkeypatch) -> str:
    """An empty embeddings cache for the retrieval bot (via its environment variable)."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("EVALSITE_CACHE_DIR", str(folder))
    return str(folder)


@pytest.fixture
def celery_eager():
    """Run queued tasks in this process even when a broker is configured."""
    from evalsite.celery import app

    before = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = before
