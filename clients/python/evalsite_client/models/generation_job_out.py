from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.generation_job_out_status import GenerationJobOutStatus

T = TypeVar("T", bound="GenerationJobOut")


@_attrs_define
class GenerationJobOut:
    """
    Attributes:
        id (int):
        model (str):
        label (str):
        status (GenerationJobOutStatus):
        total (int): Distinct contexts to answer.
        done (int):
        progress (float):
        error (str):
        attempts (int):
        created_at (datetime.datetime):
        started_at (datetime.datetime | None):
        finished_at (datetime.datetime | None):
    """

    id: int
    model: str
    label: str
    status: GenerationJobOutStatus
    total: int
    done: int
    progress: float
    error: str
    attempts: int
    created_at: datetime.datetime
    started_at: datetime.datetime | None
    finished_at: datetime.datetime | None
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        model = self.model

        label = self.label

        status = self.status.value

        total = self.total

        done = self.done

        progress = self.progress

        error = self.error

        attempts = self.attempts

        created_at = self.created_at.isoformat()

        started_at: None | str
        if isinstance(self.started_at, datetime.datetime):
            started_at = self.started_at.isoformat()
        else:
            started_at = self.started_at

        finished_at: None | str
        if isinstance(self.finished_at, datetime.datetime):
            finished_at = self.finished_at.isoformat()
        else:
            finished_at = self.finished_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "model": model,
                "label": label,
                "status": status,
                "total": total,
                "done": done,
                "progress": progress,
                "error": error,
                "attempts": attempts,
                "created_at": created_at,
                "started_at": started_at,
                "finished_at": finished_at,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        id = d.pop("id")

        model = d.pop("model")

        label = d.pop("label")

        status = GenerationJobOutStatus(d.pop("status"))

        total = d.pop("total")

        done = d.pop("done")

        progress = d.pop("progress")

        error = d.pop("error")

        attempts = d.pop("attempts")

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        def _parse_started_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                started_at_type_0 = datetime.datetime.fromisoformat(data)

                return started_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        started_at = _parse_started_at(d.pop("started_at"))

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

        generation_job_out = cls(
            id=id,
            model=model,
            label=label,
            status=status,
            total=total,
            done=done,
            progress=progress,
            error=error,
            attempts=attempts,
            created_at=created_at,
            started_at=started_at,
            finished_at=finished_at,
        )

        generation_job_out.additional_properties = d
        return generation_job_out

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
