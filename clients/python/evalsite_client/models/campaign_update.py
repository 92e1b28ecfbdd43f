from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.campaign_update_parameters_type_0 import CampaignUpdateParametersType0
    from ..models.settings_in import SettingsIn
    from ..models.study_in import StudyIn


T = TypeVar("T", bound="CampaignUpdate")


@_attrs_define
class CampaignUpdate:
    """
    Attributes:
        settings (SettingsIn | Unset): Settings by name, as the wizard takes them (campaign_settings.SETTINGS); money as
            text ("0.50") or a whole number.
        parameters (CampaignUpdateParametersType0 | None | Unset): Only while a draft (409).
        study (None | StudyIn | Unset):
    """

    settings: SettingsIn | Unset = UNSET
    parameters: CampaignUpdateParametersType0 | None | Unset = UNSET
    study: None | StudyIn | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.campaign_update_parameters_type_0 import CampaignUpdateParametersType0  # noqa: PLC0415
        from ..models.study_in import StudyIn  # noqa: PLC0415

        settings: dict[str, Any] | Unset = UNSET
        if not isinstance(self.settings, Unset):
            settings = self.settings.to_dict()

        parameters: dict[str, Any] | None | Unset
        if isinstance(self.parameters, Unset):
            parameters = UNSET
        elif isinstance(self.parameters, CampaignUpdateParametersType0):
            parameters = self.parameters.to_dict()
        else:
            parameters = self.parameters

        study: dict[str, Any] | None | Unset
        if isinstance(self.study, Unset):
            study = UNSET
        elif isinstance(self.study, StudyIn):
            study = self.study.to_dict()
        else:
            study = self.study

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if settings is not UNSET:
            field_dict["settings"] = settings
        if parameters is not UNSET:
            field_dict["parameters"] = parameters
        if study is not UNSET:
            field_dict["study"] = study

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.campaign_update_parameters_type_0 import CampaignUpdateParametersType0  # noqa: PLC0415
        from ..models.settings_in import SettingsIn  # noqa: PLC0415
        from ..models.study_in import StudyIn  # noqa: PLC0415

        d = dict(src_dict)
        _settings = d.pop("settings", UNSET)
        settings: SettingsIn | Unset
        if isinstance(_settings, Unset):
            settings = UNSET
        else:
            settings = SettingsIn.from_dict(_settings)

        def _parse_parameters(data: object) -> CampaignUpdateParametersType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                parameters_type_0 = CampaignUpdateParametersType0.from_dict(data)

                return parameters_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(CampaignUpdateParametersType0 | None | Unset, data)

        parameters = _parse_parameters(d.pop("parameters", UNSET))

        def _parse_study(data: object) -> None | StudyIn | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                study_type_0 = StudyIn.from_dict(data)

                return study_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | StudyIn | Unset, data)

        study = _parse_study(d.pop("study", UNSET))

        campaign_update = cls(
            settings=settings,
            parameters=parameters,
            study=study,
        )

        return campaign_update
