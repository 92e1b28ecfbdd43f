from django.apps import AppConfig


class JudgesConfig(AppConfig):
    name = "judges"
    verbose_name = "LLM judges"

    def ready(self) -> None:
        # LLM judges run as modelhub jobs of kind "judge": modelhub's job task (started, or
        # queued again from the admin) runs them with the judge's runner registered here.
        from judges.services import judge_job_run
        from modelhub.jobs import job_kind_register
        from modelhub.models import GenerationJob

        job_kind_register(kind=GenerationJob.Kind.JUDGE, runner=judge_job_run)
