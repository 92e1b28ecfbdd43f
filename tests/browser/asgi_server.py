"""A real ASGI server (daphne, in a thread of the test process) for the live chat tests.

pytest-django's ``live_server`` is a WSGI server: it cannot carry websockets. This starts
daphne once per test session on a free port, serving the project's ASGI application (HTTP
and websockets) against the test database; Celery runs as the settings say (eagerly without
a broker). With SQLite the test database is a file (tests/conftest.py), so the server's
threads and the test share it the way they share PostgreSQL.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def _daphne(django_db_setup, django_db_blocker) -> Iterator[str]:
    from daphne.endpoints import build_endpoint_description_strings
    from daphne.server import Server  # first: it installs Twisted's asyncio reactor
    from twisted.internet import reactor

    from evalsite.asgi import application

    port = _free_port()
    server = Server(
        application=application,
        endpoints=build_endpoint_description_strings(host="127.0.0.1", port=port),
        signal_handlers=False,
        verbosity=0,
    )
    thread = threading.Thread(target=server.run, name="daphne", daemon=True)
    with django_db_blocker.unblock():
        thread.start()
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("daphne did not start") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
        reactor.callFromThread(reactor.stop)  # type: ignore[attr-defined]
        thread.join(timeout=10)
        # The consumers keep their thread's database connection open between frames; close
        # it, or PostgreSQL refuses to drop the test database.
        from asgiref.sync import SyncToAsync
        from django.db import connections

        SyncToAsync.single_thread_executor.submit(connections.close_all).result(timeout=10)


@pytest.fixture
def asgi_live_server(_daphne: str, transactional_db) -> str:
    """The URL of daphne serving the project (HTTP and websockets) for this test."""
    return _daphne
