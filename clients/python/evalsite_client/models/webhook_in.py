from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

T = TypeVar("T", bound="WebhookIn")


@_attrs_define
class WebhookIn:
    """
    Attributes:
        url (str): http(s), a public host, no credentials, at most 500 characters.
        events (list[str]): What it receives: assignment.submitted, campaign.finished, budget.low, job.done,
            worker.blocked.
    """

    url: str
    events: list[str]

    def to_dict(self) -> dict[str, Any]:
        url = self.url

        events = self.events

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "url": url,
                "events": events,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        url = d.pop("url")

        events = cast(list[str], d.pop("events"))

        webhook_in = cls(
            url=url,
            events=events,
        )

        return webhook_in
