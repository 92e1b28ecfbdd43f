from enum import StrEnum


class StatusInStatus(StrEnum):
    FINISHED = "finished"
    LIVE = "live"
    PAUSED = "paused"

    def __str__(self) -> str:
        return str(self.value)
