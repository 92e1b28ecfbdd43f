from enum import StrEnum


class ModelInPresetType0(StrEnum):
    GREEDY = "greedy"
    MEENA = "meena"

    def __str__(self) -> str:
        return str(self.value)
