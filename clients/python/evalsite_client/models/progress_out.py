from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="ProgressOut")


@_attrs_define
class ProgressOut:
    """
    Attributes:
        slug (str):
        status (str):
        items (int):
        needed (int):
        done (int):
        percent (int):
        judgments (int):
        workers_active (int):
        spent (str):
        budget (str):
        per_hour (float):
        eta (str):
        report_judgments (int | None):
    """

    slug: str
    status: str
    items: int
    needed: int
    done: int
    percent: int
    judgments: int
    workers_active: int
    spent: str
    budget: str
    per_hour: float
    eta: str
    report_judgments: int | None
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        slug = self.slug

        status = self.status

        items = self.items

        needed = self.needed

        done = self.done

        percent = self.percent

        judgments = self.judgments

        workers_active = self.workers_active

        spent = self.spent

        budget = self.budget

        per_hour = self.per_hour

        eta = self.eta

        report_judgments: int | None
        report_judgments = self.report_judgments

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "slug": slug,
                "status": status,
                "items": items,
                "needed": needed,
                "done": done,
                "percent": percent,
                "judgments": judgments,
                "workers_active": workers_active,
                "spent": spent,
                "budget": budget,
                "per_hour": per_hour,
                "eta": eta,
                "report_judgments": report_judgments,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        slug = d.pop("slug")

        status = d.pop("status")

        items = d.pop("items")

        needed = d.pop("needed")

        done = d.pop("done")

        percent = d.pop("percent")

        judgments = d.pop("judgments")

        workers_active = d.pop("workers_active")

        spent = d.pop("spent")

        budget = d.pop("budget")

        per_hour = d.pop("per_hour")

        eta = d.pop("eta")

        def _parse_report_judgments(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        report_judgments = _parse_report_judgments(d.pop("report_judgments"))

        progress_out = cls(
            slug=slug,
            status=status,
            items=items,
            needed=needed,
            done=done,
            percent=percent,
            judgments=judgments,
            workers_active=workers_active,
            spent=spent,
            budget=budget,
            per_hour=per_hour,
            eta=eta,
            report_judgments=report_judgments,
        )

        progress_out.additional_properties = d
        return progress_out

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
