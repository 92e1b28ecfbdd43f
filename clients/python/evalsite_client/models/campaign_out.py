from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.campaign_out_parameters import CampaignOutParameters
    from ..models.campaign_out_settings import CampaignOutSettings
    from ..models.campaign_out_study import CampaignOutStudy


T = TypeVar("T", bound="CampaignOut")


@_attrs_define
class CampaignOut:
    """
    Attributes:
        slug (str):
        name (str):
        protocol (str):
        status (str):
        owner (None | str):
        parameters (CampaignOutParameters):
        settings (CampaignOutSettings): Every setting of campaign_settings.SETTINGS; money as text ("0.50").
        study (CampaignOutStudy): The study pages' texts (study_pages).
        created_at (datetime.datetime):
        updated_at (datetime.datetime):
    """

    slug: str
    name: str
    protocol: str
    status: str
    owner: None | str
    parameters: CampaignOutParameters
    settings: CampaignOutSettings
    study: CampaignOutStudy
    created_at: datetime.datetime
    updated_at: datetime.datetime
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        slug = self.slug

        name = self.name

        protocol = self.protocol

        status = self.status

        owner: None | str
        owner = self.owner

        parameters = self.parameters.to_dict()

        settings = self.settings.to_dict()

        study = self.study.to_dict()

        created_at = self.created_at.isoformat()

        updated_at = self.updated_at.isoformat()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "slug": slug,
                "name": name,
                "protocol": protocol,
                "status": status,
                "owner": owner,
                "parameters": parameters,
                "settings": settings,
                "study": study,
                "created_at": created_at,
                "updated_at": updated_at,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.campaign_out_parameters import CampaignOutParameters  # noqa: PLC0415
        from ..models.campaign_out_settings import CampaignOutSettings  # noqa: PLC0415
        from ..models.campaign_out_study import CampaignOutStudy  # noqa: PLC0415

        d = dict(src_dict)
        slug = d.pop("slug")

        name = d.pop("name")

        protocol = d.pop("protocol")

        status = d.pop("status")

        def _parse_owner(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        owner = _parse_owner(d.pop("owner"))

        parameters = CampaignOutParameters.from_dict(d.pop("parameters"))

        settings = CampaignOutSettings.from_dict(d.pop("settings"))

        study = CampaignOutStudy.from_dict(d.pop("study"))

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))

        campaign_out = cls(
            slug=slug,
            name=name,
            protocol=protocol,
            status=status,
            owner=owner,
            parameters=parameters,
            settings=settings,
            study=study,
            created_at=created_at,
            updated_at=updated_at,
        )

        campaign_out.additional_properties = d
        return campaign_out

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
