from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..models.webhook_in_events_item import WebhookInEventsItem

T = TypeVar("T", bound="WebhookIn")


@_attrs_define
class WebhookIn:
    """
    Attributes:
        url (str): http(s), a public host, no credentials, at most 500 characters.
        events (list[WebhookInEventsItem]): What it receives: assignment.submitted, campaign.finished, budget.low,
            job.done, worker.blocked.
    """

    url: str
    events: list[WebhookInEventsItem]

    def to_dict(self) -> dict[str, Any]:
        url = self.url

        events = []
        for events_item_data in self.events:
            events_item = events_item_data.value
            events.append(events_item)

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

        events = []
        _events = d.pop("events")
        for events_item_data in _events:
            events_item = WebhookInEventsItem(events_item_data)

            events.append(events_item)

        webhook_in = cls(
            url=url,
            events=events,
        )

        return webhook_in
