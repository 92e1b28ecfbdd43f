from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.report_out_figures import ReportOutFigures
    from ..models.report_out_tables import ReportOutTables


T = TypeVar("T", bound="ReportOut")


@_attrs_define
class ReportOut:
    """
    Attributes:
        job (int):
        title (str):
        judgments (int):
        finished_at (datetime.datetime | None):
        tables (ReportOutTables):
        figures (ReportOutFigures): Figure URLs by name.
        notes (list[str]):
    """

    job: int
    title: str
    judgments: int
    finished_at: datetime.datetime | None
    tables: ReportOutTables
    figures: ReportOutFigures
    notes: list[str]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        job = self.job

        title = self.title

        judgments = self.judgments

        finished_at: None | str
        if isinstance(self.finished_at, datetime.datetime):
            finished_at = self.finished_at.isoformat()
        else:
            finished_at = self.finished_at

        tables = self.tables.to_dict()

        figures = self.figures.to_dict()

        notes = self.notes

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "job": job,
                "title": title,
                "judgments": judgments,
                "finished_at": finished_at,
                "tables": tables,
                "figures": figures,
                "notes": notes,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.report_out_figures import ReportOutFigures  # noqa: PLC0415
        from ..models.report_out_tables import ReportOutTables  # noqa: PLC0415

        d = dict(src_dict)
        job = d.pop("job")

        title = d.pop("title")

        judgments = d.pop("judgments")

        def _parse_finished_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                finished_at_type_0 = datetime.datetime.fromisoformat(data)

                return finished_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        finished_at = _parse_finished_at(d.pop("finished_at"))

        tables = ReportOutTables.from_dict(d.pop("tables"))

        figures = ReportOutFigures.from_dict(d.pop("figures"))

        notes = cast(list[str], d.pop("notes"))

        report_out = cls(
            job=job,
            title=title,
            judgments=judgments,
            finished_at=finished_at,
            tables=tables,
            figures=figures,
            notes=notes,
        )

        report_out.additional_properties = d
        return report_out

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
