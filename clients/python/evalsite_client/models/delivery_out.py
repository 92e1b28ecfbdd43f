from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.delivery_out_status import DeliveryOutStatus

T = TypeVar("T", bound="DeliveryOut")


@_attrs_define
class DeliveryOut:
    """
    Attributes:
        id (str): The delivery id (X-Evalsite-Delivery): the same over retries.
        event (str):
        status (DeliveryOutStatus):
        attempts (int):
        last_status_code (int | None): The receiver's last answer; null: none.
        last_error (str):
        created_at (datetime.datetime):
        next_attempt_at (datetime.datetime):
        delivered_at (datetime.datetime | None):
    """

    id: str
    event: str
    status: DeliveryOutStatus
    attempts: int
    last_status_code: int | None
    last_error: str
    created_at: datetime.datetime
    next_attempt_at: datetime.datetime
    delivered_at: datetime.datetime | None
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        event = self.event

        status = self.status.value

        attempts = self.attempts

        last_status_code: int | None
        last_status_code = self.last_status_code

        last_error = self.last_error

        created_at = self.created_at.isoformat()

        next_attempt_at = self.next_attempt_at.isoformat()

        delivered_at: None | str
        if isinstance(self.delivered_at, datetime.datetime):
            delivered_at = self.delivered_at.isoformat()
        else:
            delivered_at = self.delivered_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "event": event,
                "status": status,
                "attempts": attempts,
                "last_status_code": last_status_code,
                "last_error": last_error,
                "created_at": created_at,
                "next_attempt_at": next_attempt_at,
                "delivered_at": delivered_at,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        id = d.pop("id")

        event = d.pop("event")

        status = DeliveryOutStatus(d.pop("status"))

        attempts = d.pop("attempts")

        def _parse_last_status_code(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        last_status_code = _parse_last_status_code(d.pop("last_status_code"))

        last_error = d.pop("last_error")

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        next_attempt_at = datetime.datetime.fromisoformat(d.pop("next_attempt_at"))

        def _parse_delivered_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                delivered_at_type_0 = datetime.datetime.fromisoformat(data)

                return delivered_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        delivered_at = _parse_delivered_at(d.pop("delivered_at"))

        delivery_out = cls(
            id=id,
            event=event,
            status=status,
            attempts=attempts,
            last_status_code=last_status_code,
            last_error=last_error,
            created_at=created_at,
            next_attempt_at=next_attempt_at,
            delivered_at=delivered_at,
        )

        delivery_out.additional_properties = d
        return delivery_out

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
