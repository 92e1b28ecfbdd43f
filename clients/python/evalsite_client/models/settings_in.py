from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="SettingsIn")


@_attrs_define
class SettingsIn:
    """Settings by name, as the wizard takes them (campaign_settings.SETTINGS); money as text ("0.50") or a whole number.

    Attributes:
        redundancy (int | Unset): Workers per item (redundancy) must be a whole number from 1 to 1000.
        items_per_assignment (int | Unset): Items per assignment (items_per_assignment) must be a whole number from 1 to
            1000.
        lease_seconds (int | Unset): The lease (seconds) (lease_seconds) must be a whole number from 10 to 604800.
        reward (int | str | Unset): The reward (reward) must be an amount like 0.50, from 0 and at most 999999.99.
        budget (int | str | Unset): The budget (budget) must be an amount like 0.50, from 0 and at most 99999999.99.
        gold_rate (float | int | Unset): The gold rate (gold_rate) must be a number from 0 to 0.5.
        gold_min_accuracy (float | int | Unset): The gold accuracy threshold (gold_min_accuracy) must be a number from 0
            to 1.
        gold_min_answered (int | Unset): Gold answers before judging (gold_min_answered) must be a whole number from 1
            to 1000.
        min_seconds_per_item (float | int | Unset): The minimum time (min_seconds_per_item) must be a number from 0 to
            3600.
        max_items_per_worker (int | None | Unset): The cap per worker (max_items_per_worker) must be a whole number from
            1 to 1e+06.
        topup_max (int | None | Unset): The top-up cap (replaced judgments) (topup_max) must be a whole number from 0 to
            1e+07.
        training_pass_mark (float | int | Unset): The training pass mark (training_pass_mark) must be a number from 0.5
            to 1.
        training_attempts (int | Unset): Training attempts (training_attempts) must be a whole number from 2 to 10.
        open_links (bool | Unset): Open links (any workerId) (open_links) must be true or false.
        open_arrivals_per_address (int | Unset): New open-link participants per address and hour
            (open_arrivals_per_address) must be a whole number from 1 to 100000.
        rate_per_ip (int | None | Unset): Requests a minute from one address (rate_per_ip) must be a whole number from 1
            to 1e+06.
        rate_per_worker (int | None | Unset): Requests a minute from one worker (rate_per_worker) must be a whole number
            from 1 to 100000.
        chat_frames_per_second (int | None | Unset): Chat frames a second (chat_frames_per_second) must be a whole
            number from 1 to 1000.
    """

    redundancy: int | Unset = UNSET
    items_per_assignment: int | Unset = UNSET
    lease_seconds: int | Unset = UNSET
    reward: int | str | Unset = UNSET
    budget: int | str | Unset = UNSET
    gold_rate: float | int | Unset = UNSET
    gold_min_accuracy: float | int | Unset = UNSET
    gold_min_answered: int | Unset = UNSET
    min_seconds_per_item: float | int | Unset = UNSET
    max_items_per_worker: int | None | Unset = UNSET
    topup_max: int | None | Unset = UNSET
    training_pass_mark: float | int | Unset = UNSET
    training_attempts: int | Unset = UNSET
    open_links: bool | Unset = UNSET
    open_arrivals_per_address: int | Unset = UNSET
    rate_per_ip: int | None | Unset = UNSET
    rate_per_worker: int | None | Unset = UNSET
    chat_frames_per_second: int | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        redundancy = self.redundancy

        items_per_assignment = self.items_per_assignment

        lease_seconds = self.lease_seconds

        reward: int | str | Unset
        if isinstance(self.reward, Unset):
            reward = UNSET
        else:
            reward = self.reward

        budget: int | str | Unset
        if isinstance(self.budget, Unset):
            budget = UNSET
        else:
            budget = self.budget

        gold_rate: float | int | Unset
        if isinstance(self.gold_rate, Unset):
            gold_rate = UNSET
        else:
            gold_rate = self.gold_rate

        gold_min_accuracy: float | int | Unset
        if isinstance(self.gold_min_accuracy, Unset):
            gold_min_accuracy = UNSET
        else:
            gold_min_accuracy = self.gold_min_accuracy

        gold_min_answered = self.gold_min_answered

        min_seconds_per_item: float | int | Unset
        if isinstance(self.min_seconds_per_item, Unset):
            min_seconds_per_item = UNSET
        else:
            min_seconds_per_item = self.min_seconds_per_item

        max_items_per_worker: int | None | Unset
        if isinstance(self.max_items_per_worker, Unset):
            max_items_per_worker = UNSET
        else:
            max_items_per_worker = self.max_items_per_worker

        topup_max: int | None | Unset
        if isinstance(self.topup_max, Unset):
            topup_max = UNSET
        else:
            topup_max = self.topup_max

        training_pass_mark: float | int | Unset
        if isinstance(self.training_pass_mark, Unset):
            training_pass_mark = UNSET
        else:
            training_pass_mark = self.training_pass_mark

        training_attempts = self.training_attempts

        open_links = self.open_links

        open_arrivals_per_address = self.open_arrivals_per_address

        rate_per_ip: int | None | Unset
        if isinstance(self.rate_per_ip, Unset):
            rate_per_ip = UNSET
        else:
            rate_per_ip = self.rate_per_ip

        rate_per_worker: int | None | Unset
        if isinstance(self.rate_per_worker, Unset):
            rate_per_worker = UNSET
        else:
            rate_per_worker = self.rate_per_worker

        chat_frames_per_second: int | None | Unset
        if isinstance(self.chat_frames_per_second, Unset):
            chat_frames_per_second = UNSET
        else:
            chat_frames_per_second = self.chat_frames_per_second

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if redundancy is not UNSET:
            field_dict["redundancy"] = redundancy
        if items_per_assignment is not UNSET:
            field_dict["items_per_assignment"] = items_per_assignment
        if lease_seconds is not UNSET:
            field_dict["lease_seconds"] = lease_seconds
        if reward is not UNSET:
            field_dict["reward"] = reward
        if budget is not UNSET:
            field_dict["budget"] = budget
        if gold_rate is not UNSET:
            field_dict["gold_rate"] = gold_rate
        if gold_min_accuracy is not UNSET:
            field_dict["gold_min_accuracy"] = gold_min_accuracy
        if gold_min_answered is not UNSET:
            field_dict["gold_min_answered"] = gold_min_answered
        if min_seconds_per_item is not UNSET:
            field_dict["min_seconds_per_item"] = min_seconds_per_item
        if max_items_per_worker is not UNSET:
            field_dict["max_items_per_worker"] = max_items_per_worker
        if topup_max is not UNSET:
            field_dict["topup_max"] = topup_max
        if training_pass_mark is not UNSET:
            field_dict["training_pass_mark"] = training_pass_mark
        if training_attempts is not UNSET:
            field_dict["training_attempts"] = training_attempts
        if open_links is not UNSET:
            field_dict["open_links"] = open_links
        if open_arrivals_per_address is not UNSET:
            field_dict["open_arrivals_per_address"] = open_arrivals_per_address
        if rate_per_ip is not UNSET:
            field_dict["rate_per_ip"] = rate_per_ip
        if rate_per_worker is not UNSET:
            field_dict["rate_per_worker"] = rate_per_worker
        if chat_frames_per_second is not UNSET:
            field_dict["chat_frames_per_second"] = chat_frames_per_second

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        redundancy = d.pop("redundancy", UNSET)

        items_per_assignment = d.pop("items_per_assignment", UNSET)

        lease_seconds = d.pop("lease_seconds", UNSET)

        def _parse_reward(data: object) -> int | str | Unset:
            if isinstance(data, Unset):
                return data
            return cast(int | str | Unset, data)

        reward = _parse_reward(d.pop("reward", UNSET))

        def _parse_budget(data: object) -> int | str | Unset:
            if isinstance(data, Unset):
                return data
            return cast(int | str | Unset, data)

        budget = _parse_budget(d.pop("budget", UNSET))

        def _parse_gold_rate(data: object) -> float | int | Unset:
            if isinstance(data, Unset):
                return data
            return cast(float | int | Unset, data)

        gold_rate = _parse_gold_rate(d.pop("gold_rate", UNSET))

        def _parse_gold_min_accuracy(data: object) -> float | int | Unset:
            if isinstance(data, Unset):
                return data
            return cast(float | int | Unset, data)

        gold_min_accuracy = _parse_gold_min_accuracy(d.pop("gold_min_accuracy", UNSET))

        gold_min_answered = d.pop("gold_min_answered", UNSET)

        def _parse_min_seconds_per_item(data: object) -> float | int | Unset:
            if isinstance(data, Unset):
                return data
            return cast(float | int | Unset, data)

        min_seconds_per_item = _parse_min_seconds_per_item(d.pop("min_seconds_per_item", UNSET))

        def _parse_max_items_per_worker(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_items_per_worker = _parse_max_items_per_worker(d.pop("max_items_per_worker", UNSET))

        def _parse_topup_max(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        topup_max = _parse_topup_max(d.pop("topup_max", UNSET))

        def _parse_training_pass_mark(data: object) -> float | int | Unset:
            if isinstance(data, Unset):
                return data
            return cast(float | int | Unset, data)

        training_pass_mark = _parse_training_pass_mark(d.pop("training_pass_mark", UNSET))

        training_attempts = d.pop("training_attempts", UNSET)

        open_links = d.pop("open_links", UNSET)

        open_arrivals_per_address = d.pop("open_arrivals_per_address", UNSET)

        def _parse_rate_per_ip(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        rate_per_ip = _parse_rate_per_ip(d.pop("rate_per_ip", UNSET))

        def _parse_rate_per_worker(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        rate_per_worker = _parse_rate_per_worker(d.pop("rate_per_worker", UNSET))

        def _parse_chat_frames_per_second(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        chat_frames_per_second = _parse_chat_frames_per_second(d.pop("chat_frames_per_second", UNSET))

        settings_in = cls(
            redundancy=redundancy,
            items_per_assignment=items_per_assignment,
            lease_seconds=lease_seconds,
            reward=reward,
            budget=budget,
            gold_rate=gold_rate,
            gold_min_accuracy=gold_min_accuracy,
            gold_min_answered=gold_min_answered,
            min_seconds_per_item=min_seconds_per_item,
            max_items_per_worker=max_items_per_worker,
            topup_max=topup_max,
            training_pass_mark=training_pass_mark,
            training_attempts=training_attempts,
            open_links=open_links,
            open_arrivals_per_address=open_arrivals_per_address,
            rate_per_ip=rate_per_ip,
            rate_per_worker=rate_per_worker,
            chat_frames_per_second=chat_frames_per_second,
        )

        return settings_in
