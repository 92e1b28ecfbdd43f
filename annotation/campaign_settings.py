"""The one schema of a campaign's settings and their bounds, and of a bonus.

Every writer of these settings cleans them here: ``campaign_create``, the wizard's settings
step, quality control's live changes, the admin form, and ``bonus_pay`` for the bonus.
The wizard's form fields are built from ``SETTINGS``; tests check that the database's check
constraints accept every value the schema accepts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from decimal import Decimal, InvalidOperation
from typing import Any, Literal

from evalsite.errors import InvalidParameters


@dataclass(frozen=True)
class Bound:
    """What one setting may hold: a whole number, a number or an amount of money, in range;
    or a flag (true or false)."""

    kind: Literal["whole", "number", "money", "flag"]
    low: int | float | Decimal | bool
    high: int | float | Decimal | bool
    label: str
    live: bool = False  # may change while the campaign is live (quality control, budget)
    optional: bool = False  # empty (None): no limit; for a rate limit, the site's default
    name: str = ""  # the setting's field name, filled in below

    @property
    def title(self) -> str:
        return f"{self.label} ({self.name})" if self.name else self.label

    def describe(self) -> str:
        if self.kind == "flag":
            return f"{self.title} must be true or false."
        if self.kind == "money":
            low = "more than 0" if self.low > 0 else f"from {self.low:g}"
            return f"{self.title} must be an amount like 0.50, {low} and at most {self.high:g}."
        what = "a whole number" if self.kind == "whole" else "a number"
        return f"{self.title} must be {what} from {self.low:g} to {self.high:g}."


SETTINGS: dict[str, Bound] = {
    "redundancy": Bound("whole", 1, 1000, "Workers per item"),
    "items_per_assignment": Bound("whole", 1, 1000, "Items per assignment"),
    "lease_seconds": Bound("whole", 10, 7 * 24 * 3600, "The lease (seconds)"),
    "reward": Bound("money", Decimal("0"), Decimal("999999.99"), "The reward"),
    # The budget may change live: the ledger checks every spending against its current value.
    "budget": Bound("money", Decimal("0"), Decimal("99999999.99"), "The budget", live=True),
    "gold_rate": Bound("number", 0.0, 0.5, "The gold rate", live=True),
    "gold_min_accuracy": Bound("number", 0.0, 1.0, "The gold accuracy threshold", live=True),
    "gold_min_answered": Bound("whole", 1, 1000, "Gold answers before judging", live=True),
    "min_seconds_per_item": Bound("number", 0.0, 3600.0, "The minimum time", live=True),
    "max_items_per_worker": Bound(
        "whole", 1, 1_000_000, "The cap per worker", live=True, optional=True
    ),
    # Top-up (allocation.items_reopen): excluded judgments replaced at most; empty: a tenth
    # of the item slots, rounded up; 0: none.
    "topup_max": Bound(
        "whole", 0, 10_000_000, "The top-up cap (replaced judgments)", live=True, optional=True
    ),
    # Training (services/training.py): the share to pass and the attempts a worker has.
    "training_pass_mark": Bound("number", 0.5, 1.0, "The training pass mark", live=True),
    "training_attempts": Bound("whole", 2, 10, "Training attempts", live=True),
    "open_links": Bound("flag", False, True, "Open links (any workerId)", live=True),
    "open_arrivals_per_address": Bound(
        "whole", 1, 100_000, "New open-link participants per address and hour", live=True
    ),
    # Rate limits (annotation.ratelimits): requests a minute, frames a second.
    "rate_per_ip": Bound(
        "whole", 1, 1_000_000, "Requests a minute from one address", live=True, optional=True
    ),
    "rate_per_worker": Bound(
        "whole", 1, 100_000, "Requests a minute from one worker", live=True, optional=True
    ),
    "chat_frames_per_second": Bound(
        "whole", 1, 1000, "Chat frames a second", live=True, optional=True
    ),
}

SETTINGS = {name: replace(bound, name=name) for name, bound in SETTINGS.items()}

# The settings that may change while a campaign is live: quality control and the budget.
CONTROLS = tuple(name for name, bound in SETTINGS.items() if bound.live)

# A bonus to one worker, from the dashboard or the ``pay`` command.
BONUS = Bound("money", Decimal("0.01"), Decimal("100.00"), "A bonus")


def value_clean(bound: Bound, value: Any) -> Any:
    """Return ``value`` if it is of the bound's kind and in range; raise InvalidParameters.

    Types are strict, as a JSON client sends them: a whole number is an int, a number an int
    or a float; money may also be text ("0.50", as typed) or a Decimal, with at most two
    decimals. Booleans count only for a flag, and a flag takes only them.
    """
    if bound.kind == "flag":
        if not isinstance(value, bool):
            raise InvalidParameters(bound.describe())
        return value
    if value is None:
        if bound.optional:
            return None
        raise InvalidParameters(bound.describe())
    number: Any = value
    if isinstance(value, bool):
        raise InvalidParameters(bound.describe())
    if bound.kind == "money":
        try:
            number = Decimal(str(value).strip()) if isinstance(value, str | int | Decimal) else None
        except InvalidOperation:
            number = None
        if number is None or not number.is_finite() or not bound.low <= number <= bound.high:
            raise InvalidParameters(bound.describe())  # bounds first: 1e999999 cannot quantize
        if number != number.quantize(Decimal("0.01")):
            raise InvalidParameters(f"{bound.title} takes at most two decimals.")
        number = number.quantize(Decimal("0.01"))
    else:
        kinds = int if bound.kind == "whole" else int | float
        if not isinstance(value, kinds) or value != value:  # value != value: NaN
            raise InvalidParameters(bound.describe())
    if not bound.low <= number <= bound.high:
        raise InvalidParameters(bound.describe())
    return number


def settings_clean(
    values: Mapping[str, Any], *, allowed: Iterable[str] = tuple(SETTINGS)
) -> dict[str, Any]:
    """Return the cleaned ``values``; raise InvalidParameters naming every bad or unknown one."""
    allowed = tuple(allowed)
    errors: dict[str, str] = {}
    cleaned: dict[str, Any] = {}
    for name, value in values.items():
        if name not in allowed:
            errors[str(name)[:64]] = f"Unknown setting; known: {', '.join(allowed)}."
            continue
        try:
            cleaned[name] = value_clean(SETTINGS[name], value)
        except InvalidParameters as exc:
            errors[name] = exc.message
    if errors:
        first = next(iter(errors.values()))
        raise InvalidParameters(first if len(errors) == 1 else "Invalid settings.", fields=errors)
    return cleaned
