from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..models.study_in_language import StudyInLanguage
from ..types import UNSET, Unset

T = TypeVar("T", bound="StudyIn")


@_attrs_define
class StudyIn:
    """The study pages' texts (study_pages.STUDY_FIELDS).

    Attributes:
        description (str | Unset):
        instructions (str | Unset):
        consent_text (str | Unset):
        consent_version (str | Unset):
        training_qualification (str | Unset):
        language (StudyInLanguage | Unset):
    """

    description: str | Unset = UNSET
    instructions: str | Unset = UNSET
    consent_text: str | Unset = UNSET
    consent_version: str | Unset = UNSET
    training_qualification: str | Unset = UNSET
    language: StudyInLanguage | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        description = self.description

        instructions = self.instructions

        consent_text = self.consent_text

        consent_version = self.consent_version

        training_qualification = self.training_qualification

        language: str | Unset = UNSET
        if not isinstance(self.language, Unset):
            language = self.language.value

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if description is not UNSET:
            field_dict["description"] = description
        if instructions is not UNSET:
            field_dict["instructions"] = instructions
        if consent_text is not UNSET:
            field_dict["consent_text"] = consent_text
        if consent_version is not UNSET:
            field_dict["consent_version"] = consent_version
        if training_qualification is not UNSET:
            field_dict["training_qualification"] = training_qualification
        if language is not UNSET:
            field_dict["language"] = language

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        description = d.pop("description", UNSET)

        instructions = d.pop("instructions", UNSET)

        consent_text = d.pop("consent_text", UNSET)

        consent_version = d.pop("consent_version", UNSET)

        training_qualification = d.pop("training_qualification", UNSET)

        _language = d.pop("language", UNSET)
        language: StudyInLanguage | Unset
        if isinstance(_language, Unset):
            language = UNSET
        else:
            language = StudyInLanguage(_language)

        study_in = cls(
            description=description,
            instructions=instructions,
            consent_text=consent_text,
            consent_version=consent_version,
            training_qualification=training_qualification,
            language=language,
        )

        return study_in
