"""Review: approve, reject and pay bonuses, one assignment at a time or a whole campaign.

``campaign_review`` takes its decisions from quality control (``annotation.quality``) and
from the provider's list of submissions, by the provider's rules (docs/providers.md):

- a submission with no work here (someone who got the completion code elsewhere) is rejected
  (``NO_DATA``);
- failed explicit attention checks reject (``FAILED_CHECK``) where the provider's
  ``attention_rejects`` says they justify it, and the feedback quotes each check;
- a soft block or low gold agreement (subjective answers) is a *hint* on an approval, never a
  rejection, unless ``reject_for_agreement`` is asked for and the provider allows it
  (``Provider.rejects_for_agreement``: never on Prolific);
- everyone is approved with any pay-bucket top-up; the bonus asked for goes to those quality
  control did not flag.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from functools import partial
from typing import TYPE_CHECKING, Any

from annotation.models import Assignment, AuditLog, Campaign
from annotation.protocols import registry
from annotation.services import assignment_has_work, assignment_set_status, audit_add
from evalsite.errors import AnnotationError, Conflict, InvalidParameters
from providers import provider_get
from providers.base import Provider, money
from recruitment.ledger import payment_key, payment_send
from recruitment.models import Payment, Publication
from recruitment.payments import assignment_topup, bonus_pay, payment_call, submission_id_of
from recruitment.sync import publication_sync

if TYPE_CHECKING:
    from annotation.quality import AttentionMiss

NO_WORK = "No work was recorded for this assignment in the study."


def _reward(publication: Publication, assignment: Assignment) -> tuple[Decimal, bool]:
    """Return the assignment's reward and whether it is beyond the published places."""
    hits = list(publication.hits.all())
    hit = next((h for h in hits if h.external_id == assignment.provider_hit_id), None)
    hit = hit or (hits[0] if hits else None)
    reward = hit.reward if hit else assignment.campaign.reward
    places = sum(h.max_assignments for h in hits)
    paid = Payment.objects.filter(
        campaign=publication.campaign, provider=publication.provider, kind=Payment.Kind.REWARD
    ).count()
    return money(reward), paid >= places


def assignment_approve(
    *, publication: Publication, assignment: Assignment, actor: str, feedback: str = ""
) -> Payment | None:
    """Approve the assignment on the provider and record its reward (idempotent).

    Returns the reward's ledger entry (None for an unpaid campaign).
    """
    if assignment.status == Assignment.Status.REJECTED:
        raise Conflict("This assignment was rejected; a rejection is final here.")
    if assignment.status == Assignment.Status.ACCEPTED:
        raise Conflict("This assignment is still open; it can be approved once submitted.")
    provider = provider_get(publication.provider)
    submission_id = submission_id_of(assignment)
    reward, beyond = _reward(publication, assignment)
    send = payment_call(
        provider,
        publication.config,
        kind=Payment.Kind.REWARD,
        worker_id=assignment.worker.external_id,
        submission_id=submission_id,
        amount=reward,
        reason=feedback,
        key="",
    )
    payment = None
    if reward > 0:
        payment = payment_send(
            campaign=publication.campaign,
            provider=provider,
            worker=assignment.worker,
            assignment=assignment,
            kind=Payment.Kind.REWARD,
            amount=reward,
            reason=feedback,
            key=payment_key("reward", provider.name, submission_id),
            actor=actor,
            send=send,
            budgeted=beyond,
        )
    elif assignment.status != Assignment.Status.APPROVED:
        send()
        audit_add(
            action=AuditLog.Action.APPROVE,
            actor=actor,
            campaign=publication.campaign,
            provider=provider.name,
            worker=assignment.worker,
            assignment=assignment,
            amount=Decimal("0.00"),
        )
    assignment_set_status(
        assignment=assignment, status=Assignment.Status.APPROVED, feedback=feedback
    )
    return payment


