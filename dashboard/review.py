"""Review in bulk from the dashboard: approve several workers, pay bonuses from a CSV file.

Both go through the same services as one worker's action (``dashboard.services.worker_act``,
``recruitment``): the provider, the budget check under the campaign's row lock, the
ledger and the audit log.
"""

from __future__ import annotations

import csv
import hashlib
import io
from dataclasses import dataclass
from decimal import Decimal

from annotation.campaign_settings import BONUS, value_clean
from annotation.models import Assignment, Campaign, Worker
from dashboard.money import campaign_currency, money_text
from dashboard.services import worker_act
from evalsite.errors import AnnotationError, InvalidParameters
from providers import provider_get
from recruitment.models import Payment, Publication
from recruitment.services import (
    Decision,
    bonus_pay,
    campaign_committed,
    campaign_review,
    payment_key,
)

# --- bulk approve ---------------------------------------------------------------------------


def workers_submitted(campaign: Campaign) -> list[str]:
    """Pseudonyms of the workers with a submitted assignment waiting for review."""
    return list(
        Assignment.objects.filter(campaign=campaign, status=Assignment.Status.SUBMITTED)
        .values_list("worker__pseudonym", flat=True)
        .distinct()
        .order_by("worker__pseudonym")
    )


def workers_approve(*, campaign: Campaign, pseudonyms: list[str] | None, actor: str) -> str:
    """Approve the submitted assignments of ``pseudonyms`` (None: of every worker who has one);
    return a summary. One worker's failure (a provider error) does not stop the others."""
    chosen = workers_submitted(campaign) if pseudonyms is None else list(dict.fromkeys(pseudonyms))
    if not chosen:
        raise InvalidParameters(
            "No worker selected." if pseudonyms is not None else "Nothing is waiting for review."
        )
    done, failed = [], []
    for pseudonym in chosen:
        try:
            done.append(
                worker_act(campaign=campaign, pseudonym=pseudonym, action="approve", actor=actor)
            )
        except AnnotationError as exc:
            failed.append(f"{pseudonym[:40]}: {exc.message}")
    summary = f"Approved the work of {len(done)} of {len(chosen)} worker(s)."
    if failed:
        raise AnnotationError(summary + " Not done — " + "; ".join(failed[:10]))
    return summary


def _publications(campaign: Campaign) -> list[Publication]:
    publications = list(
        Publication.objects.filter(campaign=campaign)
        .exclude(status=Publication.Status.FAILED)
        .order_by("provider")
    )
    if not publications:
        raise InvalidParameters(
            "This campaign is published on no provider: approve or reject its workers in the table."
        )
    return publications


def campaign_review_plan(*, campaign: Campaign) -> list[tuple[Publication, list[Decision]]]:
    """What ``campaign_review`` would do on each of the campaign's publications (a dry run:
    nothing is synced, approved or rejected), for the confirmation page."""
    return [
        (p, campaign_review(publication=p, actor="", dry_run=True)) for p in _publications(campaign)
    ]


def campaign_review_run(*, campaign: Campaign, actor: str) -> str:
    """Review every publication of the campaign (``campaign_review``: sync, then approve
    who passes quality control and reject the others); return a summary."""
    counts = {"approve": 0, "reject": 0}
    failed: list[str] = []
    for publication in _publications(campaign):
        for decision in campaign_review(publication=publication, actor=actor):
            if decision.error:
                failed.append(f"{decision.worker[:40]}: {decision.error}")
            else:
                counts[decision.action] += 1
    summary = f"Review: approved {counts['approve']}, rejected {counts['reject']} submission(s)."
    if failed:
        raise AnnotationError(summary + " Not done — " + "; ".join(failed[:10]))
    return summary


# --- bonuses from a CSV file ----------------------------------------------------------------

BONUS_FILE_MAX_BYTES = 1_000_000
BONUS_FILE_MAX_LINES = 5_000
HEADER_NAMES = {"worker", "pseudonym", "worker_id", "participant"}
ERRORS_SHOWN = 5


