from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.campaign_in_parameters import CampaignInParameters
    from ..models.campaign_in_settings import CampaignInSettings
    from ..models.campaign_in_study import CampaignInStudy


T = TypeVar("T", bound="CampaignIn")


@_attrs_define
class CampaignIn:
    """
    Attributes:
        slug (str): 1–64 lowercase letters, digits or '-'.
        protocol (str):
        name (str | Unset):  Default: ''.
        parameters (CampaignInParameters | Unset):
        settings (CampaignInSettings | Unset): Settings by name (redundancy, items_per_assignment, lease_seconds,
            reward, budget, gold_rate, gold_min_accuracy, gold_min_answered, min_seconds_per_item, max_items_per_worker,
            topup_max, training_pass_mark, training_attempts, open_links, open_arrivals_per_address, rate_per_ip,
            rate_per_worker, chat_frames_per_second), as the wizard takes them.
        study (CampaignInStudy | Unset): Study pages' texts.
    """

    slug: str
    protocol: str
    name: str | Unset = ""
    parameters: CampaignInParameters | Unset = UNSET
    settings: CampaignInSettings | Unset = UNSET
    study: CampaignInStudy | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        slug = self.slug

        protocol = self.protocol

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
        from ..models.campaign_in_settings import CampaignInSettings  # noqa: PLC0415
        from ..models.campaign_in_study import CampaignInStudy  # noqa: PLC0415

        d = dict(src_dict)
        slug = d.pop("slug")

        protocol = d.pop("protocol")

        name = d.pop("name", UNSET)

        _parameters = d.pop("parameters", UNSET)
        parameters: CampaignInParameters | Unset
        if isinstance(_parameters, Unset):
            parameters = UNSET
        else:
            parameters = CampaignInParameters.from_dict(_parameters)

        _settings = d.pop("settings", UNSET)
        settings: CampaignInSettings | Unset
        if isinstance(_settings, Unset):
            settings = UNSET
        else:
            settings = CampaignInSettings.from_dict(_settings)

        _study = d.pop("study", UNSET)
        study: CampaignInStudy | Unset
        if isinstance(_study, Unset):
            study = UNSET
        else:
            study = CampaignInStudy.from_dict(_study)

        campaign_in = cls(
            slug=slug,
            protocol=protocol,
            name=name,
            parameters=parameters,
            settings=settings,
            study=study,
        )

        return campaign_in