def assignment_reject(
    *,
    publication: Publication,
    assignment: Assignment | None,
    actor: str,
    feedback: str,
    submission_id: str = "",
    category: str = "",
) -> None:
    """Reject with feedback the worker sees; with no assignment here, reject the bare submission."""
    if not feedback.strip():
        raise InvalidParameters("A rejection needs feedback for the worker.")
    if assignment is not None:
        if assignment.status == Assignment.Status.APPROVED:
            raise Conflict("This assignment was approved and paid; it cannot be rejected.")
        if assignment.status == Assignment.Status.REJECTED:
            return
        submission_id = submission_id_of(assignment)
    provider = provider_get(publication.provider)
    provider.reject(
        config=publication.config,
        submission_id=submission_id,
        feedback=feedback,
        category=category,
    )
    if assignment is not None:
        assignment_set_status(
            assignment=assignment, status=Assignment.Status.REJECTED, feedback=feedback
        )
    audit_add(
        action=AuditLog.Action.REJECT,
        actor=actor,
        campaign=publication.campaign,
        provider=provider.name,
        worker=assignment.worker if assignment else None,
        assignment=assignment,
        detail=f"{submission_id}: {feedback}",
    )


@dataclass
class Decision:
    """What review does with one submission, and why."""

    submission_id: str
    worker: str  # pseudonym, or the provider's id for a submission with no work here
    action: str  # approve / reject
    reason: str = ""
    done: bool = False
    error: str = ""
    assignment: Assignment | None = None
    category: str = ""
    # Approved although quality control flagged it (``reason`` says why): paid, no bonus.
    flagged: bool = False


def review_decisions(
    *, publication: Publication, reject_for_agreement: bool = False
) -> list[Decision]:
    """Decide, without acting, what to do with each submission awaiting review."""
    from annotation.quality import gold_tallies, worker_quality

    provider = provider_get(publication.provider)
    if reject_for_agreement and not provider.rejects_for_agreement:
        raise InvalidParameters(
            f"{provider.title} allows rejections only for failed attention checks, not for "
            "agreement with gold answers or other participants."
        )
    decide = partial(
        _decision,
        publication=publication,
        provider=provider,
        quality={
            int(row.worker_id): (bool(row.passes), str(row.reason or ""))
            for row in worker_quality(publication.campaign).itertuples()
        },
        missed={w: t.attention_failed for w, t in gold_tallies(publication.campaign).items()},
        reject_for_agreement=reject_for_agreement,
    )
    mine = Assignment.objects.filter(
        campaign=publication.campaign, worker__provider=provider.name
    ).select_related("worker")
    if not provider.remote:
        return [
            decide(a, submission_id_of(a)) for a in mine.filter(status=Assignment.Status.SUBMITTED)
        ]
    by_id = {a.provider_assignment_id: a for a in mine.exclude(provider_assignment_id="")}
    decisions = []
    for sub in provider.submissions(config=publication.config, hit_ids=_hit_ids(publication)):
        if sub.status != "submitted":
            continue
        assignment = by_id.get(sub.external_id)
        if assignment is None or assignment.worker.external_id != sub.worker_id:
            decisions.append(
                Decision(sub.external_id, sub.worker_id, "reject", NO_WORK, category="NO_DATA")
            )
        elif assignment.status in (Assignment.Status.APPROVED, Assignment.Status.REJECTED):
            continue
        else:
            decisions.append(decide(assignment, sub.external_id))
    return decisions


def _decision(
    assignment: Assignment,
    submission_id: str,
    *,
    publication: Publication,
    provider: Provider,
    quality: dict[int, tuple[bool, str]],
    missed: dict[int, list[AttentionMiss]],
    reject_for_agreement: bool,
) -> Decision:
    """Decide one submission with work here: reject it without work or by the provider's
    attention rule (or, when asked, for failing quality control); else approve it, flagged
    when quality control would not pass it. ``quality``: worker id → (passes, reason);
    ``missed``: worker id → their failed attention checks."""
    pseudonym = assignment.worker.pseudonym
    if not assignment_has_work(assignment):
        return Decision(
            submission_id, pseudonym, "reject", NO_WORK, assignment=assignment, category="NO_DATA"
        )
    failed = missed.get(assignment.worker_id, [])
    if failed and provider.attention_rejects(failed=len(failed), minutes=_minutes(assignment)):
        return Decision(
            submission_id,
            pseudonym,
            "reject",
            attention_feedback(publication.campaign, failed),
            assignment=assignment,
            category="FAILED_CHECK",
        )
    passes, reason = quality.get(assignment.worker_id, (True, ""))
    if not passes and reject_for_agreement:
        return Decision(
            submission_id,
            pseudonym,
            "reject",
            f"Your answers did not pass the study's quality checks: {reason or 'failed'}.",
            assignment=assignment,
            category="FAILED_CHECK",
        )
    hint = "" if passes else f"hint: {reason or 'quality flags'}; approved by default"
    return Decision(
        submission_id, pseudonym, "approve", hint, assignment=assignment, flagged=not passes
    )


