from enum import StrEnum


class CampaignListStatusType0(StrEnum):
    DRAFT = "draft"
    FINISHED = "finished"
    LIVE = "live"
    PAUSED = "paused"

    def __str__(self) -> str:
        return str(self.value)
