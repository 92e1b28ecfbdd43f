"""The Protocol interface that every evaluation protocol module implements."""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import pandas as pd

from evalsite.errors import InvalidAnswer, InvalidParameters
from evalstats.reports import Report

if TYPE_CHECKING:
    from django.utils.functional import Promise

    from corpora.records import DialogueRecord
    from evalstats.planner import ABDesign, ChatDesign, KappaDesign, LikertDesign, SSADesign

    PlannerDesign = LikertDesign | SSADesign | ABDesign | ChatDesign | KappaDesign

Reliability = Literal["good", "noisy", "spammer"]


@dataclass(frozen=True)
class Question:
    """One question the worker answers about an item, with its allowed answers."""

    key: str
    text: str
    choices: tuple[tuple[str, str], ...]
    help: str = ""
    # Ask this question only when another question has this answer: (question key, value).
    only_if: tuple[str, str] | None = None


def context_clean(payload: Mapping[str, Any]) -> list[str]:
    """Return an item payload's ``context``: a non-empty list of non-empty utterances."""
    if not isinstance(payload, Mapping):
        raise InvalidParameters("An item must be a JSON object.")
    context = payload.get("context")
    if (
        not isinstance(context, list)
        or not context
        or not all(isinstance(t, str) and t.strip() for t in context)
    ):
        raise InvalidParameters("'context' must be a non-empty list of utterances.")
    return [t.strip() for t in context]


class Protocol(ABC):
    """An evaluation protocol: parameters, items, the worker page, answers and the report.

    This is the core every protocol has. What only some protocols can do is a capability it
    declares by also subclassing it (``ResponseItems``, ``DialogueItems``, ``GoldChecks``,
    ``Simulated``, ``LiveChat``, ``ModelPairs`` below); callers ask
    ``isinstance(protocol, Capability)``, never a protocol's name. Implementations are
    stateless; every method takes the campaign's cleaned parameters.
    """

    name: ClassVar[str]
    title: ClassVar[str]
    template_name: ClassVar[str]
    # What a new campaign of this protocol starts with: workers per item, seconds per item.
    default_redundancy: ClassVar[int] = 1
    default_min_seconds: ClassVar[float] = 0.0
    # Items per assignment (HIT); EmotionLines: one dialogue per HIT.
    default_items_per_assignment: ClassVar[int] = 10
    # A new campaign's cap on items per worker (conversations, for a live chat).
    default_max_items_per_worker: ClassVar[int | None] = None
    # The item payload keys ``report`` reads (None: the whole payload). Declaring them lets a
    # report of a large campaign read a few strings per item instead of every payload.
    report_payload_keys: ClassVar[tuple[str, ...] | None] = None
    # Parameter name → why its default is what it is (the PROTOCOLS.md section or paper it
    # comes from); the launch wizard shows it beside each pre-filled value.
    parameter_help: ClassVar[dict[str, str]] = {}
    # Questions answered in the worker's own words (ACUTE-Eval's reason): erased, as their
    # chat turns are, when the worker is forgotten (``services.worker_forget``).
    text_questions: ClassVar[tuple[str, ...]] = ()
    # The published wording of the instructions (Markdown, marked for translation): what a
    # worker reads when the campaign has none of its own (``study_pages.instructions_shown``).
    # Empty when the worker page's own card says it all (ACUTE-Eval).
    instructions: ClassVar[str | Promise] = ""

    @abstractmethod
    def default_parameters(self) -> dict[str, Any]:
        """Return the published defaults."""

    def default_instructions(self, parameters: Mapping[str, Any]) -> str:
        """Return the published instructions (Markdown) for these parameters, in the active
        language."""
        return str(self.instructions)

    def parameters_merged(self, parameters: Mapping[str, Any]) -> dict[str, Any]:
        """Return the defaults updated with ``parameters``; refuse a non-object or unknown keys.

        ``clean_parameters`` implementations start here, then check each value.
        """
        if not isinstance(parameters, Mapping):
            raise InvalidParameters("Parameters must be a JSON object.")
        merged = self.default_parameters()
        unknown = sorted(map(str, set(parameters) - set(merged)))
        if unknown:
            raise InvalidParameters(
                f"Unknown parameter(s) of {self.title}: {', '.join(unknown)}. "
                f"Known: {', '.join(sorted(merged))}."
            )
        return merged | dict(parameters)

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

    def presentation(
        self, parameters: Mapping[str, Any], payload: Mapping[str, Any], seed: str
    ) -> dict[str, Any]:
        """Return what this worker is shown beyond the payload (e.g. a random order).

        ``seed`` is stable for one worker and item, so a reload shows the same thing; the
        server recomputes it on submission and stores it with the judgment.
        """
        return {}

    def judgment_winner(
        self,
        payload: Mapping[str, Any],
        question: str,
        value: Any,
        presentation: Mapping[str, Any] | None,
    ) -> str | None:
        """Return what one judgment chose among the item's systems, for the exports'
        ``winner`` column (A/B: the model chosen, or "both" / "neither"); None where a
        protocol compares no systems, as most do."""
        return None

    def item_min_seconds(self, parameters: Mapping[str, Any], payload: Mapping[str, Any]) -> float:
        """Return the least time an honest worker needs for this item (beyond the campaign's
        minimum per item), e.g. EmotionLines' 3 s per utterance."""
        return 0.0

    def check_item_answers(  # noqa: B027 (optional hook: most protocols need no check)
        self,
        parameters: Mapping[str, Any],
        payload: Mapping[str, Any],
        answers: Mapping[str, Any],
        *,
        spent_ms: int,
    ) -> None:
        """Check answers (as sent) against the item itself; raise InvalidAnswer if wrong.

        Called on submission after ``clean_answers``, with the server-measured time since the
        item was leased, for rules that depend on the item (every utterance labeled, time per
        utterance). Most protocols need nothing here.
        """

    @abstractmethod
    def report(
        self, parameters: Mapping[str, Any], items: pd.DataFrame, judgments: pd.DataFrame
    ) -> Report:
        """Aggregate judgments into the protocol's report.

        ``items`` has columns ``item`` and ``payload`` (only ``report_payload_keys`` of it when
        the protocol declares them); ``judgments`` has ``item``, ``rater``, ``question``,
        ``value``, ``presentation`` and ``time_spent_ms``.
        """


