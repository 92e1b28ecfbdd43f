"""The project's own app: it turns the optional operations hooks on at start."""

from django.apps import AppConfig
from django.conf import settings


class EvalsiteConfig(AppConfig):
    name = "evalsite"
    verbose_name = "evalsite operations"

    def ready(self) -> None:
        if settings.METRICS:
            from evalsite.observability import metrics_connect

            metrics_connect()
