from enum import StrEnum


class DatasetExportQueryFormat(StrEnum):
    CSV = "csv"
    JSONL = "jsonl"
    PARLAI = "parlai"
    PARQUET = "parquet"

    def __str__(self) -> str:
        return str(self.value)