class ResponseItems(Protocol):
    """Capability: items are built from a context set and model responses (generated by
    ``modelhub`` or read from a file): the wizard's generation step and ``add_items``."""

    @abstractmethod
    def items_build(
        self,
        parameters: Mapping[str, Any],
        examples: Sequence[tuple[str, Sequence[str]]],
        responses: Mapping[str, Sequence[str]],
    ) -> tuple[list[tuple[str, dict[str, Any]]], int]:
        """Return (key, payload) items built from contexts and model responses, and how many
        candidates were skipped. ``responses`` maps a model to one response per example."""


class DialogueItems(Protocol):
    """Capability: items are built from imported dialogues (one item per dialogue or per
    last turn), and a campaign's labels go back out as labeled dialogues."""

    @abstractmethod
    def items_from_dialogues(
        self, parameters: Mapping[str, Any], dialogues: Sequence[DialogueRecord]
    ) -> list[tuple[str, dict[str, Any]]]:
        """Return (key, payload) items built from imported (or collected) dialogues, e.g. one
        EmotionLines item per dialogue. ``items_add`` checks each payload with ``clean_item``;
        raise InvalidParameters only for what that check cannot name (e.g. a wrong shape)."""

    @abstractmethod
    def labeled_dialogues(
        self, parameters: Mapping[str, Any], items: pd.DataFrame, judgments: pd.DataFrame
    ) -> list[DialogueRecord]:
        """Return the items' dialogues with the crowd's labels and every worker's vote
        (workers by pseudonym), for the campaign's dialogue export."""


class GoldChecks(Protocol):
    """Capability: gold items (known answers) may be mixed in and checked (``quality``)."""

    def clean_gold(
        self, parameters: Mapping[str, Any], gold: Mapping[str, Any]
    ) -> dict[str, list[Any]]:
        """Return a gold item's accepted answers, {question: [stored values]}.

        Each accepted value goes through ``clean_answers`` one question at a time, so gold
        compares with what a worker's answer is stored as.
        """
        if not isinstance(gold, Mapping) or not gold:
            raise InvalidParameters("Gold answers must be a non-empty object {question: [values]}.")
        keys = {q.key for q in self.questions(parameters)}
        cleaned: dict[str, list[Any]] = {}
        for question, accepted in gold.items():
            if question not in keys:
                raise InvalidParameters(
                    f"Gold answers name an unknown question {question!r}; "
                    f"known: {', '.join(sorted(keys))}."
                )
            values = accepted if isinstance(accepted, list) else [accepted]
            if not values:
                raise InvalidParameters(f"Gold answers for {question!r} list no value.")
            cleaned[question] = [
                self.clean_gold_value(parameters, gold, question, v) for v in values
            ]
        return cleaned

    def clean_gold_value(
        self, parameters: Mapping[str, Any], gold: Mapping[str, Any], question: str, value: Any
    ) -> Any:
        """Return one accepted gold value as it would be stored; raise InvalidParameters.

        The other questions are filled with the gold's own values, or else with each choice in
        turn, so that rules across questions (e.g. SSA's) see a complete answer.
        """
        questions = self.questions(parameters)
        fillers = [{q: (v if isinstance(v, list) else [v])[0] for q, v in gold.items() if v != []}]
        fillers += [
            {q.key: q.choices[min(i, len(q.choices) - 1)][0] for q in questions if q.choices}
            for i in range(max((len(q.choices) for q in questions), default=0))
        ]
        problem = "it fits none of this question's answers"
        for filler in fillers:
            answers = {q.key: filler.get(q.key) for q in questions} | {question: value}
            try:
                return self.clean_answers(parameters, answers)[question]
            except InvalidAnswer as exc:
                if question in exc.fields:
                    problem = exc.fields[question]
                    break
        raise InvalidParameters(f"Gold value {value!r} for {question!r}: {problem}")

    def gold_correct(
        self,
        gold: Mapping[str, list[Any]],
        answers: Mapping[str, Any],
        presentation: Mapping[str, Any],
    ) -> bool:
        """Tell whether stored answers (given what was shown) match every gold question."""
        return all(answers.get(question) in accepted for question, accepted in gold.items())


