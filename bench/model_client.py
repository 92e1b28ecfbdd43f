"""Benchmark the model client: requests/second against an OpenAI-compatible server on loopback,
the old transport (standard library urllib, a new connection per request) vs the pooled httpx
client, in the same run.

Run from the repository root: ``.venv/bin/python bench/model_client.py [--requests 300]
[--rounds 3] [--concurrency 1 4] [--tls]``. The server is the tests' fake
(tests/modelhub/fake_openai.py) in a separate process, so client and server do not share an
interpreter lock; ``--tls`` serves HTTPS with a self-signed certificate, as OpenAI's API is
reached. Both clients are the same ``OpenAIHTTP`` backend (same request bodies, parsing and
threads); only ``_post`` differs. Rounds alternate old and new; the medians and their ratio
are printed, with the TCP connections the server accepted per round.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from modelhub.backends import Example  # noqa: E402
from modelhub.backends.http_client import clients_close  # noqa: E402
from modelhub.backends.openai_http import OpenAIHTTP  # noqa: E402
from tests.modelhub.fake_openai import FakeServer  # noqa: E402


class UrllibPerRequest(OpenAIHTTP):
    """The client as it was before httpx: urllib, one connection per request, no retries."""

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        request = urllib.request.Request(
            self.base_url + path, json.dumps(body).encode(), headers, method="POST"
        )
        with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
            return json.loads(response.read())


def serve(pipe: Connection, tls: tuple[str, str] | None) -> None:
    """Run the fake server; answer "count" with the connections accepted since the last one."""
    server = FakeServer(tls)
    pipe.send(server.url)
    while (message := pipe.recv()) != "stop":
        assert message == "count"
        with server.lock:
            pipe.send(server.connections)
            server.connections = 0
    server.close()


def certificate_make() -> tuple[str, str]:
    """Make a self-signed certificate for 127.0.0.1 and trust it (SSL_CERT_FILE, read by both
    clients); return the certificate and key files."""
    folder = Path(tempfile.mkdtemp(prefix="bench-model-client-"))
    cert, key = str(folder / "cert.pem"), str(folder / "key.pem")
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
         "-keyout", key, "-out", cert],
        check=True,
        capture_output=True,
    )  # fmt: skip
    os.environ["SSL_CERT_FILE"] = cert
    return cert, key


def run(backend: OpenAIHTTP, n: int, tag: str) -> float:
    """Return requests/second for n distinct one-turn chats."""
    examples = [Example(turns=(f"{tag} {i}: how was your day?",)) for i in range(n)]
    started = time.perf_counter()
    replies = backend.generate(examples, {"max_new_tokens": 24})
    elapsed = time.perf_counter() - started
    assert len(replies) == n
    return n / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=300, help="requests per round")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds per client")
    parser.add_argument(
        "--concurrency", type=int, nargs="+", default=[1, 4], help="requests in flight"
    )
    parser.add_argument(
        "--tls", action="store_true", help="HTTPS with a self-signed certificate (as OpenAI's)"
    )
    args = parser.parse_args()
    tls = certificate_make() if args.tls else None
    here, there = multiprocessing.Pipe()
    server = multiprocessing.get_context("fork").Process(target=serve, args=(there, tls))
    server.start()
    url = here.recv()
    print(
        f"python {platform.python_version()}, {os.cpu_count()} CPUs, {args.requests} requests "
        f"per round, {args.rounds} rounds, fake server in a separate process, "
        f"{'HTTPS' if tls else 'HTTP'}"
    )
    try:
        for concurrency in args.concurrency:
            config = {"base_url": url, "model": "m", "concurrency": concurrency}
            clients = {"urllib": UrllibPerRequest(**config), "httpx": OpenAIHTTP(**config)}
            run(clients["httpx"], 20, "warm-up")  # the pool's connections, opened once
            here.send("count")
            pooled = here.recv()
            rates: dict[str, list[float]] = {name: [] for name in clients}
            connections: dict[str, list[int]] = {name: [] for name in clients}
            for r in range(args.rounds):
                for name, backend in clients.items():
                    rates[name].append(run(backend, args.requests, f"{name} {r}"))
                    here.send("count")
                    connections[name].append(here.recv())
            old, new = (statistics.median(rates[k]) for k in ("urllib", "httpx"))
            spread = {k: f"{min(v):.0f}–{max(v):.0f}" for k, v in rates.items()}
            print(
                f"concurrency {concurrency}: urllib per request {old:5.0f} req/s "
                f"(rounds {spread['urllib']}; "
                f"new connections per round {connections['urllib']}), pooled httpx {new:5.0f} "
                f"req/s (rounds {spread['httpx']}; {pooled} opened at warm-up, "
                f"new per round {connections['httpx']}); "
                f"ratio {new / old:.2f}×"
            )
            clients_close()
    finally:
        here.send("stop")
        server.join(timeout=5)


if __name__ == "__main__":
    main()
