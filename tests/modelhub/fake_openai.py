"""An OpenAI-compatible server on loopback for the HTTP backend's tests and bench/model_client.py.

It speaks HTTP/1.1 with keep-alive, like vLLM's uvicorn, and counts the TCP connections it
accepts, so a client that opens one per request shows. Each test sets its behaviour: ``mode``
(ok, slow, 500, garbage, wrong_schema, 400, concurrent, flaky, bad_sse) and ``script``, answers
served in order before the normal ones (e.g. a 429 with ``Retry-After``).

Like vLLM serving a model whose chat template is strict (Mistral, Gemma), it answers 400 to
chat messages that do not start with a user turn and alternate (``strict_roles``). Like any
server, it cuts a reply at ``max_tokens`` (or ``max_completion_tokens``) tokens — a token is
a space-separated word here — with ``finish_reason: "length"``. ``stream: true`` is answered
with server-sent events over a chunked body (or, ``stream_chunked = False``, a body ended by
closing the connection), one token per event, ``token_delay_s`` apart; ``stream_break_after``
closes the socket after that many tokens, and ``stream_stall_after`` stops sending (for
``stall_s``) after that many.
"""

from __future__ import annotations

import contextlib
import json
import socket
import ssl
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from modelhub.backends.conversation import messages_alternate

# Models that behave like OpenAI's reasoning models: 400 to max_tokens and to sampling parameters.
REASONING_MODELS = ("o3-mini", "o4-mini", "gpt-5")
REASONING_REFUSED = ("max_tokens", "temperature", "top_p", "top_k", "logprobs")
# What Mistral's chat template raises, and vLLM answers with 400, for roles out of order.
ROLES_REFUSED = "Conversation roles must alternate user/assistant/user/assistant/..."


