from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="WorkersPage")


@_attrs_define
class WorkersPage:
    """
    Attributes:
        count (int):
        limit (int):
        offset (int):
        report_job (int | None): The report snapshot the table comes from.
        columns (list[str]):
        rows (list[list[Any]]):
    """

    count: int
    limit: int
    offset: int
    report_job: int | None
    columns: list[str]
    rows: list[list[Any]]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        count = self.count

        limit = self.limit

        offset = self.offset

        report_job: int | None
        report_job = self.report_job

        columns = self.columns

        rows = []
        for rows_item_data in self.rows:
            rows_item = rows_item_data

            rows.append(rows_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "count": count,
                "limit": limit,
                "offset": offset,
                "report_job": report_job,
                "columns": columns,
                "rows": rows,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        count = d.pop("count")

        limit = d.pop("limit")

        offset = d.pop("offset")

        def _parse_report_job(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        report_job = _parse_report_job(d.pop("report_job"))

        columns = cast(list[str], d.pop("columns"))

        rows = []
        _rows = d.pop("rows")
        for rows_item_data in _rows:
            rows_item = cast(list[Any], rows_item_data)

            rows.append(rows_item)

        workers_page = cls(
            count=count,
            limit=limit,
            offset=offset,
            report_job=report_job,
            columns=columns,
            rows=rows,
        )

        workers_page.additional_properties = d
        return workers_page

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
