from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Annotation (crowd side)"

    def ready(self) -> None:
        # Every process that can write a campaign gives the campaigns a new version
        # (annotation.campaign_cache's receivers), not only the web processes that read them.
        from annotation import campaign_cache  # noqa: F401
