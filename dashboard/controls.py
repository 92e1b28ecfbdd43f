"""A launched campaign's controls in the dashboard: pause, resume, finish, and its budget.

The status goes through the lifecycle (``campaign_set_status``'s table) and is written to the
audit log; the budget through the core's ``campaign_budget_set`` (never below what is
committed, under the campaign's row lock).
"""

from __future__ import annotations

from annotation.models import AuditLog, Campaign
from annotation.services import BudgetBelowCommitted, audit_add, campaign_set_status
from annotation.services import campaign_budget_set as core_budget_set
from annotation.services.campaigns import TRANSITIONS
from dashboard.money import campaign_currency, money_text
from evalsite.errors import Conflict, InvalidParameters
from recruitment.services import campaign_committed

# What the dashboard offers from each status (going live is the wizard's last step).
STATUS_ACTIONS: dict[str, tuple[str, str, str]] = {
    # action: (target status, button, audit action)
    "pause": (Campaign.Status.PAUSED, "Pause", AuditLog.Action.PAUSE),
    "resume": (Campaign.Status.LIVE, "Resume", AuditLog.Action.RESUME),
    "finish": (Campaign.Status.FINISHED, "Finish for good", AuditLog.Action.STOP),
}


def status_actions(campaign: Campaign) -> list[tuple[str, str]]:
    """The (action, button) pairs the campaign's status allows; none for a draft."""
    if campaign.status == Campaign.Status.DRAFT:
        return []
    allowed = TRANSITIONS[Campaign.Status(campaign.status)]
    return [(a, button) for a, (target, button, _) in STATUS_ACTIONS.items() if target in allowed]


def campaign_status_change(
    *, campaign: Campaign, action: str, actor: str, confirmed: bool = False
) -> str:
    """Pause, resume or finish the campaign; return a summary. Finishing needs ``confirmed``:
    it cannot be undone. The provider side (HITs, a Prolific study) is paused or stopped
    with ``manage.py launch``."""
    if action not in STATUS_ACTIONS:
        raise InvalidParameters(f"Unknown action {action!r}; use pause, resume or finish.")
    target, _, audit = STATUS_ACTIONS[action]
    if campaign.status == Campaign.Status.DRAFT:
        raise Conflict("A draft goes live from the launch wizard.")
    if action == "finish" and not confirmed:
        raise InvalidParameters("Tick the box to confirm: a finished campaign cannot reopen.")
    campaign_set_status(campaign=campaign, status=target)
    audit_add(action=audit, actor=actor, campaign=campaign, detail=f"{action} from the dashboard")
    return f"The campaign is now {campaign.get_status_display().lower()}."


def campaign_budget_set(*, campaign: Campaign, budget: object, actor: str) -> str:
    """Change the campaign's budget (also while live) through the ledger, which refuses one
    below what is committed, in the settings history as ``actor``'s; return a summary, the
    amounts written in the campaign's currency."""
    currency = campaign_currency(campaign)
    try:
        core_budget_set(campaign=campaign, budget=budget, actor=actor)
    except BudgetBelowCommitted as exc:
        message = (
            f"The budget cannot go below what is already committed "
            f"({money_text(exc.committed, currency)}: published places and bonuses, fees "
            "included)."
        )
        raise InvalidParameters(message, fields={"budget": message}) from None
    return (
        f"The budget is now {money_text(campaign.budget, currency)} "
        f"({money_text(campaign_committed(campaign), currency)} committed)."
    )
