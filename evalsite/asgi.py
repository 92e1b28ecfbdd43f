"""ASGI entry point (daphne): HTTP through Django; websocket routes join with the chat issue."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")

application = get_asgi_application()