def _minutes(assignment: Assignment) -> float:
    """Return the minutes of work the assignment's items took (each item counted once)."""
    spent: dict[int, int] = {}
    for item_id, ms in assignment.judgments.values_list("item_id", "time_spent_ms"):
        spent[item_id] = max(spent.get(item_id, 0), ms or 0)
    return sum(spent.values()) / 60000


def attention_feedback(campaign: Campaign, missed: list[AttentionMiss]) -> str:
    """Return the rejection's feedback: each failed attention check, what it asked, what came."""
    protocol = registry.get(campaign.protocol)
    titles = {
        q.key: q.text for q in protocol.questions(protocol.clean_parameters(campaign.parameters))
    }
    parts = []
    for miss in missed:
        asked = "; ".join(
            f"{titles.get(q, q)} → {' or '.join(map(str, values))} "
            f"(you answered {miss.given.get(q, 'nothing')})"
            for q, values in miss.expected.items()
        )
        quoted = f'"{miss.text[:200]}": ' if miss.text else ""
        parts.append(f"{quoted}{asked}")
    return (
        f"Your submission failed {len(missed)} attention check(s), items that said what to "
        "answer: " + " | ".join(parts) + "."
    )


def _hit_ids(publication: Publication) -> list[str]:
    return list(publication.hits.values_list("external_id", flat=True))


def campaign_review(
    *,
    publication: Publication,
    actor: str,
    bonus: Decimal | None = None,
    bonus_reason: str = "Thank you for careful work.",
    dry_run: bool = False,
    reject_for_agreement: bool = False,
) -> list[Decision]:
    """Sync, then reject what the provider's rules allow (no work, failed attention checks)
    and approve the rest; quality flags on an approval are hints in its ``reason``.

    ``reject_for_agreement`` also rejects soft-blocked workers and low gold agreement, where
    the provider allows it (InvalidParameters on Prolific). Approved assignments also get
    ``bonus`` (once each) and any pay-bucket top-up. One failure does not stop the others:
    it is recorded in its decision's ``error``.
    """
    if bonus is not None and money(bonus) <= 0:
        raise InvalidParameters("The bonus must be more than 0.00.")
    if not dry_run:
        publication_sync(publication=publication, actor=actor)
    decisions = review_decisions(publication=publication, reject_for_agreement=reject_for_agreement)
    if dry_run:
        return decisions
    for d in decisions:
        try:
            _carry_out(publication, d, actor, bonus, bonus_reason)
            d.done = True
        except AnnotationError as exc:
            d.error = exc.message
    return decisions


def _carry_out(
    publication: Publication, d: Decision, actor: str, bonus: Decimal | None, bonus_reason: str
) -> None:
    if d.action == "reject":
        assignment_reject(
            publication=publication,
            assignment=d.assignment,
            actor=actor,
            feedback=d.reason,
            submission_id=d.submission_id,
            category=d.category,
        )
        return
    assert d.assignment is not None
    owed: list[dict[str, Any]] = []
    topup = assignment_topup(publication=publication, assignment=d.assignment)
    if topup > 0:
        owed.append(
            {
                "amount": topup,
                "reason": "Pay for the length of the dialogues you rated.",
                "kind": Payment.Kind.TOPUP,
                "key": payment_key("topup", d.assignment.pk),
            }
        )
    if bonus is not None and not d.flagged:  # the bonus thanks careful work
        owed.append(
            {
                "amount": bonus,
                "reason": bonus_reason,
                "key": payment_key("review-bonus", d.assignment.pk),
            }
        )
    pay = partial(
        bonus_pay,
        campaign=publication.campaign,
        worker=d.assignment.worker,
        actor=actor,
        assignment=d.assignment,
    )
    # What the approval owes is recorded before it: once approved, review passes the
    # assignment by, so a bonus not yet written by then would never be paid (issue #35).
    for line in owed:
        pay(**line, send=False)
    assignment_approve(publication=publication, assignment=d.assignment, actor=actor)
    for line in owed:
        pay(**line)
