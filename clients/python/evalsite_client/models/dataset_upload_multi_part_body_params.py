from __future__ import annotations

from collections.abc import Mapping
from io import BytesIO
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from .. import types
from ..models.dataset_upload_multi_part_body_params_format import DatasetUploadMultiPartBodyParamsFormat
from ..types import UNSET, File, Unset

T = TypeVar("T", bound="DatasetUploadMultiPartBodyParams")


@_attrs_define
class DatasetUploadMultiPartBodyParams:
    """
    Attributes:
        file (File): The data set file.
        format_ (DatasetUploadMultiPartBodyParamsFormat): Its format.
        name (str | Unset): The new data set's name (1–64 letters, digits, '-' or '_'); default: the file's. Default:
            ''.
        source (str | Unset): Sub-source for dialogues whose file names none. Default: ''.
        description (str | Unset): A note kept with the data set. Default: ''.
        deidentify (bool | Unset): Replace emails, URLs, IBANs, dates of birth, phone numbers, @handles first. Default:
            False.
        speakers_are_persons (bool | Unset): With deidentify: speaker names are persons too. Default: False.
    """

    file: File
    format_: DatasetUploadMultiPartBodyParamsFormat
    name: str | Unset = ""
    source: str | Unset = ""
    description: str | Unset = ""
    deidentify: bool | Unset = False
    speakers_are_persons: bool | Unset = False
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        file = self.file.to_tuple()

        format_ = self.format_.value

        name = self.name

        source = self.source

        description = self.description

        deidentify = self.deidentify

        speakers_are_persons = self.speakers_are_persons

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "file": file,
                "format": format_,
            }
        )
        if name is not UNSET:
            field_dict["name"] = name
        if source is not UNSET:
            field_dict["source"] = source
        if description is not UNSET:
            field_dict["description"] = description
        if deidentify is not UNSET:
            field_dict["deidentify"] = deidentify
        if speakers_are_persons is not UNSET:
            field_dict["speakers_are_persons"] = speakers_are_persons

        return field_dict

    def to_multipart(self) -> types.RequestFiles:
        files: types.RequestFiles = []

        files.append(("file", self.file.to_tuple()))

        files.append(("format", (None, str(self.format_.value).encode(), "text/plain")))

        if not isinstance(self.name, Unset):
            files.append(("name", (None, str(self.name).encode(), "text/plain")))

        if not isinstance(self.source, Unset):
            files.append(("source", (None, str(self.source).encode(), "text/plain")))

        if not isinstance(self.description, Unset):
            files.append(("description", (None, str(self.description).encode(), "text/plain")))

        if not isinstance(self.deidentify, Unset):
            files.append(("deidentify", (None, str(self.deidentify).encode(), "text/plain")))

        if not isinstance(self.speakers_are_persons, Unset):
            files.append(("speakers_are_persons", (None, str(self.speakers_are_persons).encode(), "text/plain")))

        for prop_name, prop in self.additional_properties.items():
            files.append((prop_name, (None, str(prop).encode(), "text/plain")))

        return files

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        file = File(payload=BytesIO(d.pop("file")))

        format_ = DatasetUploadMultiPartBodyParamsFormat(d.pop("format"))

        name = d.pop("name", UNSET)

        source = d.pop("source", UNSET)

        description = d.pop("description", UNSET)

        deidentify = d.pop("deidentify", UNSET)

        speakers_are_persons = d.pop("speakers_are_persons", UNSET)

        dataset_upload_multi_part_body_params = cls(
            file=file,
            format_=format_,
            name=name,
            source=source,
            description=description,
            deidentify=deidentify,
            speakers_are_persons=speakers_are_persons,
        )

        dataset_upload_multi_part_body_params.additional_properties = d
        return dataset_upload_multi_part_body_params

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
