"""The OpenAI-compatible HTTP backend against a real server on loopback."""

from __future__ import annotations

import email.utils
import json
import os
import threading
import time
import urllib.request
import warnings

import httpx
import pytest

from modelhub.backends import (
    BackendError,
    Example,
    TransientBackendError,
    backend_load,
    http_client,
)
from modelhub.backends.base import Reply
from modelhub.backends.conversation import conversation_roles, messages_alternate
from modelhub.backends.http_client import retry_after_s
from modelhub.backends.openai_http import _Pieces
from tests.modelhub.fake_openai import ROLES_REFUSED, FakeServer, openai_error

EXAMPLES = [Example(turns=("Hi!", "Hello! How are you?", "Great. Any plans?"))]


@pytest.fixture
def server():
    fake = FakeServer()
    yield fake
    http_client.clients_close()
    fake.close()


def _backend(server: FakeServer, **config):
    return backend_load(
        "openai_http",
        {"base_url": server.url, "model": "m", "backoff_s": 0.01, "timeout_s": 2, **config},
    )


def test_chat_completion_sends_alternating_roles_and_returns_the_reply(server):
    backend = _backend(server, system_prompt="Be kind.")
    assert backend.generate(EXAMPLES, {}) == ["reply 0 to Great. Any plans?"]
    request = server.requests[0]
    assert request["path"] == "/v1/chat/completions"
    assert [m["role"] for m in request["messages"]] == ["system", "user", "assistant", "user"]
    assert request["temperature"] == 0 and request["n"] == 1 and "top_k" not in request


def test_completions_api_joins_the_turns_into_a_prompt(server):
    backend = _backend(server, api="completions")
    params = {"strategy": "sample", "top_k": 40, "top_p": 0.9, "seed": 7}
    assert backend.generate(EXAMPLES, params) == ["reply 0 to Great. Any plans?"]
    request = server.requests[0]
    assert request["path"] == "/v1/completions"
    assert request["prompt"] == "Hi!\nHello! How are you?\nGreat. Any plans?\n"
    assert (request["top_k"], request["top_p"], request["seed"]) == (40, 0.9, 7)
    assert request["stop"] == ["\n"]


@pytest.mark.parametrize("api", ["chat", "completions"])
def test_sample_and_rank_asks_for_n_samples_and_keeps_the_most_likely(server, api):
    backend = _backend(server, api=api)
    replies = backend.generate(EXAMPLES, {"preset": "meena", "num_samples": 4})
    assert replies == ["reply 2 to Great. Any plans?"]
    assert server.requests[0]["n"] == 4 and server.requests[0]["logprobs"]


def test_a_slow_server_times_out_after_bounded_retries(server):
    server.mode = "slow"
    backend = _backend(server, timeout_s=0.2, max_retries=1)
    started = time.monotonic()
    with pytest.raises(TransientBackendError, match="failed 2 times.*timeout_s=0.2"):
        backend.generate(EXAMPLES, {})
    assert time.monotonic() - started < 3
    assert len(server.requests) == 2


def test_a_server_error_is_retried_then_reported(server):
    server.mode = "500"
    with pytest.raises(TransientBackendError, match="HTTP 500.*out of memory"):
        _backend(server, max_retries=2).generate(EXAMPLES, {})
    assert len(server.requests) == 3


def test_a_transient_error_that_clears_is_retried_transparently(server):
    server.mode = "flaky"  # two 500s, then answers
    assert _backend(server, max_retries=3).generate(EXAMPLES, {}) == [
        "reply 0 to Great. Any plans?"
    ]


@pytest.mark.parametrize(
    ("mode", "message"),
    [("garbage", "non-JSON"), ("wrong_schema", "malformed choice"), ("400", "HTTP 400")],
)
def test_garbage_and_client_errors_fail_at_once_with_a_clear_message(server, mode, message):
    server.mode = mode
    with pytest.raises(BackendError, match=message) as caught:
        _backend(server, max_retries=3).generate(EXAMPLES, {})
    assert not isinstance(caught.value, TransientBackendError)
    assert len(server.requests) == 1


