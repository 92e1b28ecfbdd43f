from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Annotation (crowd side)"

    def ready(self) -> None:
        # A judge's generation job queued again (the admin's action) runs the judge's task.
        from annotation.judges.services import LABEL_PREFIX, judge_job_enqueue
        from modelhub.services import job_runner_register

        job_runner_register(label_prefix=LABEL_PREFIX, enqueue=judge_job_enqueue)
