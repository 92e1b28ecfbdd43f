from django.apps import AppConfig


class ModelhubConfig(AppConfig):
    name = "modelhub"
    verbose_name = "Model hub"