def test_a_server_that_is_down_is_a_transient_error(server):
    url = server.url
    server.close()
    backend = backend_load(
        "openai_http", {"base_url": url, "model": "m", "max_retries": 1, "backoff_s": 0}
    )
    with pytest.raises(TransientBackendError, match="cannot reach the server"):
        backend.generate(EXAMPLES, {})


def test_requests_run_at_most_concurrency_at_a_time(server):
    server.mode = "concurrent"
    examples = [Example(turns=(f"turn {i}",)) for i in range(12)]
    replies = _backend(server, concurrency=3).generate(examples, {})
    assert replies == [f"reply 0 to turn {i}" for i in range(12)]  # in order
    assert server.max_in_flight == 3


def test_sample_and_rank_needs_log_probabilities(server, monkeypatch):
    backend = _backend(server)
    monkeypatch.setattr(
        backend,
        "_body",
        lambda e, d: {"model": "m", "messages": [{"role": "user", "content": "x"}], "n": 2},
    )
    with pytest.raises(BackendError, match="log-probabilities"):
        backend.generate(EXAMPLES, {"preset": "meena", "num_samples": 2})


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"model": "m"}, "needs 'base_url'"),
        ({"base_url": "gpu:8000", "model": "m"}, "http"),
        ({"base_url": "http://x/v1", "model": "m", "api": "embeddings"}, "api must be"),
        ({"base_url": "http://x/v1", "model": "m", "concurrency": 0}, "concurrency"),
        ({"base_url": "http://x/v1", "model": "m", "api_key_env": "NO_SUCH_VAR_X"}, "not set"),
        ({"base_url": "http://x/v1", "model": "m", "api_key": "sk-1"}, "unknown option"),
        ({"base_url": "http://x/v1", "model": "m", "leading_bot": "bot"}, "leading_bot must"),
        ({"base_url": "http://x/v1", "model": "m", "system_role": "no"}, "'system_role' must"),
        ({"base_url": "http://x/v1", "model": "m", "opening_user_turn": " "}, "non-empty"),
        (
            {"base_url": "http://x/v1", "model": "m", "api": "completions", "system_role": False},
            "api 'chat' only",
        ),
    ],
)
def test_bad_configuration_is_a_clear_error(config, message):
    with pytest.raises(ValueError, match=message):
        backend_load("openai_http", config)


# The pooled client: connections, Retry-After, concurrency, reasoning models.

OK_BODY = b'{"choices": [{"message": {"content": "late reply"}, "finish_reason": "stop"}]}'


def _urllib_post(url: str) -> None:
    """POST the way the old client did: urllib, a new connection per request."""
    data = json.dumps({"model": "m", "messages": [{"role": "user", "content": "x"}]}).encode()
    request = urllib.request.Request(url, data, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=2) as response:
        response.read()


def test_requests_reuse_kept_alive_connections(server):
    for _ in range(20):
        _urllib_post(server.url + "/chat/completions")
    assert server.connections == 20  # the fake counts what the old client did: one per request
    server.connections = 0
    examples = [Example(turns=(f"turn {i}",)) for i in range(20)]
    backend = _backend(server, concurrency=1)
    assert len(backend.generate(examples[:10], {})) == 10
    assert len(backend.generate(examples[10:], {})) == 10  # a later batch, the same pool
    assert len(server.requests) == 40 and server.connections == 1


def test_parallel_requests_open_no_more_connections_than_the_concurrency(server):
    examples = [Example(turns=(f"turn {i}",)) for i in range(30)]
    assert len(_backend(server, concurrency=2).generate(examples, {})) == 30
    assert 1 <= server.connections <= 2


def test_a_429_waits_the_seconds_of_retry_after_then_retries_once(server):
    server.script = [(429, {"Retry-After": "1"}, b'{"error": {"message": "slow down"}}')]
    assert _backend(server).generate(EXAMPLES, {}) == ["reply 0 to Great. Any plans?"]
    assert len(server.requests) == 2
    assert server.arrivals[1] - server.arrivals[0] >= 1.0  # backoff_s alone would be 0.01