@dataclass(frozen=True)
class BonusLine:
    """One checked line of a bonus file."""

    line: int
    worker: Worker
    amount: Decimal
    reason: str
    key: str


def bonus_key(campaign: Campaign, worker: Worker, amount: Decimal, reason: str) -> str:
    """The idempotency key of a file's bonus: the campaign, worker, amount and reason.

    ``bonus_pay``'s own key names the worker's latest assignment, which changes when the
    worker submits another one; a file uploaded again must not pay twice, so its key does
    not depend on which assignment the bonus is paid against.
    """
    digest = hashlib.sha256(reason.encode()).hexdigest()[:12]
    return payment_key("bonus-file", campaign.pk, worker.pk, amount, digest)


def _workers(campaign: Campaign) -> tuple[dict[str, Worker], dict[str, list[Worker]]]:
    """The campaign's workers with an assignment, by pseudonym and by provider id."""
    by_pseudonym: dict[str, Worker] = {}
    by_external: dict[str, list[Worker]] = {}
    for worker in Worker.objects.filter(assignments__campaign=campaign).distinct():
        by_pseudonym[worker.pseudonym] = worker
        by_external.setdefault(worker.external_id, []).append(worker)
    return by_pseudonym, by_external


def _payable(campaign: Campaign) -> set[int]:
    """Ids of workers with an assignment a bonus can be paid against (as ``bonus_pay``)."""
    return set(
        Assignment.objects.filter(campaign=campaign)
        .exclude(status__in=[Assignment.Status.ACCEPTED, Assignment.Status.RETURNED])
        .values_list("worker_id", flat=True)
    )


def _rows(data: bytes) -> list[tuple[int, list[str]]]:
    if len(data) > BONUS_FILE_MAX_BYTES:
        raise InvalidParameters(
            f"The file is over {BONUS_FILE_MAX_BYTES // 1_000_000} MB; split it. Nothing was paid."
        )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InvalidParameters("The file must be UTF-8 text (CSV). Nothing was paid.") from None
    if "\x00" in text:
        raise InvalidParameters("The file holds a NUL character; is it a CSV? Nothing was paid.")
    try:
        rows = [
            (number, [cell.strip() for cell in row])
            for number, row in enumerate(csv.reader(io.StringIO(text)), start=1)
            if any(cell.strip() for cell in row)
        ]
    except csv.Error as exc:  # a field past the reader's limit (128 KiB), for one
        raise InvalidParameters(
            f"The file is not a CSV file the bonuses can be read from ({exc}: a field is "
            "longer than a reason can be, or a quote is not closed). Nothing was paid."
        ) from None
    if rows and rows[0][1][0].lower() in HEADER_NAMES:
        rows = rows[1:]
    if not rows:
        raise InvalidParameters("The file has no bonus lines (worker,amount,reason).")
    if len(rows) > BONUS_FILE_MAX_LINES:
        raise InvalidParameters(f"At most {BONUS_FILE_MAX_LINES} bonuses a file; split it.")
    return rows


