from django.apps import AppConfig


class ChatConfig(AppConfig):
    name = "chat"
    verbose_name = "Live chats"

    def ready(self) -> None:
        # The core's housekeeping and payment rules ask the apps above them through a signal
        # and a hook (docs/architecture.md, "Layers"): chat answers for its seats.
        from annotation import signals
        from annotation.services import assignment_work_kind_add
        from chat.arena_votes import worker_forgotten
        from chat.seats import seat_paid
        from chat.tasks import housekeeping

        signals.housekeeping.connect(housekeeping, dispatch_uid="chat.housekeeping")
        signals.worker_forgotten.connect(worker_forgotten, dispatch_uid="chat.forget")
        assignment_work_kind_add(seat_paid)
