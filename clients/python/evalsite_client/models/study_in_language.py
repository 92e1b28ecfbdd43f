from enum import StrEnum


class StudyInLanguage(StrEnum):
    DE = "de"
    EN = "en"

    def __str__(self) -> str:
        return str(self.value)
