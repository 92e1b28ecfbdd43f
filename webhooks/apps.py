from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "webhooks"
    verbose_name = "Webhooks"

    def ready(self) -> None:
        # The events are receivers of the signals the apps below send (docs/architecture.md,
        # "Layers"); imported here because they need the models loaded.
        from annotation import signals as studies
        from dashboard import signals as dashboard
        from webhooks import erasure, events

        studies.assignment_submitted.connect(events.assignment_submitted, dispatch_uid="wh")
        studies.campaign_finished.connect(events.campaign_finished, dispatch_uid="wh")
        studies.worker_blocked.connect(events.worker_blocked, dispatch_uid="wh")
        studies.budget_spent.connect(events.budget_spent, dispatch_uid="wh")
        dashboard.job_done.connect(events.job_done, dispatch_uid="wh")
        studies.worker_forgotten.connect(erasure.worker_forgotten, dispatch_uid="wh.forget")
