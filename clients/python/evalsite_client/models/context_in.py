from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="ContextIn")


@_attrs_define
class ContextIn:
    """
    Attributes:
        context (list[str] | str): The turns, oldest first (or one text).
        id (None | str | Unset): Default: ctx-<position>.
        reference (None | str | Unset):
    """

    context: list[str] | str
    id: None | str | Unset = UNSET
    reference: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        context: list[str] | str
        if isinstance(self.context, list):
            context = self.context

        else:
            context = self.context

        id: None | str | Unset
        if isinstance(self.id, Unset):
            id = UNSET
        else:
            id = self.id

        reference: None | str | Unset
        if isinstance(self.reference, Unset):
            reference = UNSET
        else:
            reference = self.reference

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "context": context,
            }
        )
        if id is not UNSET:
            field_dict["id"] = id
        if reference is not UNSET:
            field_dict["reference"] = reference

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

        def _parse_context(data: object) -> list[str] | str:
            try:
                if not isinstance(data, list):
                    raise TypeError()
                context_type_0 = cast(list[str], data)

                return context_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | str, data)

        context = _parse_context(d.pop("context"))

        def _parse_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        id = _parse_id(d.pop("id", UNSET))

        def _parse_reference(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        reference = _parse_reference(d.pop("reference", UNSET))

        context_in = cls(
            context=context,
            id=id,
            reference=reference,
        )

        return context_in
