from enum import StrEnum


class ReportStartAggregate(StrEnum):
    DS = "ds"
    MACE = "mace"
    MAJORITY = "majority"

    def __str__(self) -> str:
        return str(self.value)
