"""A real HTTP receiver on 127.0.0.1 (a thread) and a researcher's campaign with an endpoint."""

from __future__ import annotations

import http.server
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from django.contrib.auth.models import User

from annotation.models import Campaign
from tests.factories import CampaignFactory, ItemFactory
from webhooks.models import SUBSCRIBABLE, WebhookEndpoint
from webhooks.services import webhook_create

TRICKLED = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Slow: " + b"z" * 60 + b"\r\n\r\nok"


@dataclass
class Receiver:
    """What the receiver got, and what it answers next (status codes, in order; then 200).

    ``delay_s`` waits before the answer; ``trickle_s`` sends the answer one byte at a time,
    this many seconds apart (a byte every few seconds keeps a per-read timeout from firing).
    ``most_in_flight`` is the most requests it was answering at once.
    """

    url: str
    answers: list[tuple[int, dict[str, str]]] = field(default_factory=list)
    delay_s: float = 0.0
    trickle_s: float = 0.0
    requests: list[tuple[dict[str, str], bytes]] = field(default_factory=list)
    arrived: list[float] = field(default_factory=list)  # time.monotonic() of each request
    in_flight: int = 0
    most_in_flight: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self, status: int, **headers: str) -> None:
        self.answers.append((status, headers))

    def bodies(self) -> list[bytes]:
        with self.lock:
            return [body for _, body in self.requests]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    """An HTTP server in a thread that records each POST and answers as told."""
    state = Receiver(url="")

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            with state.lock:
                state.requests.append((dict(self.headers.items()), body))
                state.arrived.append(time.monotonic())
                status, headers = state.answers.pop(0) if state.answers else (200, {})
                state.in_flight += 1
                state.most_in_flight = max(state.most_in_flight, state.in_flight)
            try:
                self._answer(status, headers)
            except OSError:
                pass  # the sender hung up
            finally:
                with state.lock:
                    state.in_flight -= 1

        def _answer(self, status: int, headers: dict[str, str]) -> None:
            if state.trickle_s:
                for byte in TRICKLED:
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    time.sleep(state.trickle_s)
                return
            if state.delay_s:
                time.sleep(state.delay_s)
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name.replace("_", "-"), value)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    yield state
    server.shutdown()
    server.server_close()


@pytest.fixture
def private_allowed(settings) -> None:
    settings.WEBHOOKS_ALLOW_PRIVATE = True


@pytest.fixture
def researcher(db) -> User:
    return User.objects.create_user("ada", password="pw-ada-123", is_staff=True)


@pytest.fixture
def owned(researcher) -> Campaign:
    campaign = CampaignFactory(owner=researcher, budget="10.00")
    ItemFactory.create_batch(4, campaign=campaign)
    return campaign


@pytest.fixture
def endpoint(owned, receiver, private_allowed) -> WebhookEndpoint:
    return webhook_create(campaign=owned, url=receiver.url, events=list(SUBSCRIBABLE))
