from django.apps import AppConfig


class DashboardConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "dashboard"

    def ready(self) -> None:
        # A receiver of the core's signal, imported here because it needs the models loaded.
        from annotation import signals
        from dashboard.erasure import worker_forgotten

        signals.worker_forgotten.connect(worker_forgotten, dispatch_uid="dashboard.forget")
