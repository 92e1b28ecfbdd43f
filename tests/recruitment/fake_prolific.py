"""A fake Prolific API on loopback, speaking its JSON shapes (``/api/v1/...``).

It checks the token, the bodies (required fields, types, the study URL's placeholders, a
rejection's 100-character message and category), keeps studies, submissions, participant
groups, bonuses and messages, and plays the participant's side: ``join`` starts a
submission (honouring the study's allow/block participant groups and places), and
``/submissions/complete?cc=`` completes it as app.prolific.com does. Like the real one, the
bonus pay call is not idempotent: paying the same bonus twice pays twice.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from dataclasses import dataclass, field
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

PLACEHOLDERS = ("{{%PROLIFIC_PID%}}", "{{%STUDY_ID%}}", "{{%SESSION_ID%}}")
CATEGORIES = {
    "TOO_QUICKLY",
    "TOO_SLOWLY",
    "FAILED_INSTRUCTIONS",
    "INCOMP_LONGITUDINAL",
    "FAILED_CHECK",
    "LOW_EFFORT",
    "MALINGERING",
    "NO_CODE",
    "BAD_CODE",
    "NO_DATA",
    "UNSUPP_DEVICE",
    "OTHER",
}
STUDY_ACTIONS = {
    "PUBLISH": ("UNPUBLISHED",),
    "PAUSE": ("ACTIVE",),
    "START": ("PAUSED",),
    "STOP": ("ACTIVE", "PAUSED"),
}
PAGE_SIZE = 2  # small, so clients must follow the pages


class Problem(Exception):
    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


@dataclass
class State:
    studies: dict[str, dict[str, Any]] = field(default_factory=dict)
    submissions: dict[str, dict[str, Any]] = field(default_factory=dict)
    groups: dict[str, dict[str, Any]] = field(default_factory=dict)
    bonuses: dict[str, dict[str, Any]] = field(default_factory=dict)
    paid: list[dict[str, Any]] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)
    calls: list[tuple[str, str]] = field(default_factory=list)


def _need(body: dict[str, Any], name: str, kind: type | tuple[type, ...]) -> Any:
    if name not in body or not isinstance(body[name], kind) or isinstance(body[name], bool):
        raise Problem(400, f"{name}: required, of type {kind}")
    return body[name]


class FakeProlific:
    """The fake API server: start it, set PROLIFIC_API_URL to ``url``, stop it."""

    token = "fake-prolific-token-for-tests"

    def __init__(self) -> None:
        self.state = State()
        self.lock = threading.Lock()
        self._ids = itertools.count(1)
        handler = type("Handler", (_Handler,), {"fake": self})
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def start(self) -> FakeProlific:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def new_id(self) -> str:
        return f"{next(self._ids):08x}{'0' * 16}"[:24]

    # --- the participant's side --------------------------------------------------------------

    def join(self, study_id: str, participant: str) -> str:
        """Start a submission as ``participant``; return its id (SESSION_ID)."""
        with self.lock:
            study = self.state.studies[study_id]
            if study["status"] != "ACTIVE":
                raise Problem(400, "This study is not active.")
            for f in study["filters"]:
                members = {
                    m for g in f.get("selected_values", []) for m in self.state.groups[g]["members"]
                }
                if f["filter_id"] == "participant_group_blocklist" and participant in members:
                    raise Problem(403, "You are not eligible for this study.")
                if f["filter_id"] == "participant_group_allowlist" and participant not in members:
                    raise Problem(403, "You are not eligible for this study.")
            mine = [s for s in self.state.submissions.values() if s["study_id"] == study_id]
            if any(s["participant_id"] == participant for s in mine):
                raise Problem(400, "You already took part in this study.")
            taken = sum(s["status"] not in ("RETURNED", "TIMED-OUT") for s in mine)
            if taken >= study["total_available_places"]:
                raise Problem(400, "The study is full.")
            sid = self.new_id()
            self.state.submissions[sid] = {
                "id": sid,
                "study_id": study_id,
                "participant_id": participant,
                "status": "ACTIVE",
                "started_at": "2026-11-01T10:00:00Z",
                "completed_at": None,
                "entered_code": None,
            }
            return sid

    def set_status(self, submission_id: str, status: str) -> None:
        """Change a submission's status as Prolific would (RETURNED, TIMED-OUT...)."""
        with self.lock:
            self.state.submissions[submission_id]["status"] = status

    def complete(self, participant: str, code: str) -> tuple[int, str]:
        """The completion URL: the participant's active submission awaits review."""
        with self.lock:
            for s in self.state.submissions.values():
                study = self.state.studies[s["study_id"]]
                codes = [c["code"] for c in study["completion_codes"]]
                if s["participant_id"] == participant and s["status"] == "ACTIVE" and code in codes:
                    s.update(
                        status="AWAITING REVIEW",
                        entered_code=code,
                        completed_at="2026-11-01T10:10:00Z",
                    )
                    return 200, "Submission complete."
        return 400, "No active submission for this code."

    # --- the API -----------------------------------------------------------------------------

    def route(self, method: str, path: str, body: Any, query: dict[str, str]) -> tuple[int, Any]:
        self.state.calls.append((method, path))
        routes = [
            ("POST", r"/api/v1/participant-groups/", self.group_create),
            ("POST", r"/api/v1/participant-groups/(\w+)/participants/", self.group_add),
            ("DELETE", r"/api/v1/participant-groups/(\w+)/participants/", self.group_remove),
            ("POST", r"/api/v1/studies/", self.study_create),
            ("GET", r"/api/v1/studies/(\w+)/", self.study_get),
            ("PATCH", r"/api/v1/studies/(\w+)/", self.study_update),
            ("POST", r"/api/v1/studies/(\w+)/transition/", self.study_transition),
            ("GET", r"/api/v1/studies/(\w+)/submissions/", self.submissions_list),
            ("GET", r"/api/v1/submissions/(\w+)/", self.submission_get),
            ("POST", r"/api/v1/submissions/bulk-approve/", self.bulk_approve),
            ("POST", r"/api/v1/submissions/bonus-payments/", self.bonus_setup),
            ("POST", r"/api/v1/submissions/(\w+)/transition/", self.submission_transition),
            ("POST", r"/api/v1/bulk-bonus-payments/(\w+)/pay/", self.bonus_pay),
            ("POST", r"/api/v1/messages/", self.message),
        ]
        for verb, pattern, handler in routes:
            match = re.fullmatch(pattern, path)
            if verb == method and match:
                with self.lock:
                    return handler(body or {}, *match.groups(), query=query)
        raise Problem(404, f"No route {method} {path}")

    def group_create(self, body: dict[str, Any], query: dict[str, str]) -> tuple[int, Any]:
        _need(body, "name", str)
        if not (body.get("workspace_id") or body.get("organisation_id")):
            raise Problem(400, "Either a workspace or organisation ID must be specified.")
        gid = self.new_id()
        self.state.groups[gid] = {
            "id": gid,
            "name": body["name"],
            "members": set(body.get("participant_ids", [])),
        }
        return 201, {
            "id": gid,
            "name": body["name"],
            "workspace_id": body.get("workspace_id"),
            "participant_count": len(self.state.groups[gid]["members"]),
        }

    def group_add(self, body: dict[str, Any], gid: str, query: dict[str, str]) -> tuple[int, Any]:
        ids = _need(body, "participant_ids", list)
        self.state.groups[gid]["members"].update(ids)
        return 200, {
            "results": [{"participant_id": i} for i in sorted(self.state.groups[gid]["members"])]
        }

    def group_remove(
        self, body: dict[str, Any], gid: str, query: dict[str, str]
    ) -> tuple[int, Any]:
        ids = _need(body, "participant_ids", list)
        self.state.groups[gid]["members"].difference_update(ids)
        return 200, {
            "results": [{"participant_id": i} for i in sorted(self.state.groups[gid]["members"])]
        }

    def study_create(self, body: dict[str, Any], query: dict[str, str]) -> tuple[int, Any]:
        for name in ("name", "description", "external_study_url", "prolific_id_option"):
            _need(body, name, str)
        for name in ("total_available_places", "estimated_completion_time", "reward"):
            if _need(body, name, int) < 1:
                raise Problem(400, f"{name} must be at least 1")
        url = body["external_study_url"]
        if not url.startswith(("http://", "https://")) or not all(p in url for p in PLACEHOLDERS):
            raise Problem(400, "external_study_url must carry the three URL placeholders.")
        for code in _need(body, "completion_codes", list):
            if not {"code", "code_type", "actions"} <= set(code):
                raise Problem(400, "completion code needs code, code_type, actions")
        for f in body.get("filters", []):
            for gid in (
                f.get("selected_values", [])
                if f["filter_id"].startswith("participant_group")
                else []
            ):
                if gid not in self.state.groups:
                    raise Problem(400, f"Unknown participant group {gid}")
        sid = self.new_id()
        study = {**body, "id": sid, "status": "UNPUBLISHED", "filters": body.get("filters", [])}
        self.state.studies[sid] = study
        return 201, study

    def _study(self, sid: str) -> dict[str, Any]:
        if sid not in self.state.studies:
            raise Problem(404, "Study not found.")
        return self.state.studies[sid]

    def study_get(self, body: dict[str, Any], sid: str, query: dict[str, str]) -> tuple[int, Any]:
        return 200, self._study(sid)

    def study_update(
        self, body: dict[str, Any], sid: str, query: dict[str, str]
    ) -> tuple[int, Any]:
        study = self._study(sid)
        places = _need(body, "total_available_places", int)
        if places < study["total_available_places"]:
            raise Problem(400, "Places can only be increased.")
        study["total_available_places"] = places
        return 200, study

    def study_transition(
        self, body: dict[str, Any], sid: str, query: dict[str, str]
    ) -> tuple[int, Any]:
        study = self._study(sid)
        action = _need(body, "action", str)
        if action not in STUDY_ACTIONS or study["status"] not in STUDY_ACTIONS[action]:
            raise Problem(400, f"Cannot {action} a study that is {study['status']}.")
        study["status"] = {
            "PUBLISH": "ACTIVE",
            "PAUSE": "PAUSED",
            "START": "ACTIVE",
            "STOP": "AWAITING REVIEW",
        }[action]
        return 200, study

    def submissions_list(
        self, body: dict[str, Any], sid: str, query: dict[str, str]
    ) -> tuple[int, Any]:
        self._study(sid)
        rows = [s for s in self.state.submissions.values() if s["study_id"] == sid]
        page = int(query.get("page", "1"))
        chunk = rows[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]
        more = page * PAGE_SIZE < len(rows)
        href = f"{self.url}/api/v1/studies/{sid}/submissions/?page={page + 1}" if more else None
        return 200, {
            "results": chunk,
            "_links": {"next": {"href": href}},
            "meta": {"count": len(rows)},
        }

    def submission_get(
        self, body: dict[str, Any], sid: str, query: dict[str, str]
    ) -> tuple[int, Any]:
        if sid not in self.state.submissions:
            raise Problem(404, "Submission not found.")
        return 200, self.state.submissions[sid]

    def submission_transition(
        self, body: dict[str, Any], sid: str, query: dict[str, str]
    ) -> tuple[int, Any]:
        sub = self.state.submissions.get(sid)
        if sub is None:
            raise Problem(404, "Submission not found.")
        action = _need(body, "action", str)
        target = {"APPROVE": "APPROVED", "REJECT": "REJECTED"}.get(action)
        if target is None:
            raise Problem(400, f"Unknown action {action}")
        if action == "REJECT":
            if len(_need(body, "message", str)) < 100:
                raise Problem(400, "message: must be at least 100 characters")
            if body.get("rejection_category") not in CATEGORIES:
                raise Problem(400, "rejection_category: invalid")
        if sub["status"] == target:
            return 200, sub  # idempotent
        if sub["status"] != "AWAITING REVIEW":
            raise Problem(400, f"Cannot {action} a submission that is {sub['status']}.")
        sub["status"] = target
        return 200, sub

    def bulk_approve(self, body: dict[str, Any], query: dict[str, str]) -> tuple[int, Any]:
        for sid in _need(body, "submission_ids", list):
            self.submission_transition({"action": "APPROVE"}, sid, query)
        return 200, "The request to bulk approve has been made successfully."

    def bonus_setup(self, body: dict[str, Any], query: dict[str, str]) -> tuple[int, Any]:
        study = self._study(_need(body, "study_id", str))
        total = Decimal(0)
        for line in _need(body, "csv_bonuses", str).strip().splitlines():
            who, amount = line.split(",")
            if not any(
                s["study_id"] == study["id"] and who in (s["id"], s["participant_id"])
                for s in self.state.submissions.values()
            ):
                raise Problem(400, f"{who} did not take part in this study.")
            total += Decimal(amount)
        bid = self.new_id()
        cents = int(total * 100)
        fees = int(total * 100 * Decimal("0.43"))
        self.state.bonuses[bid] = {
            "id": bid,
            "study": study["id"],
            "amount": cents,
            "fees": fees,
            "total_amount": cents + fees,
            "csv": body["csv_bonuses"],
        }
        return 201, self.state.bonuses[bid]

    def bonus_pay(self, body: dict[str, Any], bid: str, query: dict[str, str]) -> tuple[int, Any]:
        if bid not in self.state.bonuses:
            raise Problem(404, "Bonus not found.")
        self.state.paid.append(self.state.bonuses[bid])  # not idempotent, like the real one
        return 202, "Bonus payments are being processed."

    def message(self, body: dict[str, Any], query: dict[str, str]) -> tuple[int, Any]:
        _need(body, "recipient_id", str)
        _need(body, "body", str)
        self.state.messages.append(body)
        return 201, None


class _Handler(BaseHTTPRequestHandler):
    fake: FakeProlific

    def log_message(self, *args: Any) -> None:
        pass

    def _reply(self, status: int, data: Any) -> None:
        raw = b"" if data is None else json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def _serve(self, method: str) -> None:
        url = urlparse(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        if url.path == "/submissions/complete":
            participant = (self.headers.get("Cookie") or "").removeprefix("participant=")
            status, text = self.fake.complete(participant, query.get("cc", ""))
            self._reply(status, {"detail": text})
            return
        try:
            if self.headers.get("Authorization") != f"Token {self.fake.token}":
                raise Problem(401, "Invalid token.")
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                raise Problem(400, "Body is not JSON.") from None
            status, data = self.fake.route(method, url.path, body, query)
            self._reply(status, data)
        except Problem as exc:
            self._reply(exc.status, {"error": {"detail": exc.detail}})

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_PATCH(self) -> None:
        self._serve("PATCH")

    def do_DELETE(self) -> None:
        self._serve("DELETE")
