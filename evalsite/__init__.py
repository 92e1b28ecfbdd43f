"""The evalsite Django project: settings, URLs, ASGI and the Celery app."""

from evalsite.celery import app as celery_app

__all__ = ["celery_app"]
