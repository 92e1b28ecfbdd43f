from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.dataset_out import DatasetOut


T = TypeVar("T", bound="DatasetImported")


@_attrs_define
class DatasetImported:
    """
    Attributes:
        dataset (DatasetOut):
        utterances (int):
        replacements (int): Spans de-identified (with deidentify).
    """

    dataset: DatasetOut
    utterances: int
    replacements: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        dataset = self.dataset.to_dict()

        utterances = self.utterances

        replacements = self.replacements

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "dataset": dataset,
                "utterances": utterances,
                "replacements": replacements,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.dataset_out import DatasetOut  # noqa: PLC0415

        d = dict(src_dict)
        dataset = DatasetOut.from_dict(d.pop("dataset"))

        utterances = d.pop("utterances")

        replacements = d.pop("replacements")

        dataset_imported = cls(
            dataset=dataset,
            utterances=utterances,
            replacements=replacements,
        )

        dataset_imported.additional_properties = d
        return dataset_imported

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
