from django.apps import AppConfig


class RecruitmentConfig(AppConfig):
    name = "recruitment"
    verbose_name = "Recruitment and payments"

    def ready(self) -> None:
        # The core's budget rule and erasure ask the apps above them through a hook and a
        # signal (docs/architecture.md, "Layers"): recruitment answers for its ledger.
        from annotation import signals
        from annotation.services import campaign_committed_add
        from recruitment.ledger import campaign_committed, worker_forgotten

        campaign_committed_add(campaign_committed)
        signals.worker_forgotten.connect(worker_forgotten, dispatch_uid="recruitment.forget")
