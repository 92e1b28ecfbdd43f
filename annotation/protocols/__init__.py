"""The protocol registry: adding a protocol is one folder (docs/protocols.md, "Adding a
protocol") and one line here."""

from annotation.protocols.acute import AcuteProtocol
from annotation.protocols.arena import ArenaProtocol
from annotation.protocols.base import (
    Battles,
    DialogueItems,
    GoldChecks,
    Judged,
    LiveChat,
    ModelPairs,
    Planned,
    Protocol,
    Question,
    Report,
    ResponseItems,
    Simulated,
)
from annotation.protocols.categorical import CategoricalProtocol
from annotation.protocols.emocontext import EmoContextProtocol
from annotation.protocols.emotionlines import EmotionLinesProtocol
from annotation.protocols.empathetic_chat import EmpatheticChatProtocol
from annotation.protocols.likert import LikertProtocol
from annotation.protocols.pairwise import PairwiseProtocol
from annotation.protocols.ssa import SSAProtocol
from annotation.protocols.ssa_interactive import InteractiveSSAProtocol


class Registry:
    """Protocols by name."""

    def __init__(self, *protocols: Protocol) -> None:
        self._by_name = {p.name: p for p in protocols}

    def get(self, name: str) -> Protocol:
        """Return the protocol called ``name``; raise KeyError naming the known ones."""
        try:
            return self._by_name[name]
        except KeyError:
            known = ", ".join(sorted(self._by_name))
            raise KeyError(f"unknown protocol {name!r}; known protocols: {known}") from None

    def all(self) -> list[Protocol]:
        return list(self._by_name.values())


registry = Registry(
    LikertProtocol(),
    PairwiseProtocol(),
    SSAProtocol(),
    EmotionLinesProtocol(),
    EmoContextProtocol(),
    EmpatheticChatProtocol(),
    InteractiveSSAProtocol(),
    CategoricalProtocol(),
    AcuteProtocol(),
    ArenaProtocol(),
)

__all__ = [
    "Battles",
    "DialogueItems",
    "GoldChecks",
    "Judged",
    "LiveChat",
    "ModelPairs",
    "Planned",
    "Protocol",
    "Question",
    "Report",
    "ResponseItems",
    "Simulated",
    "registry",
]