def test_retry_after_as_an_http_date_is_honoured(server, monkeypatch):
    waits: list[float] = []
    monkeypatch.setattr(http_client, "_wait", waits.append)
    date = email.utils.formatdate(time.time() + 20, usegmt=True)
    server.script = [(429, {"Retry-After": date}, b"{}")]
    assert _backend(server, retry_budget_s=60).generate(EXAMPLES, {}) == [
        "reply 0 to Great. Any plans?"
    ]
    assert len(waits) == 1 and 18 <= waits[0] <= 20 * 1.1 + 1  # whole seconds, then jitter


def test_a_503_is_retried_and_a_400_is_not(server):
    server.script = [(503, {"Retry-After": "0"}, b'{"error": "loading the model"}')]
    assert _backend(server).generate(EXAMPLES, {}) == ["reply 0 to Great. Any plans?"]
    assert len(server.requests) == 2
    server.requests.clear()
    server.script = [(400, {}, openai_error("top_k"))]
    with pytest.raises(BackendError, match="HTTP 400: Unsupported parameter: 'top_k'") as caught:
        _backend(server, max_retries=3).generate(EXAMPLES, {})
    assert not isinstance(caught.value, TransientBackendError)
    assert "param=top_k" in str(caught.value)
    assert len(server.requests) == 1


def test_a_long_error_body_is_cut_in_the_message(server):
    server.script = [(422, {}, json.dumps({"detail": "x" * 5000}).encode())]
    with pytest.raises(BackendError, match="HTTP 422: xxx") as caught:
        _backend(server).generate(EXAMPLES, {})
    assert len(str(caught.value)) < 500 and str(caught.value).endswith("…")


def test_retries_exhausted_is_a_clear_transient_error(server, monkeypatch):
    waits: list[float] = []
    monkeypatch.setattr(http_client, "_wait", waits.append)
    server.script = [(429, {"Retry-After": "2"}, b'{"error": {"message": "rate limited"}}')] * 3
    with pytest.raises(TransientBackendError, match="failed 3 times.*HTTP 429: rate limited"):
        _backend(server, max_retries=2).generate(EXAMPLES, {})
    assert len(server.requests) == 3
    assert len(waits) == 2 and all(2 <= w <= 2.2 for w in waits)


def test_a_retry_after_past_the_budget_fails_at_once(server, monkeypatch):
    waits: list[float] = []
    monkeypatch.setattr(http_client, "_wait", waits.append)
    server.script = [(503, {"Retry-After": "120"}, b"{}")]
    with pytest.raises(TransientBackendError, match="past retry_budget_s=30.*HTTP 503"):
        _backend(server, max_retries=5).generate(EXAMPLES, {})
    assert len(server.requests) == 1 and waits == []


def test_backoff_is_exponential_and_jittered(server, monkeypatch):
    waits: list[float] = []
    monkeypatch.setattr(http_client, "_wait", waits.append)
    server.mode = "500"
    with pytest.raises(TransientBackendError):
        _backend(server, max_retries=4, backoff_s=1.0).generate(EXAMPLES, {})
    assert len(waits) == 4 and waits != [1.0, 2.0, 4.0, 8.0]
    for n, wait in enumerate(waits):
        assert 2**n / 2 <= wait <= 2**n


