from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define

from ..models.campaign_in_protocol import CampaignInProtocol
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.campaign_in_parameters import CampaignInParameters
    from ..models.settings_in import SettingsIn
    from ..models.study_in import StudyIn


T = TypeVar("T", bound="CampaignIn")


@_attrs_define
class CampaignIn:
    """
    Attributes:
        slug (str): 1–64 lowercase letters, digits or '-'.
        protocol (CampaignInProtocol):
        name (str | Unset):  Default: ''.
        parameters (CampaignInParameters | Unset): The protocol's parameters, checked by the protocol.
        settings (SettingsIn | Unset): Settings by name, as the wizard takes them (campaign_settings.SETTINGS); money as
            text ("0.50") or a whole number.
        study (StudyIn | Unset): The study pages' texts (study_pages.STUDY_FIELDS).
    """

    slug: str
    protocol: CampaignInProtocol
    name: str | Unset = ""
    parameters: CampaignInParameters | Unset = UNSET
    settings: SettingsIn | Unset = UNSET
    study: StudyIn | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        slug = self.slug

        protocol = self.protocol.value

        name = self.name

        parameters: dict[str, Any] | Unset = UNSET
        if not isinstance(self.parameters, Unset):
            parameters = self.parameters.to_dict()

        settings: dict[str, Any] | Unset = UNSET
        if not isinstance(self.settings, Unset):
            settings = self.settings.to_dict()

        study: dict[str, Any] | Unset = UNSET
        if not isinstance(self.study, Unset):
            study = self.study.to_dict()

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "slug": slug,
                "protocol": protocol,
            }
        )
        if name is not UNSET:
            field_dict["name"] = name
        if parameters is not UNSET:
            field_dict["parameters"] = parameters
        if settings is not UNSET:
            field_dict["settings"] = settings
        if study is not UNSET:
            field_dict["study"] = study

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.campaign_in_parameters import CampaignInParameters  # noqa: PLC0415
        from ..models.settings_in import SettingsIn  # noqa: PLC0415
        from ..models.study_in import StudyIn  # noqa: PLC0415

        d = dict(src_dict)
        slug = d.pop("slug")

        protocol = CampaignInProtocol(d.pop("protocol"))

        name = d.pop("name", UNSET)

        _parameters = d.pop("parameters", UNSET)
        parameters: CampaignInParameters | Unset
        if isinstance(_parameters, Unset):
            parameters = UNSET
        else:
            parameters = CampaignInParameters.from_dict(_parameters)

        _settings = d.pop("settings", UNSET)
        settings: SettingsIn | Unset
        if isinstance(_settings, Unset):
            settings = UNSET
        else:
            settings = SettingsIn.from_dict(_settings)

        _study = d.pop("study", UNSET)
        study: StudyIn | Unset
        if isinstance(_study, Unset):
            study = UNSET
        else:
            study = StudyIn.from_dict(_study)

        campaign_in = cls(
            slug=slug,
            protocol=protocol,
            name=name,
            parameters=parameters,
            settings=settings,
            study=study,
        )

        return campaign_in
