from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="ResponseOut")


@_attrs_define
class ResponseOut:
    """
    Attributes:
        turns (list[str]):
        reference (None | str):
        response (None | str): null until generated.
    """

    turns: list[str]
    reference: None | str
    response: None | str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        turns = self.turns

        reference: None | str
        reference = self.reference

        response: None | str
        response = self.response

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "turns": turns,
                "reference": reference,
                "response": response,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        turns = cast(list[str], d.pop("turns"))

        def _parse_reference(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        reference = _parse_reference(d.pop("reference"))

        def _parse_response(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        response = _parse_response(d.pop("response"))

        response_out = cls(
            turns=turns,
            reference=reference,
            response=response,
        )

        response_out.additional_properties = d
        return response_out

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
