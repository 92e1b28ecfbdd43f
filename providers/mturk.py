"""Amazon Mechanical Turk through boto3: HIT types, HITs with an ExternalQuestion, review, pay.

MTurk closed on 30 September 2026. The adapter stays complete for MTurk-API-compatible
endpoints (``endpoint_url``), for replaying old studies and for archives. The sandbox endpoint
is the default; production needs ``sandbox=False`` in the publication's config, which only
``launch --production`` sets.

Worker URL contract (ExternalQuestion): ``/task/<slug>/?assignmentId=…&hitId=…&workerId=…&
turkSubmitTo=…``; ``assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE`` is a preview. On completion
the page posts ``assignmentId`` to ``<turkSubmitTo>/mturk/externalSubmit``; ``turkSubmitTo``
must be one of ``MTURK_SUBMIT_HOSTS`` so the page never posts work to a stranger's site.
MTurk lists only submitted assignments (never accepted ones), so an arrival is checked against
our own HITs and the assignment against the provider's list when it is reviewed.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError
from django.conf import settings
from django.utils.translation import gettext_noop

from evalsite.errors import InvalidParameters
from providers.base import (
    Arrival,
    Completion,
    HitSpec,
    HitState,
    LaunchPlan,
    PaymentLookup,
    Provider,
    ProviderError,
    PublishedHit,
    RemoteSubmission,
    clean_id,
    money,
)
from providers.mturk_api import (
    PAST,
    STATUSES,
    endpoint_for,
    epoch,
    external_question,
    external_submit_url,
    qualification_requirements,
    submit_hosts,
)

NAME = "mturk"
PREVIEW_ASSIGNMENT_ID = "ASSIGNMENT_ID_NOT_AVAILABLE"


class MTurkProvider(Provider):
    """The MTurk requester API (2017-01-17) through boto3's ``mturk`` client."""

    name = NAME
    title = "Amazon Mechanical Turk (and MTurk-API-compatible endpoints)"
    currency = "USD"  # MTurk pays in US dollars only
    idempotent_payments = True
    drops_expired_assignments = True

    def __init__(self) -> None:
        self._clients: dict[tuple[str, str], Any] = {}

    def unavailable(self) -> str:
        """Name the missing AWS credentials of the requester account (no request is made)."""
        if boto3.session.Session().get_credentials() is not None:
            return ""
        return (
            "No AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or an AWS "
            "profile) for the MTurk requester account."
        )

    # --- the client ------------------------------------------------------------------------

    def client(self, config: Mapping[str, Any]) -> Any:
        """Return a boto3 ``mturk`` client for the publication's endpoint (cached)."""
        endpoint = endpoint_for(config)
        session = boto3.session.Session()
        credentials = session.get_credentials()
        key = (endpoint, credentials.access_key if credentials else "")
        if key not in self._clients:
            if credentials is None:
                raise ProviderError(
                    "No AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or an "
                    "AWS profile) for the MTurk requester account."
                )
            self._clients[key] = session.client(
                "mturk",
                region_name=getattr(settings, "MTURK_REGION", "us-east-1"),
                endpoint_url=endpoint,
                config=Config(connect_timeout=5, read_timeout=30, retries={"max_attempts": 3}),
            )
        return self._clients[key]

    def call(self, config: Mapping[str, Any], operation: str, **params: Any) -> dict[str, Any]:
        """Call one MTurk operation; turn every failure into a ProviderError with its message."""
        client = self.client(config)
        try:
            return dict(getattr(client, operation)(**params))
        except ClientError as exc:
            error = exc.response.get("Error", {})
            raise ProviderError(
                f"MTurk refused {operation}: {error.get('Message') or error.get('Code')}",
                fields={"code": str(error.get("Code", ""))},
            ) from None
        except BotoCoreError as exc:
            raise ProviderError(f"Could not reach MTurk at {endpoint_for(config)}: {exc}") from None

    # --- arrival and completion --------------------------------------------------------------

    def parse_arrival(self, params: Mapping[str, str]) -> Arrival | None:
        """Recognise MTurk's ``assignmentId``/``hitId``/``workerId``/``turkSubmitTo``."""
        assignment_id = params.get("assignmentId", "").strip()
        if not assignment_id:
            return None
        hit_id = clean_id(params.get("hitId", "").strip(), gettext_noop("HIT id"))
        if assignment_id == PREVIEW_ASSIGNMENT_ID:
            return Arrival(provider=NAME, worker_id="", hit_id=hit_id, preview=True)
        submit_to = params.get("turkSubmitTo", "").strip().rstrip("/")
        if submit_to not in submit_hosts():
            raise InvalidParameters(
                "turkSubmitTo must be one of: " + ", ".join(submit_hosts()) + "."
            )
        return Arrival(
            provider=NAME,
            worker_id=clean_id(params.get("workerId", "").strip(), gettext_noop("worker id")),
            assignment_id=clean_id(assignment_id, gettext_noop("assignment id")),
            hit_id=hit_id,
            submit_to=submit_to,
        )

    def arrival_query(self, arrival: Arrival) -> dict[str, str]:
        """Return the URL parameters of an MTurk arrival."""
        return {
            "assignmentId": arrival.assignment_id or PREVIEW_ASSIGNMENT_ID,
            "hitId": arrival.hit_id,
            "workerId": arrival.worker_id,
            "turkSubmitTo": arrival.submit_to,
        }

    def completion(
        self, *, config: Mapping[str, Any], assignment_id: str, submit_to: str, code: str
    ) -> Completion:
        """Post the assignment id to ``<turkSubmitTo>/mturk/externalSubmit``; without a
        ``turkSubmitTo`` (a link opened outside MTurk) show the code."""
        if not submit_to:
            return Completion(kind="code", code=code)
        return Completion(
            kind="post",
            url=external_submit_url(submit_to),
            fields=(("assignmentId", assignment_id),),
        )

    # --- publishing --------------------------------------------------------------------------

    def endpoint(self, config: Mapping[str, Any]) -> str:
        """Return the MTurk endpoint (sandbox or production) the config names."""
        return endpoint_for(config)

    def hit_specs(self, *, units: int, redundancy: int, reward: Decimal) -> tuple[HitSpec, ...]:
        """One HIT per assignment's worth of items, with ``redundancy`` assignments each."""
        return tuple(HitSpec(redundancy, reward) for _ in range(units))

    def extend_check(self, *, hit_id: str, assignments: int, extra: int) -> None:
        """Refuse growing a HIT from under 10 assignments to 10 or more (MTurk forbids it)."""
        if assignments < 10 <= assignments + extra:
            raise InvalidParameters(
                f"HIT {hit_id} has {assignments} assignments; MTurk does not let a HIT under "
                f"10 assignments grow to 10 or more. Add at most {9 - assignments}, or launch "
                "new HITs."
            )

    def fee(self, *, reward: Decimal, assignments: int, bonus: bool = False) -> Decimal:
        """Return MTurk's commission: 20%, 40% for HITs with 10+ assignments, at least $0.01."""
        rate = Decimal("0.20") if bonus or assignments < 10 else Decimal("0.40")
        return max(money(reward * rate), Decimal("0.01"))

    def _qualifications(
        self, config: dict[str, Any], plan: LaunchPlan, nonce: str
    ) -> list[dict[str, Any]]:
        """Create the limit (and allow-list) qualification types; return the requirements."""
        if not config.get("limit_qualification_id"):
            qual = self.call(
                config,
                "create_qualification_type",
                Name=f"evalsite {plan.slug} limit {nonce}",
                Description="Workers who reached this study's limit or may not take part.",
                QualificationTypeStatus="Active",
            )
            config["limit_qualification_id"] = qual["QualificationType"]["QualificationTypeId"]
        self.mark_ineligible(config=config, worker_ids=plan.eligibility.block_workers)
        if plan.eligibility.allow_workers and not config.get("allow_qualification_id"):
            qual = self.call(
                config,
                "create_qualification_type",
                Name=f"evalsite {plan.slug} allowed {nonce}",
                Description="Workers invited to this study.",
                QualificationTypeStatus="Active",
            )
            config["allow_qualification_id"] = qual["QualificationType"]["QualificationTypeId"]
            for worker_id in plan.eligibility.allow_workers:
                self.call(
                    config,
                    "associate_qualification_with_worker",
                    QualificationTypeId=config["allow_qualification_id"],
                    WorkerId=worker_id,
                    IntegerValue=1,
                    SendNotification=False,
                )
        return qualification_requirements(
            plan.eligibility,
            limit_qual=config["limit_qualification_id"],
            allow_qual=config.get("allow_qualification_id", ""),
        )

    def publish(
        self,
        *,
        config: dict[str, Any],
        plan: LaunchPlan,
        on_hit: Callable[[PublishedHit], None] | None = None,
    ) -> list[PublishedHit]:
        """Create the qualification types, one HIT type per reward, and the HITs."""
        nonce = secrets.token_hex(4)
        requirements = self._qualifications(config, plan, nonce)
        hit_types: dict[str, str] = dict(config.get("hit_types", {}))
        published = []
        for n, spec in enumerate(plan.hits, start=1):
            reward = f"{money(spec.reward):.2f}"
            if reward not in hit_types:
                hit_types[reward] = self.call(
                    config,
                    "create_hit_type",
                    AutoApprovalDelayInSeconds=plan.auto_approve_seconds,
                    AssignmentDurationInSeconds=plan.assignment_seconds,
                    Reward=reward,
                    Title=plan.title[:128],
                    Keywords=plan.keywords[:1000],
                    Description=plan.description[:2000],
                    QualificationRequirements=requirements,
                )["HITTypeId"]
                config["hit_types"] = hit_types
            hit = self.call(
                config,
                "create_hit_with_hit_type",
                HITTypeId=hit_types[reward],
                MaxAssignments=spec.assignments,
                LifetimeInSeconds=plan.lifetime_seconds,
                Question=external_question(plan.url, plan.frame_height),
                RequesterAnnotation=f"evalsite:{plan.slug}"[:255],
                UniqueRequestToken=f"{plan.slug[:40]}-{nonce}-{n}",
            )["HIT"]
            done = PublishedHit(
                external_id=hit["HITId"],
                spec=spec,
                fee_per_assignment=self.fee(reward=spec.reward, assignments=spec.assignments),
                expires_at=epoch(hit.get("Expiration")),
            )
            if on_hit is not None:
                on_hit(done)
            published.append(done)
        config["hit_type_id"] = next(iter(hit_types.values()), "")
        return published

    def hit_extend(self, *, config: Mapping[str, Any], hit_id: str, extra: int, token: str) -> None:
        """Add assignments to a HIT (MTurk keeps a HIT under 10 assignments below 10)."""
        self.call(
            config,
            "create_additional_assignments_for_hit",
            HITId=hit_id,
            NumberOfAdditionalAssignments=extra,
            UniqueRequestToken=token[:64],
        )

    def hit_states(
        self, *, config: Mapping[str, Any], hit_ids: Sequence[str]
    ) -> dict[str, HitState]:
        """Return each HIT's HITStatus, expiration and assignment duration."""
        states = {}
        for hit_id in hit_ids:
            hit = self.call(config, "get_hit", HITId=hit_id)["HIT"]
            states[hit_id] = HitState(
                status=str(hit.get("HITStatus", "")),
                expires_at=epoch(hit.get("Expiration")),
                assignment_seconds=hit.get("AssignmentDurationInSeconds"),
            )
        return states

    def pause(self, *, config: Mapping[str, Any], hit_ids: Sequence[str]) -> None:
        """Expire the HITs now (MTurk has no pause; resume sets a new expiry)."""
        self.stop(config=config, hit_ids=hit_ids)

    def resume(self, *, config: Mapping[str, Any], hit_ids: Sequence[str]) -> None:
        """Put the HITs back on the market for their original lifetime."""
        lifetime = int(config.get("lifetime_seconds", 7 * 24 * 3600))
        expire_at = datetime.fromtimestamp(time.time() + lifetime, tz=UTC)
        for hit_id in hit_ids:
            self.call(config, "update_expiration_for_hit", HITId=hit_id, ExpireAt=expire_at)

    def stop(self, *, config: Mapping[str, Any], hit_ids: Sequence[str]) -> None:
        """Expire the HITs: no new worker can accept; submitted work can still be reviewed."""
        for hit_id in hit_ids:
            self.call(config, "update_expiration_for_hit", HITId=hit_id, ExpireAt=PAST)

    # --- review and money --------------------------------------------------------------------

    def submissions(
        self, *, config: Mapping[str, Any], hit_ids: Sequence[str]
    ) -> list[RemoteSubmission]:
        """List every HIT's submitted, approved and rejected assignments (all pages)."""
        found = []
        for hit_id in hit_ids:
            token: str | None = None
            while True:
                params: dict[str, Any] = {"HITId": hit_id, "MaxResults": 100}
                if token:
                    params["NextToken"] = token
                page = self.call(config, "list_assignments_for_hit", **params)
                for a in page.get("Assignments", []):
                    raw = str(a.get("AssignmentStatus", ""))
                    found.append(
                        RemoteSubmission(
                            external_id=a["AssignmentId"],
                            worker_id=a["WorkerId"],
                            hit_id=a.get("HITId", hit_id),
                            status=STATUSES.get(raw, "submitted"),
                            raw_status=raw,
                        )
                    )
                token = page.get("NextToken")
                if not token:
                    break
        return found

    def _assignment_status(self, config: Mapping[str, Any], assignment_id: str) -> str:
        found = self.call(config, "get_assignment", AssignmentId=assignment_id)
        return str(found["Assignment"].get("AssignmentStatus", ""))

    def approve(self, *, config: Mapping[str, Any], submission_id: str, feedback: str) -> None:
        """ApproveAssignment; an assignment already approved counts as success."""
        params: dict[str, Any] = {"AssignmentId": submission_id}
        if feedback:
            params["RequesterFeedback"] = feedback[:1024]
        try:
            self.call(config, "approve_assignment", **params)
        except ProviderError:
            if self._assignment_status(config, submission_id) != "Approved":
                raise

    def reject(
        self,
        *,
        config: Mapping[str, Any],
        submission_id: str,
        feedback: str,
        category: str = "",
    ) -> None:
        """RejectAssignment with feedback; one already rejected counts as success."""
        try:
            self.call(
                config,
                "reject_assignment",
                AssignmentId=submission_id,
                RequesterFeedback=(feedback or "Rejected.")[:1024],
            )
        except ProviderError:
            if self._assignment_status(config, submission_id) != "Rejected":
                raise

    def bonus(
        self,
        *,
        config: Mapping[str, Any],
        worker_id: str,
        submission_id: str,
        amount: Decimal,
        reason: str,
        token: str,
    ) -> str:
        """SendBonus with ``token`` as UniqueRequestToken, so a retry never pays twice."""
        try:
            self.call(
                config,
                "send_bonus",
                WorkerId=worker_id,
                BonusAmount=f"{money(amount):.2f}",
                AssignmentId=submission_id,
                Reason=reason[:1024] or "Bonus",
                UniqueRequestToken=token[:64],
            )
        except ProviderError as exc:
            # MTurk refuses a token it has already seen: that bonus was paid.
            if "UniqueRequestToken" not in exc.message:
                raise
        return token[:64]

    def payment_lookup(
        self,
        *,
        config: Mapping[str, Any],
        kind: str,
        worker_id: str,
        submission_id: str,
        amount: Decimal,
        reason: str,
        token: str,
    ) -> PaymentLookup:
        """A reward: GetAssignment's status. A bonus: ListBonusPayments of the assignment, which
        names no request token, so a bonus counts as found by its worker, amount and reason;
        absent, SendBonus again with the same UniqueRequestToken cannot pay twice."""
        if kind == "reward":
            status = self._assignment_status(config, submission_id)
            if status == "Approved":
                return PaymentLookup("paid", reference=submission_id)
            if status == "Submitted":
                return PaymentLookup("absent")
            return PaymentLookup("unknown", reason=f"MTurk says the assignment is {status!r}.")
        matches, params = 0, {"AssignmentId": submission_id, "MaxResults": 100}
        while True:
            page = self.call(config, "list_bonus_payments", **params)
            matches += sum(
                b.get("WorkerId") == worker_id
                and money(b.get("BonusAmount", "0")) == money(amount)
                and b.get("Reason", "") == (reason[:1024] or "Bonus")
                for b in page.get("BonusPayments", [])
            )
            if not page.get("NextToken"):
                break
            params["NextToken"] = page["NextToken"]
        if matches == 1:
            return PaymentLookup("paid", reference=token[:64])
        if matches == 0:
            return PaymentLookup("absent")
        return PaymentLookup(
            "unknown", reason=f"MTurk lists {matches} bonuses of this amount and reason."
        )

    # --- workers -----------------------------------------------------------------------------

    def block(self, *, config: Mapping[str, Any], worker_id: str, reason: str) -> None:
        """CreateWorkerBlock: the worker can no longer see any of the requester's HITs."""
        self.call(config, "create_worker_block", WorkerId=worker_id, Reason=reason[:1024])

    def unblock(self, *, config: Mapping[str, Any], worker_id: str, reason: str) -> None:
        """DeleteWorkerBlock."""
        self.call(config, "delete_worker_block", WorkerId=worker_id, Reason=reason[:1024])

    def notify(
        self, *, config: Mapping[str, Any], worker_ids: Sequence[str], subject: str, message: str
    ) -> None:
        """NotifyWorkers, 100 workers per call."""
        ids = list(worker_ids)
        for start in range(0, len(ids), 100):
            self.call(
                config,
                "notify_workers",
                Subject=subject[:200],
                MessageText=message[:4096],
                WorkerIds=ids[start : start + 100],
            )

    def mark_ineligible(self, *, config: Mapping[str, Any], worker_ids: Sequence[str]) -> None:
        """Grant the limit qualification, which the HIT type's requirements exclude."""
        qual = config.get("limit_qualification_id")
        if not qual:
            return
        for worker_id in worker_ids:
            self.call(
                config,
                "associate_qualification_with_worker",
                QualificationTypeId=qual,
                WorkerId=worker_id,
                IntegerValue=1,
                SendNotification=False,
            )


PROVIDER = MTurkProvider()
parse_arrival = PROVIDER.parse_arrival
arrival_query = PROVIDER.arrival_query
