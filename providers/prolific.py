"""Prolific through its REST API (``/api/v1/``, ``Authorization: Token <token>``).

A campaign becomes one study whose external URL carries ``PROLIFIC_PID``, ``STUDY_ID`` and
``SESSION_ID`` (Prolific's submission id); a finished worker is redirected to Prolific's
completion URL with the study's completion code, set to manual review, so nothing is paid
before our review approves it. Blocks, caps and soft blocks go into a participant group that
the study excludes (a blocklist filter), which Prolific applies on the fly.

Bonuses are set up, then paid; Prolific's pay call is not idempotent, so the ledger marks a
payment as being sent before the call and never repeats one whose outcome is unknown.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from typing import Any
from urllib.parse import urlencode

import urllib3
from django.conf import settings
from django.utils.translation import gettext, gettext_noop

from evalsite.errors import InvalidParameters, NotAllowed
from providers.base import (
    Arrival,
    Completion,
    HitState,
    LaunchPlan,
    PaymentLookup,
    Provider,
    ProviderError,
    PublishedHit,
    RemoteStatus,
    RemoteSubmission,
    clean_id,
    money,
)

NAME = "prolific"
DEFAULT_API_URL = "https://api.prolific.com"
DEFAULT_COMPLETE_URL = "https://app.prolific.com/submissions/complete"
URL_PARAMETERS = {
    "PROLIFIC_PID": "{{%PROLIFIC_PID%}}",
    "STUDY_ID": "{{%STUDY_ID%}}",
    "SESSION_ID": "{{%SESSION_ID%}}",
}
_STATUSES: dict[str, RemoteStatus] = {
    "ACTIVE": "accepted",
    "AWAITING REVIEW": "submitted",
    "APPROVED": "approved",
    "PARTIALLY APPROVED": "approved",
    "REJECTED": "rejected",
    "RETURNED": "returned",
    "SCREENED OUT": "returned",
    "TIMED-OUT": "expired",
}
_REJECTION_NOTE = (
    " Your submission was checked against the study's explicit attention checks and the "
    "data it recorded for you; thank you for your understanding."
)


def study_url(base_url: str) -> str:
    """Return the worker URL with Prolific's placeholders (left unescaped, as Prolific wants)."""
    joiner = "&" if "?" in base_url else "?"
    return base_url + joiner + "&".join(f"{k}={v}" for k, v in URL_PARAMETERS.items())


