from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.model_out_config import ModelOutConfig
    from ..models.model_out_decoding import ModelOutDecoding


T = TypeVar("T", bound="ModelOut")


@_attrs_define
class ModelOut:
    """
    Attributes:
        name (str):
        backend (str):
        config (ModelOutConfig):
        decoding (ModelOutDecoding): As registered; {}: greedy.
        notes (str):
        created_at (datetime.datetime):
    """

    name: str
    backend: str
    config: ModelOutConfig
    decoding: ModelOutDecoding
    notes: str
    created_at: datetime.datetime
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        backend = self.backend

        config = self.config.to_dict()

        decoding = self.decoding.to_dict()

        notes = self.notes

        created_at = self.created_at.isoformat()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "name": name,
                "backend": backend,
                "config": config,
                "decoding": decoding,
                "notes": notes,
                "created_at": created_at,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.model_out_config import ModelOutConfig  # noqa: PLC0415
        from ..models.model_out_decoding import ModelOutDecoding  # noqa: PLC0415

        d = dict(src_dict)
        name = d.pop("name")

        backend = d.pop("backend")

        config = ModelOutConfig.from_dict(d.pop("config"))

        decoding = ModelOutDecoding.from_dict(d.pop("decoding"))

        notes = d.pop("notes")

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        model_out = cls(
            name=name,
            backend=backend,
            config=config,
            decoding=decoding,
            notes=notes,
            created_at=created_at,
        )

        model_out.additional_properties = d
        return model_out

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
