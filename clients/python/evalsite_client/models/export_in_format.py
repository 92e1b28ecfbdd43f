from enum import StrEnum


class ExportInFormat(StrEnum):
    CSV = "csv"
    JSONL = "jsonl"
    PARLAI = "parlai"
    PARQUET = "parquet"

    def __str__(self) -> str:
        return str(self.value)
