from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="ItemsAdded")


@_attrs_define
class ItemsAdded:
    """
    Attributes:
        added (int): New items (an item sent again with the same content is skipped).
        skipped (int | Unset):  Default: 0.
        jobs (list[int] | Unset): Generation jobs the upload waits for, if any.
    """

    added: int
    skipped: int | Unset = 0
    jobs: list[int] | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        added = self.added

        skipped = self.skipped

        jobs: list[int] | Unset = UNSET
        if not isinstance(self.jobs, Unset):
            jobs = self.jobs

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "added": added,
            }
        )
        if skipped is not UNSET:
            field_dict["skipped"] = skipped
        if jobs is not UNSET:
            field_dict["jobs"] = jobs

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        added = d.pop("added")

        skipped = d.pop("skipped", UNSET)

        jobs = cast(list[int], d.pop("jobs", UNSET))

        items_added = cls(
            added=added,
            skipped=skipped,
            jobs=jobs,
        )

        items_added.additional_properties = d
        return items_added

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
