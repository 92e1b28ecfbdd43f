"""ASGI entry point: HTTP through Django, websockets to the live chat consumers.

Served by gunicorn's uvicorn workers in production (deploy/gunicorn.conf.py) and by daphne
in ``runserver`` and the demo. HTTP goes through ``SyncChainHandler`` (evalsite/handlers.py):
Django's handler with the middleware chain synchronous, one thread hop per request.

The websocket routes check the Origin header against ALLOWED_HOSTS; they use no session
cookie (the worker pages may sit in a provider's iframe, where third-party cookies are
blocked): the consumer authenticates with the page's provider parameters and signed token.
"""

import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
django.setup(set_prefix=False)  # before the routes import models

from evalsite.handlers import SyncChainHandler  # noqa: E402

django_application = SyncChainHandler()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from chat.routing import websocket_urlpatterns  # noqa: E402
from evalsite.observability import asgi_wrap  # noqa: E402

application = asgi_wrap(
    ProtocolTypeRouter(
        {
            "http": django_application,
            "websocket": AllowedHostsOriginValidator(URLRouter(websocket_urlpatterns)),
        }
    )
)
