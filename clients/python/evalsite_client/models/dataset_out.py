from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.dataset_out_sources import DatasetOutSources
    from ..models.dataset_out_splits import DatasetOutSplits


T = TypeVar("T", bound="DatasetOut")


@_attrs_define
class DatasetOut:
    """
    Attributes:
        name (str):
        format_ (str): The reader that imported it.
        description (str):
        dialogues (int):
        sources (DatasetOutSources): Dialogues by sub-source ('' when none).
        splits (DatasetOutSplits): Dialogues by split ('' when none).
        created_at (datetime.datetime):
    """

    name: str
    format_: str
    description: str
    dialogues: int
    sources: DatasetOutSources
    splits: DatasetOutSplits
    created_at: datetime.datetime
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        format_ = self.format_

        description = self.description

        dialogues = self.dialogues

        sources = self.sources.to_dict()

        splits = self.splits.to_dict()

        created_at = self.created_at.isoformat()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "name": name,
                "format": format_,
                "description": description,
                "dialogues": dialogues,
                "sources": sources,
                "splits": splits,
                "created_at": created_at,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.dataset_out_sources import DatasetOutSources  # noqa: PLC0415
        from ..models.dataset_out_splits import DatasetOutSplits  # noqa: PLC0415

        d = dict(src_dict)
        name = d.pop("name")

        format_ = d.pop("format")

        description = d.pop("description")

        dialogues = d.pop("dialogues")

        sources = DatasetOutSources.from_dict(d.pop("sources"))

        splits = DatasetOutSplits.from_dict(d.pop("splits"))

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        dataset_out = cls(
            name=name,
            format_=format_,
            description=description,
            dialogues=dialogues,
            sources=sources,
            splits=splits,
            created_at=created_at,
        )

        dataset_out.additional_properties = d
        return dataset_out

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
