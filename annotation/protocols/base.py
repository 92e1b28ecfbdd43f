"""The Protocol interface that every evaluation protocol module implements."""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import pandas as pd
from matplotlib.figure import Figure

Reliability = Literal["good", "noisy", "spammer"]


@dataclass(frozen=True)
class Question:
    """One question the worker answers about an item, with its allowed answers."""

    key: str
    text: str
    choices: tuple[tuple[str, str], ...]
    help: str = ""


@dataclass
class Report:
    """A protocol's results: named tables (with n and uncertainty), figures and notes."""

    title: str
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    figures: dict[str, Figure] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


class Protocol(ABC):
    """An evaluation protocol: parameters, items, the worker page, answers and the report.

    Implementations are stateless; every method takes the campaign's cleaned parameters.
    """

    name: ClassVar[str]
    title: ClassVar[str]
    template_name: ClassVar[str]

    @abstractmethod
    def default_parameters(self) -> dict[str, Any]:
        """Return the published defaults."""

    @abstractmethod
    def clean_parameters(self, parameters: Mapping[str, Any]) -> dict[str, Any]:
        """Return the parameters with defaults filled in; raise InvalidParameters if wrong."""

    @abstractmethod
    def clean_item(self, payload: Mapping[str, Any]) -> dict[str, Any]:
        """Return a valid item payload; raise InvalidParameters naming what is wrong."""

    @abstractmethod
    def questions(self, parameters: Mapping[str, Any]) -> list[Question]:
        """Return the questions asked about every item."""

    @abstractmethod
    def clean_answers(
        self, parameters: Mapping[str, Any], answers: Mapping[str, Any]
    ) -> dict[str, Any]:
        """Return question key → stored value; raise InvalidAnswer naming each bad field."""

    @abstractmethod
    def report(
        self, parameters: Mapping[str, Any], items: pd.DataFrame, judgments: pd.DataFrame
    ) -> Report:
        """Aggregate judgments into the protocol's report.

        ``items`` has columns ``item`` and ``payload``; ``judgments`` has ``item``, ``rater``,
        ``question``, ``value`` and ``time_spent_ms``.
        """

    @abstractmethod
    def simulate_answers(
        self,
        parameters: Mapping[str, Any],
        payload: Mapping[str, Any],
        truth: Mapping[str, Any] | None,
        reliability: Reliability,
        rng: random.Random,
    ) -> dict[str, str]:
        """Answer like a simulated worker of the given reliability would, as form strings."""
