from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.context_in import ContextIn


T = TypeVar("T", bound="GenerationIn")


@_attrs_define
class GenerationIn:
    """
    Attributes:
        contexts (list[ContextIn]):
        max_turns (int | Unset): Most turns a context may have (the wizard's limit). Default: 3.
        label (str | Unset): What the job is for. Default: ''.
    """

    contexts: list[ContextIn]
    max_turns: int | Unset = 3
    label: str | Unset = ""

    def to_dict(self) -> dict[str, Any]:
        contexts = []
        for contexts_item_data in self.contexts:
            contexts_item = contexts_item_data.to_dict()
            contexts.append(contexts_item)

        max_turns = self.max_turns

        label = self.label

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "contexts": contexts,
            }
        )
        if max_turns is not UNSET:
            field_dict["max_turns"] = max_turns
        if label is not UNSET:
            field_dict["label"] = label

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.context_in import ContextIn  # noqa: PLC0415

        d = dict(src_dict)
        contexts = []
        _contexts = d.pop("contexts")
        for contexts_item_data in _contexts:
            contexts_item = ContextIn.from_dict(contexts_item_data)

            contexts.append(contexts_item)

        max_turns = d.pop("max_turns", UNSET)

        label = d.pop("label", UNSET)

        generation_in = cls(
            contexts=contexts,
            max_turns=max_turns,
            label=label,
        )

        return generation_in
