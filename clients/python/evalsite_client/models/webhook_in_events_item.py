from enum import StrEnum


class WebhookInEventsItem(StrEnum):
    ASSIGNMENT_SUBMITTED = "assignment.submitted"
    BUDGET_LOW = "budget.low"
    CAMPAIGN_FINISHED = "campaign.finished"
    JOB_DONE = "job.done"
    WORKER_BLOCKED = "worker.blocked"

    def __str__(self) -> str:
        return str(self.value)
