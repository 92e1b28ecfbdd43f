from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.item_in_gold_type_0 import ItemInGoldType0
    from ..models.item_in_payload import ItemInPayload


T = TypeVar("T", bound="ItemIn")


@_attrs_define
class ItemIn:
    """
    Attributes:
        key (str):
        payload (ItemInPayload):
        gold (ItemInGoldType0 | None | Unset): Accepted answers by question: a hidden gold check.
        attention (bool | Unset): An explicit attention check (with gold). Default: False.
    """

    key: str
    payload: ItemInPayload
    gold: ItemInGoldType0 | None | Unset = UNSET
    attention: bool | Unset = False

    def to_dict(self) -> dict[str, Any]:
        from ..models.item_in_gold_type_0 import ItemInGoldType0  # noqa: PLC0415

        key = self.key

        payload = self.payload.to_dict()

        gold: dict[str, Any] | None | Unset
        if isinstance(self.gold, Unset):
            gold = UNSET
        elif isinstance(self.gold, ItemInGoldType0):
            gold = self.gold.to_dict()
        else:
            gold = self.gold

        attention = self.attention

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "key": key,
                "payload": payload,
            }
        )
        if gold is not UNSET:
            field_dict["gold"] = gold
        if attention is not UNSET:
            field_dict["attention"] = attention

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.item_in_gold_type_0 import ItemInGoldType0  # noqa: PLC0415
        from ..models.item_in_payload import ItemInPayload  # noqa: PLC0415

        d = dict(src_dict)
        key = d.pop("key")

        payload = ItemInPayload.from_dict(d.pop("payload"))

        def _parse_gold(data: object) -> ItemInGoldType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                gold_type_0 = ItemInGoldType0.from_dict(data)

                return gold_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(ItemInGoldType0 | None | Unset, data)

        gold = _parse_gold(d.pop("gold", UNSET))

        attention = d.pop("attention", UNSET)

        item_in = cls(
            key=key,
            payload=payload,
            gold=gold,
            attention=attention,
        )

        return item_in
