from enum import StrEnum


class ModelInBackend(StrEnum):
    EMOTION_PREPEND = "emotion_prepend"
    GENERIC_BOT = "generic_bot"
    GOLD = "gold"
    HF_LOCAL = "hf_local"
    OPENAI_HTTP = "openai_http"
    RETRIEVAL = "retrieval"

    def __str__(self) -> str:
        return str(self.value)
