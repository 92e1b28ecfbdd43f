"""An OpenAI-compatible server on loopback for the HTTP backend's tests and bench/model_client.py.

It speaks HTTP/1.1 with keep-alive, like vLLM's uvicorn, and counts the TCP connections it
accepts, so a client that opens one per request shows. Each test sets its behaviour: ``mode``
(ok, slow, 500, garbage, wrong_schema, 400, concurrent, flaky) and ``script``, answers served
in order before the normal ones (e.g. a 429 with ``Retry-After``).
"""

from __future__ import annotations

import contextlib
import json
import socket
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# Models that behave like OpenAI's reasoning models: 400 to max_tokens and to sampling parameters.
REASONING_MODELS = ("o3-mini", "o4-mini", "gpt-5")
REASONING_REFUSED = ("max_tokens", "temperature", "top_p", "top_k", "logprobs")


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
        self.lock = threading.Lock()
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
        if self.mode == "concurrent":
            # In flight while it "generates", and no longer before the reply is sent: a client
            # thread sends its next request only after reading this reply.
            with self.lock:
                self.in_flight += 1
                self.max_in_flight = max(self.max_in_flight, self.in_flight)
            time.sleep(self.delay_s or 0.1)
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
            choice["finish_reason"] = "stop"
            choices.append(choice)
        payload = {"id": "x", "object": "chat.completion", "choices": choices}
        self._send(handler, 200, {}, json.dumps(payload).encode())

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
        self.httpd.shutdown()
        self.httpd.server_close()


def openai_error(param: str) -> bytes:
    """Return OpenAI's 400 body for a parameter a reasoning model does not take (as sent)."""
    message = f"Unsupported parameter: '{param}' is not supported with this model." + (
        " Use 'max_completion_tokens' instead." if param == "max_tokens" else ""
    )
    error = {"message": message, "type": "invalid_request_error", "param": param}
    return json.dumps({"error": {**error, "code": "unsupported_parameter"}}).encode()