class FakeServer:
    """An OpenAI-schema server whose behaviour each test sets."""

    def __init__(self, tls: tuple[str, str] | None = None) -> None:
        """Listen on a free port of 127.0.0.1; ``tls`` (a certificate and key file) for HTTPS."""
        self.mode = "ok"
        self.script: list[tuple[int, dict[str, str], bytes]] = []
        self.requests: list[dict] = []
        self.arrivals: list[float] = []  # time.monotonic() of each request
        self.connections = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.delay_s = 0.0  # in "concurrent" mode: how long each request stays in flight
        self.strict_roles = True  # 400 to chat messages a strict chat template refuses
        self.completion_suffix = ""  # written after a completion's reply (stop ignored)
        self.token_delay_s = 0.0  # streams: the wait before each token
        self.stream_chunked = True  # streams: chunked body, else ended by closing
        self.stream_break_after: int | None = None  # streams: close the socket after k tokens
        self.stream_stall_after: int | None = None  # streams: stop sending after k tokens
        self.stall_s = 10.0
        self.streams_aborted = 0  # streams the client left before their end
        self.lock = threading.Lock()
        self.closing = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive: one connection serves many requests

            def log_message(self, *args) -> None:
                pass

            def setup(self) -> None:
                super().setup()
                # As uvicorn (vLLM) and every asyncio server do: without it the body, written
                # after the headers, waits for the client's delayed ACK (40 ms) on a kept-alive
                # connection.
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                with server.lock:
                    server.connections += 1

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server.lock:
                    server.requests.append({"path": self.path, **body})
                    server.arrivals.append(time.monotonic())
                    count = len(server.requests)
                    scripted = server.script.pop(0) if server.script else None
                if scripted:
                    return server._send(self, *scripted)
                server.answer(self, body, count)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True  # closing never waits for a slow handler
        if tls:
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.load_cert_chain(*tls)
            self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        scheme = "https" if tls else "http"
        self.url = f"{scheme}://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True).start()

    def answer(self, handler: BaseHTTPRequestHandler, body: dict, count: int) -> None:
        if self.mode == "slow":
            time.sleep(1.0)
        if self.mode == "500" or (self.mode == "flaky" and count < 3):
            return self._send(handler, 500, {}, b'{"error": "out of memory"}')
        if self.mode == "garbage":
            return self._send(handler, 200, {}, b"<html>not json</html>")
        if self.mode == "wrong_schema":
            return self._send(handler, 200, {}, b'{"choices": [{"nothing": 1}]}')
        if self.mode == "400":
            return self._send(handler, 400, {}, b'{"error": "model not found"}')
        if body.get("model") in REASONING_MODELS:
            refused = [k for k in REASONING_REFUSED if k in body]
            if refused:
                return self._send(handler, 400, {}, openai_error(refused[0]))
        if self.strict_roles and "messages" in body and messages_alternate(body["messages"]):
            return self._send(handler, 400, {}, roles_error())
        if self.mode == "concurrent":
            # In flight while it "generates", and no longer before the reply is sent: a client
            # thread sends its next request only after reading this reply.
            with self.lock:
                self.in_flight += 1
                self.max_in_flight = max(self.max_in_flight, self.in_flight)
            time.sleep(self.delay_s or 0.1)
            with self.lock:
                self.in_flight -= 1
        if body.get("stream"):
            return self._stream(handler, body)
        choices = [self._choice(body, i) for i in range(body.get("n", 1))]
        payload = {"id": "x", "object": "chat.completion", "choices": choices}
        self._send(handler, 200, {}, json.dumps(payload).encode())

    def _reply(self, body: dict, i: int) -> tuple[list[str], str]:
        """Return reply ``i``'s tokens (joined with spaces) and its finish reason."""
        chat = "messages" in body
        last = body["messages"][-1]["content"] if chat else body["prompt"].split("\n")[-2]
        text = f"reply {i} to {last}" + ("" if chat else self.completion_suffix)
        tokens = text.split(" ")
        limit = body.get("max_tokens") or body.get("max_completion_tokens") or len(tokens)
        return tokens[:limit], "length" if limit < len(tokens) else "stop"

    def _choice(self, body: dict, i: int) -> dict:
        tokens, finish = self._reply(body, i)
        text = " ".join(tokens)
        # candidate i has mean log-prob -(i + 1), except candidate 2, the most likely
        logprob = -0.1 if i == 2 else -(i + 1.0)
        scored = [{"token": t, "logprob": logprob} for t in tokens]
        if "messages" in body:
            choice = {"index": i, "message": {"role": "assistant", "content": text}}
            choice["logprobs"] = {"content": scored} if body.get("logprobs") else None
        else:
            choice = {"index": i, "text": " " + text}
            lp = {"token_logprobs": [t["logprob"] for t in scored]}
            choice["logprobs"] = lp if body.get("logprobs") else None
        return {**choice, "finish_reason": finish}

    def _stream(self, handler: BaseHTTPRequestHandler, body: dict) -> None:
        """Send the reply as server-sent events, one token each, as vLLM does."""
        chat = "messages" in body
        tokens, finish = self._reply(body, 0)
        pieces = [t if k == 0 and chat else " " + t for k, t in enumerate(tokens)]
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        if self.stream_chunked:
            handler.send_header("Transfer-Encoding", "chunked")
        else:
            handler.send_header("Connection", "close")
            handler.close_connection = True
        handler.end_headers()
        write = _writer(handler, self.stream_chunked)
        try:
            if self.mode == "bad_sse":
                pieces = []
                write(b"data: {not json\n\n")
            elif chat:
                write(_event(chat, {"role": "assistant", "content": ""}, None))
            for k, piece in enumerate(pieces):
                if k == self.stream_break_after:
                    handler.close_connection = True  # no last chunk: the body is cut
                    return
                if k == self.stream_stall_after:
                    self.closing.wait(self.stall_s)
                    handler.close_connection = True
                    return
                time.sleep(self.token_delay_s)
                write(_event(chat, {"content": piece} if chat else piece, None))
            write(_event(chat, {} if chat else "", finish))
            write(b"data: [DONE]\n\n")
            if self.stream_chunked:
                handler.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            with self.lock:
                self.streams_aborted += 1
            handler.close_connection = True

    @staticmethod
    def _send(
        handler: BaseHTTPRequestHandler, status: int, headers: dict[str, str], data: bytes
    ) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            handler.send_header(name, value)
        handler.end_headers()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            handler.wfile.write(data)  # the client may have given up (timeout test)

    def close(self) -> None:
        self.closing.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def openai_error(param: str) -> bytes:
    """Return OpenAI's 400 body for a parameter a reasoning model does not take (as sent)."""
    message = f"Unsupported parameter: '{param}' is not supported with this model." + (
        " Use 'max_completion_tokens' instead." if param == "max_tokens" else ""
    )
    error = {"message": message, "type": "invalid_request_error", "param": param}
    return json.dumps({"error": {**error, "code": "unsupported_parameter"}}).encode()


def roles_error() -> bytes:
    """Return vLLM's 400 body for messages the model's chat template refuses."""
    error = {"object": "error", "message": ROLES_REFUSED, "type": "BadRequestError", "code": 400}
    return json.dumps({"error": error}).encode()


def _event(chat: bool, content: dict | str, finish: str | None) -> bytes:
    """Return one server-sent event of a chat (a delta) or completions (a text) stream."""
    choice = {"index": 0, "delta" if chat else "text": content, "finish_reason": finish}
    kind = "chat.completion.chunk" if chat else "text_completion"
    return f"data: {json.dumps({'id': 'x', 'object': kind, 'choices': [choice]})}\n\n".encode()


def _writer(handler: BaseHTTPRequestHandler, chunked: bool) -> Callable[[bytes], None]:
    """Return a function that sends bytes at once, as an HTTP/1.1 chunk when ``chunked``."""

    def write(data: bytes) -> None:
        if chunked:
            data = f"{len(data):x}\r\n".encode() + data + b"\r\n"
        handler.wfile.write(data)

    return write
