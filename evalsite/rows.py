"""Model instances from hand-written statements, converted as the ORM converts them.

The worker's hot path reads a few rows in statements written as SQL (``annotation.locks``:
an item with the worker's lease, an assignment with its exclusion; ``recruitment.workers``:
the arriving worker with their standing). Building those queries through the ORM cost more
CPU than the rest of their request's statements together (1–2 ms each: issue #32). A
``Columns`` reads a model's whole row: ``sql`` lists its columns under a table alias, and
``instance`` turns the row's values into an instance with each field's database converters
applied (JSON from text, SQLite's datetimes and booleans), as a queryset would.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

from django.db import connection
from django.db.models import Model

M = TypeVar("M", bound=Model)
Converter = Callable[[Any, Any, Any], Any]


class Columns(Generic[M]):
    """The concrete columns of ``model`` read under ``alias``."""

    def __init__(self, model: type[M], alias: str) -> None:
        self.model = model
        self.fields = list(model._meta.concrete_fields)
        self.attnames = [field.attname for field in self.fields]
        quote = connection.ops.quote_name
        self.sql = ", ".join(f"{alias}.{quote(field.column)}" for field in self.fields)
        self._converters: dict[str, list[tuple[int, list[Converter], Any]]] = {}

    def __len__(self) -> int:
        return len(self.fields)

    def instance(self, values: Sequence[Any]) -> M:
        """The instance of the row whose first ``len(self)`` values are ``values``."""
        row = list(values[: len(self.fields)])
        for index, converters, column in self._converters_of():
            for convert in converters:
                row[index] = convert(row[index], column, connection)
        return self.model.from_db(connection.alias, self.attnames, row)

    def _converters_of(self) -> list[tuple[int, list[Converter], Any]]:
        known = self._converters.get(connection.vendor)
        if known is None:
            known = []
            for index, field in enumerate(self.fields):
                column = field.get_col(self.model._meta.db_table)
                found = connection.ops.get_db_converters(column) + column.get_db_converters(
                    connection
                )
                if found:
                    known.append((index, found, column))
            self._converters[connection.vendor] = known
        return known
