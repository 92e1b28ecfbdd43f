"""hf_local's finish reasons, token streaming and micro-batching of concurrent requests."""

import threading

import pytest

from modelhub.backends import BackendError, Example
from modelhub.backends.base import Reply
from modelhub.backends.conversation import ChatFormat
from modelhub.backends.hf_generate import TextPieces
from modelhub.backends.hf_local import HFLocal
from modelhub.backends.hf_prompts import PromptSpec
from modelhub.decoding import decoding_validate
from modelhub.tiny import DEFAULT_TEXTS, tokenizer_build

GREEDY = {"max_new_tokens": 8}
CONTEXTS = [Example(turns=tuple(DEFAULT_TEXTS[i : i + 1 + i % 3])) for i in range(10)]


@pytest.fixture(params=["causal", "seq2seq", "llama3"])
def model_path(request, tiny_causal, tiny_seq2seq, tiny_chat) -> str:
    paths = {"causal": tiny_causal, "seq2seq": tiny_seq2seq, "llama3": tiny_chat["llama3"]}
    return paths[request.param]


def _joined_prompter(tokenizer, separator=None):
    spec = PromptSpec(None, ChatFormat(), separator, seq2seq=False)
    return spec.bind(tokenizer, [tokenizer.eos_token_id])


def test_finish_reason_is_length_when_cut_and_stop_when_the_model_ended(
    tiny_causal, tiny_chat_trained
):
    cut = HFLocal(path=tiny_causal).replies(CONTEXTS[:3], {"max_new_tokens": 3})
    assert [r.finish_reason for r in cut] == ["length"] * 3 and all(r.truncated for r in cut)
    ended = HFLocal(path=tiny_chat_trained).replies(CONTEXTS[:3], {"max_new_tokens": 30})
    assert [r.finish_reason for r in ended] == ["stop"] * 3


def test_a_row_ends_at_its_first_stop_token_or_turn_separator():
    tokenizer = tokenizer_build()
    prompter = _joined_prompter(tokenizer, separator=" ok ")
    ids = tokenizer("i am fine", add_special_tokens=False)["input_ids"]
    eos, pad = tokenizer.eos_token_id, tokenizer.pad_token_id
    assert prompter.reply([*ids, eos, pad], 5) == Reply("i am fine", "stop", "joined:' ok '")
    assert prompter.reply(ids, 3).finish_reason == "length"
    assert prompter.reply(ids, 4).finish_reason == "stop"  # generate stopped before the limit
    more = tokenizer("i am ok and you", add_special_tokens=False)["input_ids"]
    assert prompter.reply(more, 5) == Reply("i am", "stop", "joined:' ok '")


def test_stream_pieces_add_up_to_the_greedy_reply(model_path):
    backend = HFLocal(path=model_path)
    for example in CONTEXTS[:3]:
        *pieces, final = list(backend.stream(example, GREEDY))
        assert final == backend.replies([example], GREEDY)[0]
        assert "".join(pieces) == final.text and len(pieces) > 1
        assert all(isinstance(p, str) and p for p in pieces)


def test_stream_pieces_never_split_a_character_nor_pass_the_turn_separator():
    tokenizer = tokenizer_build(["café au lait 😀 déjà vu, ok?", *DEFAULT_TEXTS], byte_level=True)
    prompter = _joined_prompter(tokenizer, separator="\n")
    text = "un café 😀 déjà\nnext turn"
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    assert any("\ufffd" in tokenizer.decode(ids[:i]) for i in range(len(ids)))  # bytes split
    pieces = TextPieces(prompter)
    emitted = [piece for token in ids if (piece := pieces.push(token))]
    final = prompter.reply(ids, 100)
    assert final.text == "un café 😀 déjà" and final.finish_reason == "stop"
    assert "".join(emitted) + pieces.rest(final.text) == final.text
    assert not any("\ufffd" in piece or "\n" in piece for piece in emitted)


def test_sample_and_rank_cannot_stream_so_it_yields_the_whole_reply(tiny_causal):
    backend = HFLocal(path=tiny_causal)
    meena = {"preset": "meena", "num_samples": 3, "max_new_tokens": 5, "seed": 1}
    *pieces, final = list(backend.stream(CONTEXTS[0], meena))
    assert pieces == [final.text] and isinstance(final, Reply)