def test_a_reasoning_endpoint_sends_max_completion_tokens_and_no_temperature(server):
    with pytest.raises(BackendError, match="HTTP 400: Unsupported parameter: 'max_tokens'"):
        _backend(server, model="o4-mini").generate(EXAMPLES, {})  # what the old client did
    backend = _backend(server, model="o4-mini", reasoning=True)
    assert backend.generate(EXAMPLES, {"max_new_tokens": 500, "seed": 3}) == [
        "reply 0 to Great. Any plans?"
    ]
    request = server.requests[-1]
    assert request["max_completion_tokens"] == 500 and request["seed"] == 3
    assert not {"max_tokens", "temperature", "top_p", "top_k", "logprobs"} & set(request)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"strategy": "sample", "temperature": 0.7}, "take no temperature"),
        ({"preset": "meena"}, "no log-probabilities"),
    ],
)
def test_a_reasoning_endpoint_refuses_decoding_it_cannot_apply(server, params, message):
    with pytest.raises(BackendError, match=message):
        _backend(server, model="o4-mini", reasoning=True).generate(EXAMPLES, params)
    assert server.requests == []


def test_a_reasoning_model_that_spent_its_tokens_thinking_is_a_clear_error(server):
    body = b'{"choices": [{"message": {"content": ""}, "finish_reason": "length"}]}'
    server.script = [(200, {}, body)]
    with pytest.raises(BackendError, match="raise max_new_tokens"):
        _backend(server, model="o4-mini", reasoning=True).generate(EXAMPLES, {})


def test_the_concurrency_limit_holds_across_callers_in_a_process(server):
    server.mode, server.delay_s = "concurrent", 0.05
    results: list[list[str]] = []

    def caller(k: int) -> None:
        examples = [Example(turns=(f"caller {k} turn {i}",)) for i in range(5)]
        results.append(_backend(server, concurrency=2).generate(examples, {}))

    threads = [threading.Thread(target=caller, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 4 and len(server.requests) == 20
    assert server.max_in_flight == 2  # 4 callers × 2 threads each, 2 at a time in all


def test_a_forked_child_makes_its_own_client(server):
    parent = http_client.pooled_client(server.url)
    _backend(server).generate(EXAMPLES, {})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads: the child
        pid = os.fork()  # only uses its own
    if pid == 0:
        try:
            fresh = not http_client._clients and http_client.pooled_client(server.url) is not parent
            replies = _backend(server).generate(EXAMPLES, {})
            os._exit(0 if fresh and replies == ["reply 0 to Great. Any plans?"] else 1)
        except BaseException:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert http_client.pooled_client(server.url) is parent  # the parent's is untouched
    assert server.connections == 2


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("3", 3.0),
        ("1.5", 1.5),
        (" 0 ", 0.0),
        ("Wed, 21 Oct 2015 07:28:30 GMT", 30.0),
        ("Wed, 21 Oct 2015 07:27:00 GMT", 0.0),  # in the past: retry now
        ("-1", None),
        ("soon", None),
        ("", None),
        (None, None),
    ],
)
def test_retry_after_reads_seconds_and_http_dates(value, expected):
    now = email.utils.parsedate_to_datetime("Wed, 21 Oct 2015 07:28:00 GMT").timestamp()
    assert retry_after_s(value, now=now) == expected


# Conversations every chat template accepts (issue #28).

BOT_OPENED = Example(turns=("Hi!", "Hello! How are you?"))  # interactive SSA: the bot greets


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (
            {},
            [("user", "Hello."), ("assistant", "Hi!"), ("user", "Hello! How are you?")],
        ),
        (
            {"system_prompt": "Be kind.", "opening_user_turn": "Hey."},
            [
                ("system", "Be kind."),
                ("user", "Hey."),
                ("assistant", "Hi!"),
                ("user", "Hello! How are you?"),
            ],
        ),
        (
            {"leading_bot": "system", "system_prompt": "Be kind."},
            [
                ("system", "Be kind.\n\nYou opened the conversation by saying: Hi!"),
                ("user", "Hello! How are you?"),
            ],
        ),
        (
            {"leading_bot": "system", "system_role": False},
            [("user", "You opened the conversation by saying: Hi!\n\nHello! How are you?")],
        ),
        (
            {"system_prompt": "Be kind.", "system_role": False},
            [
                ("user", "Be kind.\n\nHello."),
                ("assistant", "Hi!"),
                ("user", "Hello! How are you?"),
            ],
        ),
    ],
)
def test_a_context_the_bot_opened_is_sent_user_first_and_alternating(server, config, expected):
    reply = _backend(server, **config).replies([BOT_OPENED], {})[0]
    assert reply.text.endswith("Hello! How are you?")  # the fake refuses bad roles (400)
    messages = server.requests[0]["messages"]
    assert [(m["role"], m["content"]) for m in messages] == expected
    assert reply.prompt_format.startswith("messages:leading_bot=")


