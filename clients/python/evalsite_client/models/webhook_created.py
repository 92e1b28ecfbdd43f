from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="WebhookCreated")


@_attrs_define
class WebhookCreated:
    """
    Attributes:
        id (int):
        url (str):
        events (list[str]):
        active (bool): false once it answered 410 Gone; a redelivery turns it on.
        secret_hint (str): The secret's first characters, to tell them apart.
        created_at (datetime.datetime):
        secret (str): Signs every delivery; shown in this answer only.
    """

    id: int
    url: str
    events: list[str]
    active: bool
    secret_hint: str
    created_at: datetime.datetime
    secret: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        url = self.url

        events = self.events

        active = self.active

        secret_hint = self.secret_hint

        created_at = self.created_at.isoformat()

        secret = self.secret

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "url": url,
                "events": events,
                "active": active,
                "secret_hint": secret_hint,
                "created_at": created_at,
                "secret": secret,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        id = d.pop("id")

        url = d.pop("url")

        events = cast(list[str], d.pop("events"))

        active = d.pop("active")

        secret_hint = d.pop("secret_hint")

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        secret = d.pop("secret")

        webhook_created = cls(
            id=id,
            url=url,
            events=events,
            active=active,
            secret_hint=secret_hint,
            created_at=created_at,
            secret=secret,
        )

        webhook_created.additional_properties = d
        return webhook_created

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