class Simulated(Protocol):
    """Capability: the demo's simulated crowd can answer this protocol's items."""

    @abstractmethod
    def simulate_answers(
        self,
        parameters: Mapping[str, Any],
        payload: Mapping[str, Any],
        shown: Mapping[str, Any],
        truth: Mapping[str, Any] | None,
        reliability: Reliability,
        rng: random.Random,
    ) -> dict[str, str]:
        """Answer like a simulated worker of the given reliability would, as form strings.

        ``shown`` is the worker's ``presentation`` of the item (e.g. the order of responses).
        """


# A simulated worker's chance of giving the true label (a spammer picks at random).
LABEL_ACCURACY: dict[Reliability, float] = {"good": 0.85, "noisy": 0.6}


def label_simulated(
    labels: list[str], right: Any, reliability: Reliability, rng: random.Random
) -> str:
    """Return a simulated worker's label: the true one with ``LABEL_ACCURACY``, else another;
    a spammer, or an item without a known label, gets one at random."""
    if reliability == "spammer" or right not in labels:
        return rng.choice(labels)
    if rng.random() < LABEL_ACCURACY[reliability]:
        return str(right)
    return rng.choice([x for x in labels if x != right])


class Judged(Protocol):
    """Capability: an LLM judge can answer this protocol's items (``judges``).

    ``judge_prompt`` is the protocol's part of the default template, after the common head
    that shows the workers' instructions and the item (``judges.prompts``); it must show
    ``{questions}``. ``judge_prompt_version`` names that text: it is part of the judge's
    rater id, so a changed prompt takes a new version. Live chats have none: their items are
    made while workers chat.
    """

    judge_prompt: ClassVar[str]
    judge_prompt_version: ClassVar[str]


class Planned(Protocol):
    """Capability: the study planner (``evalstats.planner``) sizes this protocol's studies,
    in the wizard's review step (``dashboard.drafts.plan``) and in ``manage.py plan``.

    ``planner_sizing`` says what a draft's items are counted by: ``"model"`` (items per
    payload ``model``), ``"pair"`` (items per pair ``model_a`` vs ``model_b``),
    ``"dialogue"`` (utterances per dialogue) or ``"chat"`` (no items yet: the chats make them;
    one entry per model of the parameters). ``planner_design_type`` is the design it returns;
    ``planner_words`` are further names of that design in ``manage.py plan`` (A/B: ``ab``),
    beside the protocol's own name.
    """

    planner_sizing: ClassVar[Literal["model", "pair", "dialogue", "chat"]] = "model"
    planner_words: ClassVar[tuple[str, ...]] = ()
    planner_design_type: ClassVar[type[PlannerDesign]]

    @abstractmethod
    def planner_design(
        self,
        parameters: Mapping[str, Any],
        *,
        redundancy: int,
        sizes: Mapping[str, int],
        n_boot: int,
    ) -> PlannerDesign:
        """Return the planner's design of a draft: ``sizes`` are its non-gold items counted
        as ``planner_sizing`` says (never empty), ``redundancy`` the workers per item,
        ``n_boot`` the resamples a simulated study may take. Raise ValueError for a design
        the planner cannot simulate."""


# The workers a planned design shares when the draft cannot say (``manage.py plan``'s
# default pool for SSA and A/B).
PLANNER_POOL = 20


