"""The ASGI application serves HTTP through a synchronous middleware chain, one thread hop a
request (evalsite/handlers.py; issue #32's ASGI tax)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

import pytest
from asgiref.sync import SyncToAsync, async_to_sync
from channels.testing import HttpCommunicator
from django.core.handlers.asgi import ASGIHandler
from django.http import HttpRequest, HttpResponse

from evalsite.asgi import django_application
from evalsite.handlers import SyncChainHandler

THREADS: list[int] = []


def thread_recorder(get_response: Callable[[HttpRequest], HttpResponse]) -> Callable:
    """A sync-only middleware, as ours are, recording the thread it runs in."""

    def middleware(request: HttpRequest) -> HttpResponse:
        THREADS.append(threading.get_ident())
        response = get_response(request)
        THREADS.append(threading.get_ident())
        return response

    return middleware


def _serve(handler: ASGIHandler, path: str, monkeypatch: pytest.MonkeyPatch) -> tuple[int, int]:
    """Return (status, sync_to_async calls) of one GET of ``path`` through ``handler``."""
    calls = 0
    original = SyncToAsync.__call__

    async def counted(self: SyncToAsync, *args: object, **kwargs: object) -> object:
        nonlocal calls
        calls += 1
        return await original(self, *args, **kwargs)

    monkeypatch.setattr(SyncToAsync, "__call__", counted)
    communicator = HttpCommunicator(handler, "GET", path, headers=[(b"host", b"localhost")])
    response = async_to_sync(communicator.get_response)(timeout=10)
    monkeypatch.setattr(SyncToAsync, "__call__", original)
    return response["status"], calls


def test_the_shipped_application_builds_its_chain_synchronous() -> None:
    assert isinstance(django_application, SyncChainHandler)
    assert not asyncio.iscoroutinefunction(django_application._middleware_chain)
    assert asyncio.iscoroutinefunction(ASGIHandler()._middleware_chain)


@pytest.mark.django_db(transaction=True)
def test_a_page_hops_threads_fewer_times_than_through_djangos_stock_handler(
    settings, monkeypatch
) -> None:
    settings.ALLOWED_HOSTS = ["localhost"]
    settings.MIDDLEWARE = [*settings.MIDDLEWARE, "tests.test_asgi_handler.thread_recorder"]
    ours = _serve(SyncChainHandler(), "/admin/login/", monkeypatch)
    stock = _serve(ASGIHandler(), "/admin/login/", monkeypatch)
    assert ours[0] == stock[0] == 200
    assert ours[1] < stock[1], (ours, stock)


@pytest.mark.django_db(transaction=True)
def test_middlewares_and_view_run_in_the_same_thread(settings, monkeypatch) -> None:
    settings.ALLOWED_HOSTS = ["localhost"]
    settings.MIDDLEWARE = ["tests.test_asgi_handler.thread_recorder", *settings.MIDDLEWARE]
    THREADS.clear()
    status, _ = _serve(SyncChainHandler(), "/admin/login/", monkeypatch)
    assert status == 200
    assert len(THREADS) == 2 and THREADS[0] == THREADS[1] != threading.get_ident()
