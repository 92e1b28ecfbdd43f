from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..models.export_in_format import ExportInFormat
from ..models.export_in_what import ExportInWhat
from ..types import UNSET, Unset

T = TypeVar("T", bound="ExportIn")


@_attrs_define
class ExportIn:
    """
    Attributes:
        format_ (ExportInFormat): judgments: csv, jsonl, parquet; dialogues: csv, jsonl, parquet, parlai.
        what (ExportInWhat | Unset):  Default: ExportInWhat.JUDGMENTS.
        include_flagged (bool | Unset):  Default: False.
        judges (bool | Unset): The LLM judges' judgments instead of the crowd's (judgments). Default: False.
        by_author (bool | Unset):  Default: False.
    """

    format_: ExportInFormat
    what: ExportInWhat | Unset = ExportInWhat.JUDGMENTS
    include_flagged: bool | Unset = False
    judges: bool | Unset = False
    by_author: bool | Unset = False

    def to_dict(self) -> dict[str, Any]:
        format_ = self.format_.value

        what: str | Unset = UNSET
        if not isinstance(self.what, Unset):
            what = self.what.value

        include_flagged = self.include_flagged

        judges = self.judges

        by_author = self.by_author

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "format": format_,
            }
        )
        if what is not UNSET:
            field_dict["what"] = what
        if include_flagged is not UNSET:
            field_dict["include_flagged"] = include_flagged
        if judges is not UNSET:
            field_dict["judges"] = judges
        if by_author is not UNSET:
            field_dict["by_author"] = by_author

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        format_ = ExportInFormat(d.pop("format"))

        _what = d.pop("what", UNSET)
        what: ExportInWhat | Unset
        if isinstance(_what, Unset):
            what = UNSET
        else:
            what = ExportInWhat(_what)

        include_flagged = d.pop("include_flagged", UNSET)

        judges = d.pop("judges", UNSET)

        by_author = d.pop("by_author", UNSET)

        export_in = cls(
            format_=format_,
            what=what,
            include_flagged=include_flagged,
            judges=judges,
            by_author=by_author,
        )

        return export_in
