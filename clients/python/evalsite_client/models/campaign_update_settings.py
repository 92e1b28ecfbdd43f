from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="CampaignUpdateSettings")


@_attrs_define
class CampaignUpdateSettings:
    """Settings by name (redundancy, items_per_assignment, lease_seconds, reward, budget, gold_rate, gold_min_accuracy,
    gold_min_answered, min_seconds_per_item, max_items_per_worker, topup_max, training_pass_mark, training_attempts,
    open_links, open_arrivals_per_address, rate_per_ip, rate_per_worker, chat_frames_per_second), as the wizard takes
    them.

    """

    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        campaign_update_settings = cls()

        campaign_update_settings.additional_properties = d
        return campaign_update_settings

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