@pytest.mark.parametrize("leading_bot", ["user", "system"])
@pytest.mark.parametrize("n_turns", [1, 2, 3, 4, 5])
def test_every_context_length_is_accepted_by_a_strict_template(server, leading_bot, n_turns):
    example = Example(turns=tuple(f"turn {i}" for i in range(n_turns)))
    backend = _backend(server, leading_bot=leading_bot, system_prompt="Be kind.")
    assert backend.generate([example], {}) == [f"reply 0 to turn {n_turns - 1}"]
    assert messages_alternate(server.requests[0]["messages"]) is None


def test_the_old_role_order_is_refused_by_a_strict_template(server, monkeypatch):
    old = [
        {"role": r, "content": t}
        for r, t in zip(conversation_roles(2), BOT_OPENED.turns, strict=True)
    ]
    assert [m["role"] for m in old] == ["assistant", "user"]  # what the backend used to send
    response = httpx.post(
        server.url + "/chat/completions", json={"model": "m", "messages": old}, timeout=2
    )
    assert response.status_code == 400
    assert response.json()["error"]["message"] == ROLES_REFUSED
    backend = _backend(server, max_retries=3)
    monkeypatch.setattr(backend, "_messages", lambda turns: old)
    with pytest.raises(BackendError, match="HTTP 400: Conversation roles must alternate") as e:
        backend.generate([BOT_OPENED], {})
    assert not isinstance(e.value, TransientBackendError)
    assert len(server.requests) == 2  # refused at once, not retried


# Finish reasons and prompt formats.


def test_replies_say_length_when_cut_at_max_new_tokens_and_stop_otherwise(server):
    backend = _backend(server)
    [cut] = backend.replies(EXAMPLES, {"max_new_tokens": 3})
    [whole] = backend.replies(EXAMPLES, {})
    assert (cut.text, cut.finish_reason, cut.truncated) == ("reply 0 to", "length", True)
    assert (whole.text, whole.finish_reason) == ("reply 0 to Great. Any plans?", "stop")
    assert whole.prompt_format == "messages:leading_bot=user,opening='Hello.',system_role=yes"
    assert backend.generate(EXAMPLES, {"max_new_tokens": 3}) == ["reply 0 to"]


def test_a_completions_reply_cut_at_the_separator_is_complete(server):
    server.completion_suffix = "\nAnd you?"  # a server that ignores stop writes the next turn
    backend = _backend(server, api="completions")
    reply = backend.replies(EXAMPLES, {"max_new_tokens": 7})[0]
    assert server.requests[0]["max_tokens"] == 7  # the fake cut it: finish_reason "length"
    assert reply == Reply("reply 0 to Great. Any plans?", "stop", "joined:'\\n'")


@pytest.mark.parametrize(
    ("sent", "kept"),
    [("stop", "stop"), ("length", "length"), ("content_filter", "content_filter"),
     ("abort", "stop"), (None, "stop")],
)  # fmt: skip
def test_the_server_finish_reason_is_kept_when_known(server, sent, kept):
    choice = {"message": {"content": "hi"}, "finish_reason": sent}
    server.script = [(200, {}, json.dumps({"choices": [choice]}).encode())]
    assert _backend(server).replies(EXAMPLES, {})[0].finish_reason == kept


