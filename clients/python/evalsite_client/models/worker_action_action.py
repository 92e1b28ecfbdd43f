from enum import StrEnum


class WorkerActionAction(StrEnum):
    APPROVE = "approve"
    BLOCK = "block"
    BONUS = "bonus"
    FORGET = "forget"
    REJECT = "reject"
    SOFT_BLOCK = "soft_block"

    def __str__(self) -> str:
        return str(self.value)
