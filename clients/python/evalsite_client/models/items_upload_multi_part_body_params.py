from __future__ import annotations

from collections.abc import Mapping
from io import BytesIO
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from .. import types
from ..types import UNSET, File, FileTypes, Unset

T = TypeVar("T", bound="ItemsUploadMultiPartBodyParams")


@_attrs_define
class ItemsUploadMultiPartBodyParams:
    """
    Attributes:
        items (File | None | Unset):
        gold (File | None | Unset):
        contexts (File | None | Unset):
        responses (File | None | Unset):
        models (str | Unset): Registered models to answer the contexts. Default: ''.
        max_turns (int | Unset): Most turns a context may have. Default: 3.
    """

    items: File | None | Unset = UNSET
    gold: File | None | Unset = UNSET
    contexts: File | None | Unset = UNSET
    responses: File | None | Unset = UNSET
    models: str | Unset = ""
    max_turns: int | Unset = 3
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        items: FileTypes | None | Unset
        if isinstance(self.items, Unset):
            items = UNSET
        elif isinstance(self.items, File):
            items = self.items.to_tuple()

        else:
            items = self.items

        gold: FileTypes | None | Unset
        if isinstance(self.gold, Unset):
            gold = UNSET
        elif isinstance(self.gold, File):
            gold = self.gold.to_tuple()

        else:
            gold = self.gold

        contexts: FileTypes | None | Unset
        if isinstance(self.contexts, Unset):
            contexts = UNSET
        elif isinstance(self.contexts, File):
            contexts = self.contexts.to_tuple()

        else:
            contexts = self.contexts

        responses: FileTypes | None | Unset
        if isinstance(self.responses, Unset):
            responses = UNSET
        elif isinstance(self.responses, File):
            responses = self.responses.to_tuple()

        else:
            responses = self.responses

        models = self.models

        max_turns = self.max_turns

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
        if items is not UNSET:
            field_dict["items"] = items
        if gold is not UNSET:
            field_dict["gold"] = gold
        if contexts is not UNSET:
            field_dict["contexts"] = contexts
        if responses is not UNSET:
            field_dict["responses"] = responses
        if models is not UNSET:
            field_dict["models"] = models
        if max_turns is not UNSET:
            field_dict["max_turns"] = max_turns

        return field_dict

    def to_multipart(self) -> types.RequestFiles:
        files: types.RequestFiles = []

        if not isinstance(self.items, Unset):
            if isinstance(self.items, File):
                files.append(("items", self.items.to_tuple()))
            else:
                files.append(("items", (None, str(self.items).encode(), "text/plain")))

        if not isinstance(self.gold, Unset):
            if isinstance(self.gold, File):
                files.append(("gold", self.gold.to_tuple()))
            else:
                files.append(("gold", (None, str(self.gold).encode(), "text/plain")))

        if not isinstance(self.contexts, Unset):
            if isinstance(self.contexts, File):
                files.append(("contexts", self.contexts.to_tuple()))
            else:
                files.append(("contexts", (None, str(self.contexts).encode(), "text/plain")))

        if not isinstance(self.responses, Unset):
            if isinstance(self.responses, File):
                files.append(("responses", self.responses.to_tuple()))
            else:
                files.append(("responses", (None, str(self.responses).encode(), "text/plain")))

        if not isinstance(self.models, Unset):
            files.append(("models", (None, str(self.models).encode(), "text/plain")))

        if not isinstance(self.max_turns, Unset):
            files.append(("max_turns", (None, str(self.max_turns).encode(), "text/plain")))

        for prop_name, prop in self.additional_properties.items():
            files.append((prop_name, (None, str(prop).encode(), "text/plain")))

        return files

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

        def _parse_items(data: object) -> File | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, bytes):
                    raise TypeError()
                items_type_0 = File(payload=BytesIO(data))

                return items_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(File | None | Unset, data)

        items = _parse_items(d.pop("items", UNSET))

        def _parse_gold(data: object) -> File | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, bytes):
                    raise TypeError()
                gold_type_0 = File(payload=BytesIO(data))

                return gold_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(File | None | Unset, data)

        gold = _parse_gold(d.pop("gold", UNSET))

        def _parse_contexts(data: object) -> File | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, bytes):
                    raise TypeError()
                contexts_type_0 = File(payload=BytesIO(data))

                return contexts_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(File | None | Unset, data)

        contexts = _parse_contexts(d.pop("contexts", UNSET))

        def _parse_responses(data: object) -> File | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, bytes):
                    raise TypeError()
                responses_type_0 = File(payload=BytesIO(data))

                return responses_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(File | None | Unset, data)

        responses = _parse_responses(d.pop("responses", UNSET))

        models = d.pop("models", UNSET)

        max_turns = d.pop("max_turns", UNSET)

        items_upload_multi_part_body_params = cls(
            items=items,
            gold=gold,
            contexts=contexts,
            responses=responses,
            models=models,
            max_turns=max_turns,
        )

        items_upload_multi_part_body_params.additional_properties = d
        return items_upload_multi_part_body_params

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