def test_sample_and_rank_keeps_the_finish_reason_of_the_chosen_sample(server):
    choices = [
        {
            "message": {"content": f"sample {i}"},
            "logprobs": {"content": [{"logprob": -0.1 if i == 1 else -2.0}]},
            "finish_reason": "length" if i == 1 else "stop",
        }
        for i in range(3)
    ]
    server.script = [(200, {}, json.dumps({"choices": choices}).encode())]
    reply = _backend(server).replies(EXAMPLES, {"preset": "meena", "num_samples": 3})[0]
    assert (reply.text, reply.finish_reason) == ("sample 1", "length")


def test_chat_endpoints_default_to_long_replies_and_completions_to_short(server):
    assert _backend(server).default_max_new_tokens == 512
    assert _backend(server, api="completions").default_max_new_tokens == 40


# Streaming: server-sent events read as they arrive.

LONG = Example(turns=("Tell me about your week, from the start to the very end please",))
LONG_REPLY = "reply 0 to " + LONG.turns[0]


def _collect(stream) -> tuple[list[str], Reply, list[float]]:
    """Read a stream to its end: the pieces, the final Reply and when each piece came."""
    pieces, times, last = [], [], None
    for item in stream:
        assert last is None, "nothing may follow the Reply"
        if isinstance(item, Reply):
            last = item
        else:
            pieces.append(item)
            times.append(time.monotonic())
    assert isinstance(last, Reply)
    return pieces, last, times


def _free_slots(backend) -> int:
    """Count the endpoint's free concurrency slots (taking and giving them back)."""
    semaphore = http_client.endpoint_semaphore(backend.base_url, backend.model, backend.concurrency)
    taken = 0
    while semaphore.acquire(blocking=False):
        taken += 1
    for _ in range(taken):
        semaphore.release()
    return taken


def test_a_stream_yields_pieces_as_the_server_writes_them(server):
    server.token_delay_s = 0.04
    backend = _backend(server)
    started = time.monotonic()
    pieces, reply, times = _collect(backend.stream(LONG, {}))
    assert server.requests[0]["stream"] is True and len(pieces) == len(LONG_REPLY.split())
    assert "".join(pieces) == reply.text == LONG_REPLY == backend.generate([LONG], {})[0]
    assert (reply.finish_reason, reply.prompt_format) == ("stop", backend.prompt_format)
    total = times[-1] - started
    assert times[0] - started < total / 3  # the first piece long before the whole reply
    assert times[-1] - times[0] >= 0.8 * 0.04 * (len(pieces) - 1)  # spread over the delays
    assert _free_slots(backend) == backend.concurrency
    assert server.connections == 1  # read to its end, the stream's connection is kept alive


@pytest.mark.parametrize("chunked", [True, False])
def test_a_completions_stream_stops_at_the_turn_separator(server, chunked):
    server.completion_suffix, server.stream_chunked = "\nAnd you? Tell me", chunked
    backend = _backend(server, api="completions")
    pieces, reply, _ = _collect(backend.stream(EXAMPLES[0], {}))
    assert "".join(pieces) == reply.text == "reply 0 to Great. Any plans?"
    assert reply == backend.replies(EXAMPLES, {})[0]
    assert server.requests[0]["stop"] == ["\n"] and server.requests[0]["stream"] is True


def test_a_stream_cut_at_max_new_tokens_ends_with_length(server):
    pieces, reply, _ = _collect(_backend(server).stream(LONG, {"max_new_tokens": 4}))
    assert "".join(pieces) == reply.text == "reply 0 to Tell"
    assert reply.finish_reason == "length"


@pytest.mark.parametrize(
    ("text", "separator"),
    [(" Hi there \nNext turn", "\n"), ("\n Hi there  ", "\n"), ("Hi th<sep> ere<sep>x", "<sep>"),
     ("Hi <se", "<sep>"), ("  ", "\n"), ("a  b \n\n c", None)],
)  # fmt: skip
def test_pieces_join_into_the_reply_the_non_streaming_path_keeps(text, separator):
    expected = text.lstrip().split(separator, 1)[0].strip() if separator else text.strip()
    for size in range(1, len(text) + 1):
        pieces = _Pieces(separator)
        shown = [pieces.feed(text[i : i + size]) for i in range(0, len(text), size)]
        shown.append(pieces.flush())
        assert "".join(shown) == pieces.text == expected, size