class ProlificProvider(Provider):
    """Studies, submissions, bonuses and participant groups over Prolific's JSON API."""

    name = NAME
    title = "Prolific"
    # Prolific: reject only for failed explicit attention checks, never for agreement with
    # others or subjective gold (researcher-help: "Prolific's attention and comprehension
    # check policy"); participants who fail comprehension checks are asked to return.
    rejects_for_agreement = False

    def __init__(self) -> None:
        self._pool = urllib3.PoolManager(
            timeout=urllib3.Timeout(connect=5.0, read=30.0), retries=False
        )

    def unavailable(self) -> str:
        """Name the missing API token (the requests would be refused without it)."""
        if getattr(settings, "PROLIFIC_API_TOKEN", ""):
            return ""
        return "Set PROLIFIC_API_TOKEN to use Prolific (Settings → API token)."

    def attention_rejects(self, *, failed: int, minutes: float) -> bool:
        """Two failed checks in a study of 5 minutes or more; one in a shorter one."""
        return failed >= 2 or (failed >= 1 and minutes < 5)

    # --- HTTP --------------------------------------------------------------------------------

    def request(self, method: str, path: str, body: Mapping[str, Any] | None = None) -> Any:
        """Send one API request and return the decoded JSON (None for an empty body).

        GETs are retried on connection errors; writes never are, because a write that reached
        Prolific must not be repeated blindly. A write that may have reached it raises a
        ProviderError with ``uncertain`` set.
        """
        token = getattr(settings, "PROLIFIC_API_TOKEN", "")
        if not token:
            raise ProviderError("Set PROLIFIC_API_TOKEN to use Prolific (Settings → API token).")
        base = getattr(settings, "PROLIFIC_API_URL", DEFAULT_API_URL).rstrip("/")
        url = path if path.startswith("http") else f"{base}{path}"
        retries = urllib3.Retry(total=2, backoff_factor=0.2) if method == "GET" else False
        try:
            response = self._pool.request(
                method,
                url,
                body=json.dumps(body).encode() if body is not None else None,
                headers={
                    "Authorization": f"Token {token}",
                    "Content-Type": "application/json",
                    "Accept": "application/json",
                },
                retries=retries,
            )
        except urllib3.exceptions.HTTPError as exc:
            error = ProviderError(f"Could not reach Prolific at {base}: {exc}")
            error.uncertain = method != "GET" and not isinstance(
                exc, urllib3.exceptions.NewConnectionError
            )
            raise error from None
        data = _json(response.data)
        if response.status >= 400:
            error = ProviderError(
                f"Prolific refused {method} {path} ({response.status}): {_detail(data)}",
                fields={"status": str(response.status)},
            )
            # A server error (a gateway's timeout among them) may come after the write was done.
            error.uncertain = method != "GET" and response.status >= 500
            raise error
        return data

    # --- arrival and completion --------------------------------------------------------------

    def parse_arrival(self, params: Mapping[str, str]) -> Arrival | None:
        """Recognise ``PROLIFIC_PID``, ``STUDY_ID`` and ``SESSION_ID``."""
        pid = params.get("PROLIFIC_PID", "").strip()
        if not pid:
            return None
        return Arrival(
            provider=NAME,
            worker_id=clean_id(pid, gettext_noop("Prolific participant id")),
            assignment_id=clean_id(
                params.get("SESSION_ID", "").strip(), gettext_noop("Prolific session id")
            ),
            hit_id=clean_id(params.get("STUDY_ID", "").strip(), gettext_noop("Prolific study id")),
        )

    def arrival_query(self, arrival: Arrival) -> dict[str, str]:
        """Return the URL parameters of a Prolific arrival."""
        return {
            "PROLIFIC_PID": arrival.worker_id,
            "STUDY_ID": arrival.hit_id,
            "SESSION_ID": arrival.assignment_id,
        }

    def verify_arrival(self, *, config: Mapping[str, Any], arrival: Arrival, first: bool) -> None:
        """On a first visit, ask Prolific whether this session is this participant's, active."""
        if not first:
            return
        try:
            found = self.request("GET", f"/api/v1/submissions/{arrival.assignment_id}/")
        except ProviderError as exc:
            if exc.fields.get("status") in ("400", "404"):
                raise NotAllowed(gettext("Prolific does not know this session.")) from None
            raise
        participant = found.get("participant_id") or found.get("participant")
        if participant != arrival.worker_id or found.get("study_id") != arrival.hit_id:
            raise NotAllowed(
                gettext("This Prolific session belongs to another participant or study.")
            )
        if found.get("status") != "ACTIVE":
            raise NotAllowed(
                gettext(
                    "This Prolific session is no longer active (%(status)s); start the study "
                    "again on Prolific."
                )
                % {"status": str(found.get("status", "")).lower()[:40]}
            )

    def completion(
        self, *, config: Mapping[str, Any], assignment_id: str, submit_to: str, code: str
    ) -> Completion:
        """Redirect to Prolific's completion URL with the study's completion code; without
        one (a study not published by us) show the assignment's own code."""
        base = getattr(settings, "PROLIFIC_COMPLETE_URL", DEFAULT_COMPLETE_URL)
        study_code = str(config.get("completion_code", ""))
        if not study_code:
            return Completion(kind="code", code=code)
        return Completion(
            kind="redirect", url=f"{base}?{urlencode({'cc': study_code})}", code=study_code
        )

    # --- publishing --------------------------------------------------------------------------

    def endpoint(self, config: Mapping[str, Any]) -> str:
        """Return the Prolific API this deployment talks to."""
        return str(settings.PROLIFIC_API_URL)

    def fee(self, *, reward: Decimal, assignments: int, bonus: bool = False) -> Decimal:
        """Return Prolific's service fee (``PROLIFIC_FEE_RATE``, VAT included where due)."""
        rate = Decimal(str(getattr(settings, "PROLIFIC_FEE_RATE", "0.43")))
        return money(reward * rate)

    def _group(self, name: str, participant_ids: Sequence[str]) -> str:
        workspace = getattr(settings, "PROLIFIC_WORKSPACE_ID", "")
        if not workspace:
            raise InvalidParameters(
                "Set PROLIFIC_WORKSPACE_ID: blocks and allow lists live in participant groups "
                "of that workspace."
            )
        body = {"name": name, "workspace_id": workspace, "participant_ids": list(participant_ids)}
        return str(self.request("POST", "/api/v1/participant-groups/", body)["id"])

    def study_body(self, *, config: Mapping[str, Any], plan: LaunchPlan) -> dict[str, Any]:
        """Return the JSON that creates the plan's study (one study, one reward)."""
        rewards = {money(h.reward) for h in plan.hits}
        if len(rewards) != 1:
            raise InvalidParameters("A Prolific study has one reward: use no pay buckets.")
        if plan.eligibility.locales:
            raise InvalidParameters(
                "Prolific filters countries by its own choice ids: pass them as a filter "
                "(e.g. current-country-of-residence=<id>,<id>) instead of locales."
            )
        filters: list[dict[str, Any]] = [
            {"filter_id": "participant_group_blocklist", "selected_values": [config["block_group"]]}
        ]
        if config.get("allow_group"):
            filters.append(
                {
                    "filter_id": "participant_group_allowlist",
                    "selected_values": [config["allow_group"]],
                }
            )
        for filter_id, low in (
            ("approval_rate", plan.eligibility.min_percent_approved),
            ("approval_numbers", plan.eligibility.min_number_approved),
        ):
            if low is not None:
                filters.append({"filter_id": filter_id, "selected_range": {"lower": int(low)}})
        for filter_id, values in plan.eligibility.extra_filters:
            filters.append({"filter_id": filter_id, "selected_values": values.split(",")})
        body: dict[str, Any] = {
            "name": plan.title,
            "internal_name": f"evalsite:{plan.slug}",
            "description": plan.description,
            "external_study_url": study_url(plan.url),
            "prolific_id_option": "url_parameters",
            "completion_codes": [
                {
                    "code": config["completion_code"],
                    "code_type": "COMPLETED",
                    "actions": [{"action": "MANUALLY_REVIEW"}],
                }
            ],
            "total_available_places": plan.places,
            "estimated_completion_time": plan.minutes,
            "maximum_allowed_time": max(plan.minutes, plan.assignment_seconds // 60),
            "reward": int(rewards.pop() * 100),  # in the study currency's cents
            "device_compatibility": ["desktop", "tablet", "mobile"],
            "filters": filters,
        }
        if getattr(settings, "PROLIFIC_PROJECT_ID", ""):
            body["project"] = settings.PROLIFIC_PROJECT_ID
        return body

    def publish(
        self,
        *,
        config: dict[str, Any],
        plan: LaunchPlan,
        on_hit: Callable[[PublishedHit], None] | None = None,
    ) -> list[PublishedHit]:
        """Create the participant groups and the study, then publish it."""
        config.setdefault("completion_code", "EV" + secrets.token_hex(4).upper())
        if not config.get("block_group"):
            config["block_group"] = self._group(
                f"evalsite {plan.slug} blocked", plan.eligibility.block_workers
            )
        if plan.eligibility.allow_workers and not config.get("allow_group"):
            config["allow_group"] = self._group(
                f"evalsite {plan.slug} allowed", plan.eligibility.allow_workers
            )
        if not config.get("study_id"):
            study = self.request(
                "POST", "/api/v1/studies/", self.study_body(config=config, plan=plan)
            )
            config["study_id"] = str(study["id"])
        self.request(
            "POST", f"/api/v1/studies/{config['study_id']}/transition/", {"action": "PUBLISH"}
        )
        spec = plan.hits[0]
        total = plan.places
        hit = PublishedHit(
            external_id=config["study_id"],
            spec=type(spec)(assignments=total, reward=spec.reward, label=spec.label),
            fee_per_assignment=self.fee(reward=spec.reward, assignments=total),
        )
        if on_hit is not None:
            on_hit(hit)
        return [hit]

    def hit_extend(self, *, config: Mapping[str, Any], hit_id: str, extra: int, token: str) -> None:
        """Raise the study's places by ``extra``."""
        study = self.request("GET", f"/api/v1/studies/{hit_id}/")
        places = int(study.get("total_available_places", 0)) + extra
        self.request("PATCH", f"/api/v1/studies/{hit_id}/", {"total_available_places": places})

    def hit_states(
        self, *, config: Mapping[str, Any], hit_ids: Sequence[str]
    ) -> dict[str, HitState]:
        """Return each study's status and the time a participant may take."""
        states = {}
        for hit_id in hit_ids:
            study = self.request("GET", f"/api/v1/studies/{hit_id}/")
            minutes = study.get("maximum_allowed_time")
            states[hit_id] = HitState(
                status=str(study.get("status", "")),
                assignment_seconds=int(minutes) * 60 if minutes else None,
            )
        return states

    def _transition(self, hit_ids: Sequence[str], action: str) -> None:
        for hit_id in hit_ids:
            self.request("POST", f"/api/v1/studies/{hit_id}/transition/", {"action": action})

    def pause(self, *, config: Mapping[str, Any], hit_ids: Sequence[str]) -> None:
        """Pause the study."""
        self._transition(hit_ids, "PAUSE")

    def resume(self, *, config: Mapping[str, Any], hit_ids: Sequence[str]) -> None:
        """Start the paused study again."""
        self._transition(hit_ids, "START")

    def stop(self, *, config: Mapping[str, Any], hit_ids: Sequence[str]) -> None:
        """Stop the study for good."""
        self._transition(hit_ids, "STOP")

    # --- review and money --------------------------------------------------------------------

    def submissions(
        self, *, config: Mapping[str, Any], hit_ids: Sequence[str]
    ) -> list[RemoteSubmission]:
        """List every submission of the studies, following the pages."""
        found = []
        for hit_id in hit_ids:
            url: str | None = f"/api/v1/studies/{hit_id}/submissions/"
            while url:
                page = self.request("GET", url)
                for s in page.get("results", []):
                    raw = str(s.get("status", ""))
                    found.append(
                        RemoteSubmission(
                            external_id=str(s["id"]),
                            worker_id=str(s.get("participant_id") or s.get("participant")),
                            hit_id=str(s.get("study_id") or hit_id),
                            status=_STATUSES.get(raw, "accepted"),
                            raw_status=raw,
                        )
                    )
                url = ((page.get("_links") or {}).get("next") or {}).get("href")
        return found

    def approve(self, *, config: Mapping[str, Any], submission_id: str, feedback: str) -> None:
        """Approve the submission (Prolific's transition is idempotent)."""
        self.request(
            "POST", f"/api/v1/submissions/{submission_id}/transition/", {"action": "APPROVE"}
        )

    def reject(
        self,
        *,
        config: Mapping[str, Any],
        submission_id: str,
        feedback: str,
        category: str = "",
    ) -> None:
        """Reject with a message of at least 100 characters and a rejection category."""
        message = feedback.strip() or "Your submission did not meet the study's criteria."
        if len(message) < 100:
            message += _REJECTION_NOTE
        body = {
            "action": "REJECT",
            "message": message,
            "rejection_category": category or "FAILED_CHECK",
        }
        self.request("POST", f"/api/v1/submissions/{submission_id}/transition/", body)

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
        """Set up a bonus for the submission, then pay it (once: the ledger guards the call)."""
        try:
            setup = self.request(
                "POST",
                "/api/v1/submissions/bonus-payments/",
                {
                    "study_id": config["study_id"],
                    "csv_bonuses": f"{submission_id},{money(amount)}\n",
                },
            )
        except ProviderError as exc:
            exc.uncertain = False  # setting a bonus up pays nothing
            raise
        bonus_id = str(setup["id"])
        self.request("POST", f"/api/v1/bulk-bonus-payments/{bonus_id}/pay/")
        return bonus_id

    def payment_lookup(self, *, kind: str, submission_id: str, **_: Any) -> PaymentLookup:
        """A reward: the submission's status says whether it was approved. A bonus: Prolific's
        API lists no bonus payments, so it cannot tell, and paying again could pay twice."""
        if kind != "reward":
            why = "Prolific's API cannot say whether a bonus was paid: look for it in the study's"
            why += " bonuses on app.prolific.com, then mark it paid or failed here."
            return PaymentLookup("unknown", reason=why)
        status = str(self.request("GET", f"/api/v1/submissions/{submission_id}/").get("status"))
        if _STATUSES.get(status) == "approved":
            return PaymentLookup("paid", reference=submission_id)
        if _STATUSES.get(status) == "submitted":
            return PaymentLookup("absent")
        return PaymentLookup("unknown", reason=f"Prolific says the submission is {status!r}.")

    # --- workers -----------------------------------------------------------------------------

    def block(self, *, config: Mapping[str, Any], worker_id: str, reason: str) -> None:
        """Add the participant to the study's blocklist group."""
        self.mark_ineligible(config=config, worker_ids=[worker_id])

    def unblock(self, *, config: Mapping[str, Any], worker_id: str, reason: str) -> None:
        """Remove the participant from the blocklist group."""
        group = config.get("block_group")
        if group:
            self.request(
                "DELETE",
                f"/api/v1/participant-groups/{group}/participants/",
                {"participant_ids": [worker_id]},
            )

    def notify(
        self, *, config: Mapping[str, Any], worker_ids: Sequence[str], subject: str, message: str
    ) -> None:
        """Send each participant a Prolific message about the study."""
        for worker_id in worker_ids:
            self.request(
                "POST",
                "/api/v1/messages/",
                {
                    "recipient_id": worker_id,
                    "study_id": config.get("study_id", ""),
                    "body": f"{subject}\n\n{message}" if subject else message,
                },
            )

    def mark_ineligible(self, *, config: Mapping[str, Any], worker_ids: Sequence[str]) -> None:
        """Add participants to the blocklist group (Prolific applies it at once)."""
        group = config.get("block_group")
        if group and worker_ids:
            self.request(
                "POST",
                f"/api/v1/participant-groups/{group}/participants/",
                {"participant_ids": list(worker_ids)},
            )


def _json(data: bytes) -> Any:
    if not data:
        return None
    try:
        return json.loads(data)
    except ValueError:
        return data.decode("utf-8", "replace")[:300]


def _detail(data: Any) -> str:
    error = data.get("error", data) if isinstance(data, dict) else data
    if isinstance(error, dict):
        error = error.get("detail") or error.get("title") or error
    return str(error)[:500]


PROVIDER = ProlificProvider()
parse_arrival = PROVIDER.parse_arrival
arrival_query = PROVIDER.arrival_query
