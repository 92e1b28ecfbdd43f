from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..models.model_in_backend import ModelInBackend
from ..models.model_in_preset_type_0 import ModelInPresetType0
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.model_in_config import ModelInConfig
    from ..models.model_in_decoding import ModelInDecoding


T = TypeVar("T", bound="ModelIn")


@_attrs_define
class ModelIn:
    """
    Attributes:
        backend (ModelInBackend):
        config (ModelInConfig | Unset): The backend's options, checked by building it.
        decoding (ModelInDecoding | Unset): e.g. {"strategy": "sample", "top_p": 0.9}.
        preset (ModelInPresetType0 | None | Unset): A decoding preset; decoding keys override its values.
        notes (str | Unset):  Default: ''.
    """

    backend: ModelInBackend
    config: ModelInConfig | Unset = UNSET
    decoding: ModelInDecoding | Unset = UNSET
    preset: ModelInPresetType0 | None | Unset = UNSET
    notes: str | Unset = ""

    def to_dict(self) -> dict[str, Any]:
        backend = self.backend.value

        config: dict[str, Any] | Unset = UNSET
        if not isinstance(self.config, Unset):
            config = self.config.to_dict()

        decoding: dict[str, Any] | Unset = UNSET
        if not isinstance(self.decoding, Unset):
            decoding = self.decoding.to_dict()

        preset: None | str | Unset
        if isinstance(self.preset, Unset):
            preset = UNSET
        elif isinstance(self.preset, ModelInPresetType0):
            preset = self.preset.value
        else:
            preset = self.preset

        notes = self.notes

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "backend": backend,
            }
        )
        if config is not UNSET:
            field_dict["config"] = config
        if decoding is not UNSET:
            field_dict["decoding"] = decoding
        if preset is not UNSET:
            field_dict["preset"] = preset
        if notes is not UNSET:
            field_dict["notes"] = notes

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.model_in_config import ModelInConfig  # noqa: PLC0415
        from ..models.model_in_decoding import ModelInDecoding  # noqa: PLC0415

        d = dict(src_dict)
        backend = ModelInBackend(d.pop("backend"))

        _config = d.pop("config", UNSET)
        config: ModelInConfig | Unset
        if isinstance(_config, Unset):
            config = UNSET
        else:
            config = ModelInConfig.from_dict(_config)

        _decoding = d.pop("decoding", UNSET)
        decoding: ModelInDecoding | Unset
        if isinstance(_decoding, Unset):
            decoding = UNSET
        else:
            decoding = ModelInDecoding.from_dict(_decoding)

        def _parse_preset(data: object) -> ModelInPresetType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                preset_type_0 = ModelInPresetType0(data)

                return preset_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(ModelInPresetType0 | None | Unset, data)

        preset = _parse_preset(d.pop("preset", UNSET))

        notes = d.pop("notes", UNSET)

        model_in = cls(
            backend=backend,
            config=config,
            decoding=decoding,
            preset=preset,
            notes=notes,
        )

        return model_in
