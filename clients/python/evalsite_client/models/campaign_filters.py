from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.campaign_filters_status_type_0 import CampaignFiltersStatusType0
from ..types import UNSET, Unset

T = TypeVar("T", bound="CampaignFilters")


@_attrs_define
class CampaignFilters:
    """
    Attributes:
        limit (int | Unset):  Default: 50.
        offset (int | Unset):  Default: 0.
        status (CampaignFiltersStatusType0 | None | Unset):
        protocol (None | str | Unset):
    """

    limit: int | Unset = 50
    offset: int | Unset = 0
    status: CampaignFiltersStatusType0 | None | Unset = UNSET
    protocol: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        limit = self.limit

        offset = self.offset

        status: None | str | Unset
        if isinstance(self.status, Unset):
            status = UNSET
        elif isinstance(self.status, CampaignFiltersStatusType0):
            status = self.status.value
        else:
            status = self.status

        protocol: None | str | Unset
        if isinstance(self.protocol, Unset):
            protocol = UNSET
        else:
            protocol = self.protocol

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
        if limit is not UNSET:
            field_dict["limit"] = limit
        if offset is not UNSET:
            field_dict["offset"] = offset
        if status is not UNSET:
            field_dict["status"] = status
        if protocol is not UNSET:
            field_dict["protocol"] = protocol

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        limit = d.pop("limit", UNSET)

        offset = d.pop("offset", UNSET)

        def _parse_status(data: object) -> CampaignFiltersStatusType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                status_type_0 = CampaignFiltersStatusType0(data)

                return status_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(CampaignFiltersStatusType0 | None | Unset, data)

        status = _parse_status(d.pop("status", UNSET))

        def _parse_protocol(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        protocol = _parse_protocol(d.pop("protocol", UNSET))

        campaign_filters = cls(
            limit=limit,
            offset=offset,
            status=status,
            protocol=protocol,
        )

        campaign_filters.additional_properties = d
        return campaign_filters

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
