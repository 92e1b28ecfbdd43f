"""Formatting for the dashboard's tables."""

from typing import Any

from django import template

from dashboard import glossary
from dashboard.money import money_text

register = template.Library()


@register.filter
def cell(value: Any, column: str = "") -> str:
    """Show a table cell (``{{ value|cell:column }}``): floats to 3 decimals, p-values under
    0.001 as "< 0.001", missing values as an en dash (``dashboard.glossary.format_cell``)."""
    return glossary.format_cell(value, str(column or ""))


@register.filter
def header(column: str) -> str:
    """The readable header of a report column (``dashboard.glossary``)."""
    return glossary.header(str(column))


@register.filter
def percent(value: float) -> str:
    return f"{100 * value:.0f}%"


@register.filter
def money(amount: Any, currency: str) -> str:
    """An amount with its currency (``{{ campaign.budget|money:currency }}``: "20.00 USD")."""
    return money_text(amount, str(currency))
