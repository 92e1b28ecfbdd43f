from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="WorkerActionIn")


@_attrs_define
class WorkerActionIn:
    """
    Attributes:
        reason (str | Unset):  Default: ''.
        amount (str | Unset): A bonus, e.g. "0.50". Default: ''.
    """

    reason: str | Unset = ""
    amount: str | Unset = ""

    def to_dict(self) -> dict[str, Any]:
        reason = self.reason

        amount = self.amount

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if reason is not UNSET:
            field_dict["reason"] = reason
        if amount is not UNSET:
            field_dict["amount"] = amount

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        reason = d.pop("reason", UNSET)

        amount = d.pop("amount", UNSET)

        worker_action_in = cls(
            reason=reason,
            amount=amount,
        )

        return worker_action_in
