"""Formatting for the dashboard's tables."""

from typing import Any

from django import template

register = template.Library()


@register.filter
def cell(value: Any) -> str:
    """Show a table cell: floats to 3 decimals, missing values as an en dash."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


@register.filter
def percent(value: float) -> str:
    return f"{100 * value:.0f}%"
