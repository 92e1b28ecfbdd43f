from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="Figure")


@_attrs_define
class Figure:
    """
    Attributes:
        png (str):
        svg (str):
        title (str | Unset): The figure's title. Default: ''.
        alt (str | Unset): The alt text: what the figure shows, with its numbers. Default: ''.
    """

    png: str
    svg: str
    title: str | Unset = ""
    alt: str | Unset = ""
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        png = self.png

        svg = self.svg

        title = self.title

        alt = self.alt

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "png": png,
                "svg": svg,
            }
        )
        if title is not UNSET:
            field_dict["title"] = title
        if alt is not UNSET:
            field_dict["alt"] = alt

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        png = d.pop("png")

        svg = d.pop("svg")

        title = d.pop("title", UNSET)

        alt = d.pop("alt", UNSET)

        figure = cls(
            png=png,
            svg=svg,
            title=title,
            alt=alt,
        )

        figure.additional_properties = d
        return figure

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
