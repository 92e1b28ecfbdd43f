"""The OpenAI-compatible HTTP backend against a real server on loopback."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from modelhub.backends import BackendError, Example, TransientBackendError, backend_load

EXAMPLES = [Example(turns=("Hi!", "Hello! How are you?", "Great. Any plans?"))]


class FakeServer:
    """An OpenAI-schema server whose behaviour each test sets: ok, slow, 500, garbage, flaky."""

    def __init__(self) -> None:
        self.mode = "ok"
        self.requests: list[dict] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server.lock:
                    server.requests.append({"path": self.path, **body})
                    count = len(server.requests)
                server.answer(self, body, count)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True  # closing never waits for a slow handler
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True).start()

    def answer(self, handler: BaseHTTPRequestHandler, body: dict, count: int) -> None:
        if self.mode == "slow":
            time.sleep(1.0)
        if self.mode == "500" or (self.mode == "flaky" and count < 3):
            return self._send(handler, 500, b'{"error": "out of memory"}')
        if self.mode == "garbage":
            return self._send(handler, 200, b"<html>not json</html>")
        if self.mode == "wrong_schema":
            return self._send(handler, 200, b'{"choices": [{"nothing": 1}]}')
        if self.mode == "400":
            return self._send(handler, 400, b'{"error": "model not found"}')
        if self.mode == "concurrent":
            # In flight while it "generates", and no longer before the reply is sent: a client
            # thread sends its next request only after reading this reply.
            with self.lock:
                self.in_flight += 1
                self.max_in_flight = max(self.max_in_flight, self.in_flight)
            time.sleep(0.1)
            with self.lock:
                self.in_flight -= 1
        chat = "messages" in body
        last = body["messages"][-1]["content"] if chat else body["prompt"].split("\n")[-2]
        choices = []
        for i in range(body.get("n", 1)):
            text = f"reply {i} to {last}"
            # candidate i has mean log-prob -(i + 1), except candidate 2, the most likely
            logprob = -0.1 if i == 2 else -(i + 1.0)
            tokens = [{"token": w, "logprob": logprob} for w in text.split()]
            if chat:
                choice = {"index": i, "message": {"role": "assistant", "content": text}}
                choice["logprobs"] = {"content": tokens} if body.get("logprobs") else None
            else:
                choice = {"index": i, "text": " " + text}
                lp = {"token_logprobs": [t["logprob"] for t in tokens]}
                choice["logprobs"] = lp if body.get("logprobs") else None
            choices.append(choice)
        payload = {"id": "x", "object": "chat.completion", "choices": choices}
        self._send(handler, 200, json.dumps(payload).encode())

    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, status: int, data: bytes) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            handler.wfile.write(data)  # the client may have given up (timeout test)

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    fake = FakeServer()
    yield fake
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
    ],
)
def test_bad_configuration_is_a_clear_error(config, message):
    with pytest.raises(ValueError, match=message):
        backend_load("openai_http", config)
