from enum import StrEnum


class ExportInWhat(StrEnum):
    DIALOGUES = "dialogues"
    JUDGMENTS = "judgments"

    def __str__(self) -> str:
        return str(self.value)
