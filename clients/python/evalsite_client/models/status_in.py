from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..models.status_in_status import StatusInStatus

T = TypeVar("T", bound="StatusIn")


@_attrs_define
class StatusIn:
    """
    Attributes:
        status (StatusInStatus): live: a draft is launched (the wizard's last step), a paused one resumes.
    """

    status: StatusInStatus

    def to_dict(self) -> dict[str, Any]:
        status = self.status.value

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "status": status,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        status = StatusInStatus(d.pop("status"))

        status_in = cls(
            status=status,
        )

        return status_in
