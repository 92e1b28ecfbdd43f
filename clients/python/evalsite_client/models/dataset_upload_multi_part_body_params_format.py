from enum import StrEnum


class DatasetUploadMultiPartBodyParamsFormat(StrEnum):
    CSV = "csv"
    ED = "ed"
    EMOCONTEXT = "emocontext"
    EMOTIONLINES = "emotionlines"
    JSONL = "jsonl"
    MEENA = "meena"
    MELD = "meld"
    PARLAI = "parlai"
    PARQUET = "parquet"

    def __str__(self) -> str:
        return str(self.value)