@pytest.mark.parametrize("chunked", [True, False])
def test_a_stream_that_breaks_after_pieces_is_a_transient_error(server, chunked):
    server.stream_break_after, server.stream_chunked = 3, chunked
    backend = _backend(server, max_retries=3)
    pieces: list[str] = []
    with pytest.raises(TransientBackendError):
        for item in backend.stream(LONG, {}):
            pieces.append(item)
    assert "".join(map(str, pieces)) == "reply 0 to"  # shown, then to be dropped
    assert len(server.requests) == 1  # not asked again behind the reader's back
    assert _free_slots(backend) == backend.concurrency


def test_a_failure_before_the_first_piece_is_retried(server):
    server.script = [(500, {}, b'{"error": {"message": "out of memory"}}')]
    pieces, reply, _ = _collect(_backend(server).stream(LONG, {}))
    assert "".join(pieces) == reply.text == LONG_REPLY and len(server.requests) == 2
    server.requests.clear()
    server.stream_break_after = 0  # the role event, then the connection drops: nothing shown
    with pytest.raises(TransientBackendError, match="failed 2 times.*the stream broke"):
        list(_backend(server, max_retries=1).stream(LONG, {}))
    assert len(server.requests) == 2


@pytest.mark.parametrize(("after", "message"), [(0, "failed 2 times"), (2, "broke after")])
def test_a_stalled_stream_times_out(server, after, message):
    server.stream_stall_after = after
    backend = _backend(server, timeout_s=0.2, max_retries=1)
    started = time.monotonic()
    with pytest.raises(TransientBackendError, match=f"{message}.*no event within timeout_s=0.2"):
        list(backend.stream(LONG, {}))
    assert time.monotonic() - started < 2
    assert _free_slots(backend) == backend.concurrency


def test_malformed_events_and_json_answers_fail_at_once(server):
    server.mode = "bad_sse"
    with pytest.raises(BackendError, match="not JSON: {not json") as caught:
        list(_backend(server, max_retries=3).stream(LONG, {}))
    assert not isinstance(caught.value, TransientBackendError) and len(server.requests) == 1
    server.mode = "ok"
    server.script = [(200, {}, OK_BODY)]  # a server that ignores stream: true
    with pytest.raises(BackendError, match="not a stream of server-sent events"):
        list(_backend(server).stream(LONG, {}))


def test_a_reader_that_stops_early_frees_the_slot_and_the_server(server):
    server.token_delay_s = 0.02
    backend = _backend(server, concurrency=1)
    stream = backend.stream(LONG, {})
    assert [next(stream), next(stream)] == ["reply", " 0"]
    assert _free_slots(backend) == 0  # the stream holds the endpoint's only slot
    stream.close()
    assert _free_slots(backend) == 1
    deadline = time.monotonic() + 2
    while server.streams_aborted == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.streams_aborted == 1  # it saw the connection close: it stops generating


def test_a_stream_holds_its_slot_until_it_ends(server):
    server.token_delay_s = 0.02
    last_pieces: list[float] = []  # each taken while its stream still holds the slot

    def reader() -> None:
        last_pieces.append(_collect(_backend(server, concurrency=1).stream(LONG, {}))[2][-1])

    threads = [threading.Thread(target=reader) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(last_pieces) == 2 and server.arrivals[1] > min(last_pieces)


def test_sample_and_rank_and_reasoning_models_stream_one_piece(server):
    pieces, reply, _ = _collect(_backend(server).stream(EXAMPLES[0], {"preset": "meena"}))
    assert pieces == [reply.text] == ["reply 2 to Great. Any plans?"]
    assert "stream" not in server.requests[0]
    pieces, reply, _ = _collect(_backend(server, model="o4-mini", reasoning=True).stream(LONG, {}))
    assert pieces == [reply.text] == [LONG_REPLY] and "stream" not in server.requests[1]