class LiveChat(Protocol):
    """Capability: the study is a live chat on websockets (``chat``); its items and
    dialogues are made while workers chat, so a campaign goes live without items, and
    ``max_items_per_worker`` counts conversations.

    ``chat_mode`` names how the chat runs: ``"pair"`` — two workers talk, each in turn
    (``chat.empathetic``); ``"bot"`` — one worker talks with a model and labels
    its turns (``chat.bot``); ``"side_by_side"`` — one worker talks with two hidden models at once
    and votes (``chat.arena``). ``seats_needed`` is how many conversations one
    arrival starts (ED: two rounds, roles swapped); ``dialogues_per_conversation`` how many
    dialogues one conversation stores (the arena: one per side).
    """

    chat_mode: ClassVar[Literal["pair", "bot", "side_by_side"]]
    seats_needed: ClassVar[int] = 1
    dialogues_per_conversation: ClassVar[int] = 1

    @abstractmethod
    def report_dialogues(
        self, parameters: Mapping[str, Any], report: Report, dialogues: pd.DataFrame
    ) -> None:
        """Add the tables of a live chat protocol's conversations to ``report``.

        ``dialogues`` has one row per conversation: ``dialogue`` (key), ``status``,
        ``flagged``, ``flags``, ``emotion``, ``model``, ``utterances``, ``words``, ``pastes``.
        """


class Battles(Protocol):
    """Capability: every vote is one battle of the public arena format (Chatbot Arena /
    LMArena; ``corpora.arena``), so the campaign's votes can be exported in it
    (``manage.py export --format battles``). The vote is the answer to ``battle_question``."""

    battle_question: ClassVar[str]

    @abstractmethod
    def battle_record(
        self, payload: Mapping[str, Any], judge: str, vote: Any, at: datetime
    ) -> dict[str, Any]:
        """Return one vote as a public-format record: from its item's payload, the judge's
        name, the stored answer and when it was given; raise ValueError for an answer the
        format cannot hold."""


ALLOCATIONS = ("uniform", "adaptive")
# The allocation parameters a ModelPairs protocol accepts beside its own, with defaults.
ALLOCATION_PARAMETERS: dict[str, Any] = {"allocation": "uniform", "adaptive_min_per_pair": 10}
# Their help, shown by the wizard beside each ModelPairs protocol's own parameters.
ALLOCATION_PARAMETER_HELP = {
    "allocation": "'uniform': every item judged in turn; 'adaptive': new judgments steered to "
    "the model pairs whose order is least certain, for fewer judgments to the same ranking "
    "(evalsite's choice; docs/protocols.md, 'Adaptive allocation').",
    "adaptive_min_per_pair": "With adaptive allocation, the judgments every model pair gets "
    "before steering starts, so no pair goes uncompared (evalsite's choice).",
}


def allocation_parameters_clean(values: Mapping[str, Any]) -> dict[str, Any]:
    """Return the allocation parameters of ``values`` (defaults filled in); raise
    InvalidParameters naming each bad one."""
    cleaned = ALLOCATION_PARAMETERS | {k: values[k] for k in ALLOCATION_PARAMETERS if k in values}
    errors: dict[str, str] = {}
    if not isinstance(cleaned["allocation"], str) or cleaned["allocation"] not in ALLOCATIONS:
        errors["allocation"] = (
            "Must be 'uniform' (every item judged in turn) or 'adaptive' (judgments steered "
            "to the model pairs whose order is least certain)."
        )
    floor = cleaned["adaptive_min_per_pair"]
    if isinstance(floor, bool) or not isinstance(floor, int) or not 0 <= floor <= 100_000:
        errors["adaptive_min_per_pair"] = (
            "Must be a whole number from 0 to 100000: the judgments every model pair gets "
            "before adaptive allocation steers."
        )
    if errors:
        first = next(iter(errors.values()))
        raise InvalidParameters(
            first if len(errors) == 1 else "Invalid allocation parameters.", fields=errors
        )
    return cleaned


class ModelPairs(Protocol):
    """Capability: every item compares two models, named by its payload's ``model_a`` and
    ``model_b`` (A/B, ACUTE-Eval). A campaign may then steer new judgments to the model pairs
    whose order is least certain (``allocation: "adaptive"``; ``evalstats.adaptive``,
    ``annotation.steering``): the capability adds the allocation parameters
    (``ALLOCATION_PARAMETERS``) to the protocol's own and checks them, so a protocol declares it
    and needs nothing else.
    """

    def parameters_merged(self, parameters: Mapping[str, Any]) -> dict[str, Any]:
        """Return the protocol's merged parameters plus the checked allocation parameters."""
        if not isinstance(parameters, Mapping):
            raise InvalidParameters("Parameters must be a JSON object.")
        own = {k: v for k, v in parameters.items() if k not in ALLOCATION_PARAMETERS}
        merged = super().parameters_merged(own)
        chosen = {k: parameters.get(k, merged.get(k, v)) for k, v in ALLOCATION_PARAMETERS.items()}
        return merged | allocation_parameters_clean(chosen)

    def pair_question(self, parameters: Mapping[str, Any]) -> str:
        """Return the question whose answers (through ``judgment_winner``) order a pair for
        adaptive allocation: the first one asked."""
        return self.questions(parameters)[0].key
