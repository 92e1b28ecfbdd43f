"""What the wizard shows of each protocol: its summary, its needs and its explained defaults."""

from __future__ import annotations

import inspect
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from annotation.models import Campaign
from annotation.protocols import LiveChat, Protocol, ResponseItems, registry
from evalsite.errors import InvalidParameters
from modelhub.models import ModelEndpoint

# The campaign settings the wizard asks for besides the protocol's parameters.
SETTINGS = (
    "redundancy",
    "items_per_assignment",
    "min_seconds_per_item",
    "max_items_per_worker",
    "gold_rate",
    "gold_min_accuracy",
    "gold_min_answered",
    "reward",
    "budget",
    "open_links",
    "open_arrivals_per_address",
    "training_pass_mark",
    "training_attempts",
)
_EXTRA_HELP = {
    "open_links": "Local links only. Off (the default): each worker needs the personal signed "
    "link you issue (Workers → links, or `manage.py worker_links`). On: anyone with the link "
    "takes part under any workerId they type — for a demo or a classroom.",
    "training_pass_mark": "With training items (uploaded in the next step): the share a "
    "worker must answer as expected, with feedback after each, before their first item. "
    "Passing is remembered across your campaigns of the same qualification.",
    "training_attempts": "With training items: how many tries a worker gets (at least 2). "
    "Failing them all ends politely, with the provider's return path and no rejection.",
    "budget": "The most the campaign may spend, fees and bonuses included; going live is "
    "refused when the cost estimate does not fit.",
}


@dataclass(frozen=True)
class Explained:
    """One pre-filled value and why it is what it is."""

    name: str
    value: Any
    help: str

    @property
    def as_json(self) -> str:
        return json.dumps(self.value, ensure_ascii=False)


@dataclass(frozen=True)
class ProtocolCard:
    """What the wizard shows of a protocol: its summary and its explained defaults."""

    name: str
    title: str
    summary: str
    needs_items: bool
    builds_items: bool
    parameters: tuple[Explained, ...]
    settings: tuple[Explained, ...]
    incomplete: str = ""  # what the defaults lack, if they cannot be used as they are
    chats_with_models: bool = False  # its ``models`` parameter names registered models


def protocol_needs_items(protocol: Protocol) -> bool:
    """Tell whether a campaign of ``protocol`` needs imported items before it goes live.

    Live chat protocols make their items while workers chat.
    """
    return not isinstance(protocol, LiveChat)


def protocol_builds_items(protocol: Protocol) -> bool:
    """Tell whether the protocol turns contexts and model responses into items."""
    return isinstance(protocol, ResponseItems)


def protocol_chats_with_models(protocol: Protocol) -> bool:
    """Tell whether workers chat with the registered models that the protocol's ``models``
    parameter names (interactive SSA, the arena): each must be a ``ModelEndpoint``."""
    return isinstance(protocol, LiveChat) and "models" in protocol.default_parameters()


def models_registered() -> list[tuple[str, str]]:
    """Return every registered model's name and backend, by name."""
    return list(ModelEndpoint.objects.order_by("name").values_list("name", "backend"))


def models_unregistered(campaign: Campaign) -> list[str]:
    """Return the models the campaign's ``models`` parameter names that are not registered
    (none for a protocol whose workers chat with no model)."""
    if not protocol_chats_with_models(registry.get(campaign.protocol)):
        return []
    named = campaign.parameters.get("models") if isinstance(campaign.parameters, dict) else None
    names = [str(m) for m in named] if isinstance(named, list) else []
    known = set(ModelEndpoint.objects.filter(name__in=names).values_list("name", flat=True))
    return [name for name in names if name not in known]


def models_needed(protocol: Protocol, missing: list[str]) -> str:
    """Say which named models are not registered and what the protocol needs of them."""
    needs = protocol.parameter_help.get("models", "")
    return (
        f"Not registered: {', '.join(missing)}. {needs} Register a model with "
        "`manage.py register_model` (docs/modelhub.md), or name registered ones in the "
        "settings' parameters."
    ).replace("  ", " ")


def _summary(protocol: Protocol) -> str:
    module = inspect.getmodule(type(protocol))
    text = inspect.cleandoc((module.__doc__ if module else None) or type(protocol).__doc__ or "")
    return " ".join(text.split("\n\n")[0].split())


def _field(name: str) -> Any:
    return Campaign._meta.get_field(name)


def setting_defaults(protocol: Protocol) -> dict[str, Any]:
    """Return the campaign settings a new campaign of ``protocol`` starts with."""
    values = {name: _field(name).get_default() for name in SETTINGS}
    values["redundancy"] = protocol.default_redundancy
    values["items_per_assignment"] = protocol.default_items_per_assignment
    values["min_seconds_per_item"] = protocol.default_min_seconds
    values["max_items_per_worker"] = protocol.default_max_items_per_worker
    return values


def setting_help(name: str) -> str:
    """Return the explanation of a campaign setting (the model field's help text)."""
    return _EXTRA_HELP.get(name) or str(_field(name).help_text)


def protocol_card(name: str) -> ProtocolCard:
    """Return the wizard's card for the protocol ``name``; refuse an unknown name."""
    try:
        protocol = registry.get(name)
    except KeyError as exc:
        raise InvalidParameters(f"Choose one of the protocols: {exc.args[0]}.") from None
    helps: Mapping[str, str] = protocol.parameter_help
    defaults = setting_defaults(protocol)
    try:
        protocol.clean_parameters({})
        incomplete = ""
    except InvalidParameters as exc:
        incomplete = "; ".join(f"{k}: {v}" for k, v in exc.fields.items()) or exc.message
    return ProtocolCard(
        name=protocol.name,
        title=protocol.title,
        summary=_summary(protocol),
        needs_items=protocol_needs_items(protocol),
        builds_items=protocol_builds_items(protocol),
        parameters=tuple(
            Explained(key, value, helps.get(key, "The protocol's default."))
            for key, value in protocol.default_parameters().items()
        ),
        settings=tuple(Explained(key, defaults[key], setting_help(key)) for key in SETTINGS),
        incomplete=incomplete,
        chats_with_models=protocol_chats_with_models(protocol),
    )


def protocol_cards() -> list[ProtocolCard]:
    return [protocol_card(p.name) for p in registry.all()]
