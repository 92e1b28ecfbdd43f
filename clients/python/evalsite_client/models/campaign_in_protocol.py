from enum import StrEnum


class CampaignInProtocol(StrEnum):
    ACUTE = "acute"
    ARENA = "arena"
    CATEGORICAL = "categorical"
    EMOCONTEXT = "emocontext"
    EMOTIONLINES = "emotionlines"
    EMPATHETIC_CHAT = "empathetic_chat"
    LIKERT = "likert"
    PAIRWISE = "pairwise"
    SSA = "ssa"
    SSA_INTERACTIVE = "ssa_interactive"

    def __str__(self) -> str:
        return str(self.value)
