"""The HTTP handler of the ASGI application: Django's, with its middleware chain synchronous.

Django's ``ASGIHandler`` builds the middleware chain for asynchronous use. Our own middlewares
(probes, CSP, overload, inputs, metrics) and WhiteNoise are synchronous only, Django's own are
both, so the stock chain switches modes several times per request, and in asynchronous mode
Django runs every sync-capable hook (``process_request``, ``process_view``, …) of a middleware
through ``sync_to_async``: a thread hop per hook, 1.5–2.5 ms of web CPU per database page
(issue #32). Every view of ours is synchronous, so ``SyncChainHandler`` builds the chain as a
WSGI server would and runs the whole request — middlewares, view, template — in **one** hop to
the thread where Django's sync code runs under ASGI (``thread_sensitive``: the thread, and so
the database connection, that the request-finished signal closes). Websockets do not pass
through it (``evalsite.asgi`` routes them to the chat consumers).
"""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIHandler
from django.http import HttpRequest, HttpResponseBase


class SyncChainHandler(ASGIHandler):
    """Serve HTTP under ASGI through a synchronous middleware chain, in one thread hop."""

    def load_middleware(self, is_async: bool = False) -> None:
        """Build the chain for synchronous use whatever the caller asks (see the module)."""
        super().load_middleware(is_async=False)

    async def get_response_async(self, request: HttpRequest) -> HttpResponseBase:
        """Run the synchronous chain for ``request`` in Django's sync thread."""
        return await sync_to_async(self.get_response, thread_sensitive=True)(request)
