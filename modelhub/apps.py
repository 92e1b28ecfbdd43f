from django.apps import AppConfig


class ModelhubConfig(AppConfig):
    name = "modelhub"
    verbose_name = "Model hub"

    def ready(self) -> None:
        # Generation jobs are modelhub's own kind; other apps register theirs in their ready().
        from modelhub.jobs import job_kind_register
        from modelhub.models import GenerationJob
        from modelhub.services import generation_job_run

        job_kind_register(kind=GenerationJob.Kind.GENERATION, runner=generation_job_run)
