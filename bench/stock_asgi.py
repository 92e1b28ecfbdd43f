"""Django's stock ASGI handler on the project's URLs (HTTP only), for ``--server asgi-stock``.

``bench/hot_path.py`` and ``bench/load.py`` serve it to measure what ``evalsite.handlers.
SyncChainHandler`` saves: the same pages through Django's own ``ASGIHandler``, whose middleware
chain switches between synchronous and asynchronous modes.
"""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
application = get_asgi_application()