def bonuses_check(*, campaign: Campaign, data: bytes) -> list[BonusLine]:
    """Read and check a bonus file, all or nothing; raise InvalidParameters naming the lines.

    Each line is ``worker,amount,reason`` (an optional header line first): the worker by
    pseudonym or by provider id, the amount within ``BONUS``'s bounds, a reason the worker
    will see. The new bonuses together must fit in what is left of the budget.
    """
    by_pseudonym, by_external = _workers(campaign)
    payable = _payable(campaign)
    lines: list[BonusLine] = []
    errors: list[str] = []
    seen: dict[str, int] = {}
    for number, row in _rows(data):
        try:
            if len(row) != 3:
                raise InvalidParameters("expected 3 fields: worker,amount,reason.")
            who, amount_text, reason = row
            matches = [by_pseudonym[who]] if who in by_pseudonym else by_external.get(who, [])
            if not matches:
                raise InvalidParameters(f"no worker {who[:40]!r} in this campaign.")
            if len(matches) > 1:
                raise InvalidParameters(
                    f"{who[:40]!r} is a worker on several providers; use the pseudonym."
                )
            worker = matches[0]
            amount = value_clean(BONUS, amount_text)
            if not reason:
                raise InvalidParameters("a bonus needs a reason; the worker sees it.")
            if worker.pk not in payable:
                raise InvalidParameters(
                    f"{worker.pseudonym} has no submitted assignment to pay against."
                )
            key = bonus_key(campaign, worker, amount, reason)
            if key in seen:
                raise InvalidParameters(f"the same bonus as line {seen[key]}.")
            seen[key] = number
            lines.append(BonusLine(number, worker, amount, reason, key))
        except InvalidParameters as exc:
            errors.append(f"line {number}: {exc.message}")
    if errors:
        more = f" (and {len(errors) - ERRORS_SHOWN} more)" if len(errors) > ERRORS_SHOWN else ""
        raise InvalidParameters(
            "Nothing was paid. " + "; ".join(errors[:ERRORS_SHOWN]) + more,
            fields={"file": errors[0]},
        )
    _budget_fits(campaign, lines)
    return lines


def _budget_fits(campaign: Campaign, lines: list[BonusLine]) -> None:
    """Refuse the whole file if its new bonuses (fees included) do not fit in the budget.

    ``payment_send`` checks each payment again under the campaign's row lock; this check
    only keeps a file from being paid half."""
    paid = set(
        Payment.objects.filter(idempotency_key__in=[line.key for line in lines])
        .exclude(status=Payment.Status.FAILED)
        .values_list("idempotency_key", flat=True)
    )
    published = set(
        Publication.objects.filter(campaign=campaign).values_list("provider", flat=True)
    )
    cost = Decimal("0.00")
    for line in lines:
        if line.key in paid:
            continue
        provider = provider_get(
            line.worker.provider if line.worker.provider in published else "local"
        )
        cost += line.amount + provider.fee(reward=line.amount, assignments=1, bonus=True)
    left = Decimal(campaign.budget) - campaign_committed(campaign)
    currency = campaign_currency(campaign)
    if cost > left:
        raise InvalidParameters(
            f"Nothing was paid: the file's new bonuses cost {money_text(cost, currency)} (fees "
            f"included), but {money_text(max(left, Decimal(0)), currency)} of the budget "
            f"{money_text(campaign.budget, currency)} is left. "
            "Raise the budget first."
        )


def bonuses_pay(*, campaign: Campaign, lines: list[BonusLine], actor: str) -> str:
    """Pay the checked lines through ``bonus_pay``; return a summary.

    A line paid before (the same file uploaded again) is not paid twice. A provider error
    stops the run and says which line; uploading the file again continues where it stopped.
    """
    before = set(
        Payment.objects.filter(idempotency_key__in=[line.key for line in lines])
        .exclude(status=Payment.Status.FAILED)
        .values_list("idempotency_key", flat=True)
    )
    paid = 0
    for done, line in enumerate(lines):
        try:
            bonus_pay(
                campaign=campaign,
                worker=line.worker,
                amount=line.amount,
                reason=line.reason,
                actor=actor,
                key=line.key,
            )
        except AnnotationError as exc:
            raise AnnotationError(
                f"Paid {paid} new bonus(es) of {len(lines)}; line {line.line} failed: "
                f"{exc.message} The {len(lines) - done - 1} line(s) after it were not paid; "
                "upload the file again to continue (paid lines are not paid twice)."
            ) from None
        paid += line.key not in before
    already = len(lines) - paid
    note = f"; {already} were paid before and not paid again" if already else ""
    return f"Paid {paid} bonus(es) from the file{note}."
