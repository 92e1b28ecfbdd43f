from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="ApproveIn")


@_attrs_define
class ApproveIn:
    """
    Attributes:
        workers (list[str] | None | Unset): Pseudonyms; null: everyone with submitted work.
    """

    workers: list[str] | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        workers: list[str] | None | Unset
        if isinstance(self.workers, Unset):
            workers = UNSET
        elif isinstance(self.workers, list):
            workers = self.workers

        else:
            workers = self.workers

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if workers is not UNSET:
            field_dict["workers"] = workers

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

        def _parse_workers(data: object) -> list[str] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                workers_type_0 = cast(list[str], data)

                return workers_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None | Unset, data)

        workers = _parse_workers(d.pop("workers", UNSET))

        approve_in = cls(
            workers=workers,
        )

        return approve_in
