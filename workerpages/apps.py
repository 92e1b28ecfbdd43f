from django.apps import AppConfig


class WorkerPagesConfig(AppConfig):
    name = "workerpages"
    verbose_name = "Worker pages"