def test_an_error_mid_stream_reaches_the_caller(tiny_chat, monkeypatch):
    backend = HFLocal(path=tiny_chat["chatml"])
    model = backend._loaded()[1]

    def failing(*args, streamer=None, **kwargs):
        streamer.put(kwargs["input_ids"])  # the prompt, then two tokens, then out of memory
        for token in (7, 8):
            streamer.put(kwargs["input_ids"][:, -1] * 0 + token)
        raise RuntimeError("CUDA out of memory")

    monkeypatch.setattr(model, "generate", failing)
    stream = backend.stream(CONTEXTS[0], GREEDY)
    assert next(stream)  # a piece came before the failure
    with pytest.raises(RuntimeError, match="out of memory"):
        list(stream)


def _concurrently(fn, n: int) -> list:
    results: list = [None] * n
    start = threading.Barrier(n)

    def run(i: int) -> None:
        start.wait()
        try:
            results[i] = fn(i)
        except Exception as exc:  # noqa: BLE001 - the test inspects it
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads), "a caller is stuck"
    return results


def _counted(monkeypatch, model) -> list[int]:
    rows: list[int] = []
    generate = model.generate

    def counting(*args, **kwargs):
        rows.append(kwargs["input_ids"].shape[0])
        return generate(*args, **kwargs)

    monkeypatch.setattr(model, "generate", counting)
    return rows


def test_concurrent_requests_share_batches_and_each_gets_its_own_reply(model_path, monkeypatch):
    backend = HFLocal(path=model_path, batch_size=16, batch_wait_ms=50)
    alone = [backend.sample_replies([e], decoding_validate(GREEDY))[0][0] for e in CONTEXTS]
    rows = _counted(monkeypatch, backend._loaded()[1])

    def bot_turn(i: int) -> Reply:
        if i % 2:
            return backend.replies([CONTEXTS[i]], GREEDY)[0]
        *pieces, final = list(backend.stream(CONTEXTS[i], GREEDY))
        assert "".join(pieces) == final.text
        return final

    assert _concurrently(bot_turn, len(CONTEXTS)) == alone
    assert len(rows) < len(CONTEXTS) and sum(rows) == len(CONTEXTS)


def test_without_batch_wait_every_request_runs_alone(tiny_causal, monkeypatch):
    backend = HFLocal(path=tiny_causal, batch_wait_ms=0)
    rows = _counted(monkeypatch, backend._loaded()[1])
    replies = _concurrently(lambda i: backend.replies([CONTEXTS[i]], GREEDY)[0], 4)
    assert all(isinstance(r, Reply) for r in replies) and rows == [1, 1, 1, 1]


def test_a_failing_batch_fails_each_of_its_callers(tiny_causal, monkeypatch):
    backend = HFLocal(path=tiny_causal, batch_wait_ms=50)
    model = backend._loaded()[1]

    def failing(*args, **kwargs):
        raise BackendError("hf_local: a batch of 6 took more than timeout_s=1")

    monkeypatch.setattr(model, "generate", failing)
    errors = _concurrently(lambda i: backend.replies([CONTEXTS[i]], GREEDY), 6)
    assert all(isinstance(e, BackendError) and "timeout_s" in str(e) for e in errors)
    monkeypatch.undo()
    assert backend.replies([CONTEXTS[0]], GREEDY)[0].text  # the lane still works


def test_a_caller_that_goes_away_does_not_block_the_others(tiny_causal):
    backend = HFLocal(path=tiny_causal, batch_wait_ms=20)
    stream = backend.stream(CONTEXTS[0], {"max_new_tokens": 30})
    assert next(stream)
    stream.close()  # the reader left mid-reply
    replies = _concurrently(lambda i: backend.replies([CONTEXTS[i]], GREEDY)[0], 4)
    assert all(isinstance(r, Reply) and r.text for r in replies)


def test_a_single_request_slower_than_the_timeout_is_an_error(tiny_causal):
    backend = HFLocal(path=tiny_causal, timeout_s=1e-6)
    with pytest.raises(BackendError, match="timeout_s"):
        backend.replies([CONTEXTS[0]], {"max_new_tokens": 20})
    with pytest.raises(BackendError, match="timeout_s"):
        list(backend.stream(CONTEXTS[0], {"max_new_tokens": 20}))
