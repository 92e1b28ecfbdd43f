"""A fake MTurk requester endpoint on loopback, for boto3's real ``mturk`` client.

It speaks JSON 1.1 (``X-Amz-Target: MTurkRequesterServiceV20170117.<Operation>``), checks
every request against botocore's own service model for MTurk (operation names, required
members, unknown members, types, enums, lengths and ranges), keeps HITs, assignments,
bonuses, blocks and qualifications, and plays the worker's side: ``accept`` takes a HIT as a
worker (enforcing its qualification requirements and blocks) and ``/mturk/externalSubmit``
receives the worker page's final form post, as www.mturk.com does.
"""

from __future__ import annotations

import itertools
import json
import secrets
import threading
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

import botocore.session

TARGET_PREFIX = "MTurkRequesterServiceV20170117."
SYSTEM_QUALS = {"00000000000000000071", "000000000000000000L0", "00000000000000000040"}
MODEL = botocore.session.get_session().get_service_model("mturk")


class Refused(Exception):
    """An MTurk error: the server answers 400 with ``__type`` and ``Message``."""

    def __init__(self, message: str, kind: str = "RequestError") -> None:
        super().__init__(message)
        self.kind = kind


def validate(shape: Any, value: Any, path: str) -> list[str]:
    """Return what is wrong with ``value`` as the wire form of ``shape`` (JSON protocol)."""
    kind = shape.type_name
    meta = shape.metadata
    if kind == "structure":
        if not isinstance(value, dict):
            return [f"{path}: expected an object"]
        errors = [f"{path}.{m}: required" for m in shape.required_members if m not in value]
        for key, sub in value.items():
            if key not in shape.members:
                errors.append(f"{path}.{key}: unknown member")
            else:
                errors += validate(shape.members[key], sub, f"{path}.{key}")
        return errors
    if kind == "list":
        if not isinstance(value, list):
            return [f"{path}: expected a list"]
        errors = (
            [f"{path}: fewer than {meta['min']} items"] if len(value) < meta.get("min", 0) else []
        )
        for n, sub in enumerate(value):
            errors += validate(shape.member, sub, f"{path}[{n}]")
        return errors
    if kind == "string":
        if not isinstance(value, str):
            return [f"{path}: expected a string"]
        if shape.enum and value not in shape.enum:
            return [f"{path}: {value!r} not in {shape.enum}"]
        if not meta.get("min", 0) <= len(value) <= meta.get("max", 10**9):
            return [f"{path}: length {len(value)} out of range"]
        return []
    if kind in ("integer", "long"):
        if isinstance(value, bool) or not isinstance(value, int):
            return [f"{path}: expected an integer"]
        if not meta.get("min", -(10**18)) <= value <= meta.get("max", 10**18):
            return [f"{path}: {value} out of range"]
        return []
    if kind == "boolean":
        return [] if isinstance(value, bool) else [f"{path}: expected a boolean"]
    if kind in ("double", "float", "timestamp"):
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        return [] if ok else [f"{path}: expected a number"]
    return [f"{path}: unchecked type {kind}"]


@dataclass
class FakeWorker:
    """A worker's standing on the fake MTurk (what qualification requirements test)."""

    country: str = "US"
    percent_approved: int = 99
    number_approved: int = 5000


@dataclass
class State:
    """Everything the fake keeps."""

    hit_types: dict[str, dict[str, Any]] = field(default_factory=dict)
    hits: dict[str, dict[str, Any]] = field(default_factory=dict)
    assignments: dict[str, dict[str, Any]] = field(default_factory=dict)
    bonuses: list[dict[str, Any]] = field(default_factory=list)
    blocks: dict[str, str] = field(default_factory=dict)
    quals: dict[str, dict[str, Any]] = field(default_factory=dict)
    worker_quals: dict[tuple[str, str], int] = field(default_factory=dict)
    notifications: list[dict[str, Any]] = field(default_factory=list)
    tokens: set[str] = field(default_factory=set)
    workers: dict[str, FakeWorker] = field(default_factory=dict)
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    invalid: list[str] = field(default_factory=list)


class FakeMTurk:
    """The fake server: start it, point boto3's ``endpoint_url`` at ``url``, stop it."""

    def __init__(self, access_key: str = "AKIAFAKEFAKEFAKE0000") -> None:
        self.access_key = access_key
        self.state = State()
        self.lock = threading.Lock()
        self._ids = itertools.count(1)
        handler = type("Handler", (_Handler,), {"fake": self})
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def start(self) -> FakeMTurk:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def new_id(self, prefix: str) -> str:
        return f"{prefix}{next(self._ids):04d}{secrets.token_hex(8).upper()}"

    def ops(self) -> list[str]:
        """Return the names of the operations called so far."""
        return [op for op, _ in self.state.calls]

    # --- the worker's side --------------------------------------------------------------------

    def accept(self, hit_id: str, worker_id: str) -> str:
        """Take one assignment of the HIT as ``worker_id``; raise Refused like MTurk's UI would."""
        with self.lock:
            s = self.state
            hit = s.hits.get(hit_id)
            if hit is None or _hit_status(s, hit) != "Assignable":
                raise Refused(f"HIT {hit_id} is not available.")
            if worker_id in s.blocks:
                raise Refused("This requester has blocked you.")
            if any(
                a["HITId"] == hit_id and a["WorkerId"] == worker_id for a in s.assignments.values()
            ):
                raise Refused("You already worked on this HIT.")
            self._check_qualifications(hit, worker_id)
            aid = self.new_id("3A")
            s.assignments[aid] = {
                "AssignmentId": aid,
                "WorkerId": worker_id,
                "HITId": hit_id,
                "AssignmentStatus": "Accepted",
                "AcceptTime": time.time(),
                "Deadline": time.time() + hit["AssignmentDurationInSeconds"],
            }
            return aid

    def _check_qualifications(self, hit: dict[str, Any], worker_id: str) -> None:
        worker = self.state.workers.get(worker_id, FakeWorker())
        for req in hit["QualificationRequirements"]:
            qual, comparator = req["QualificationTypeId"], req["Comparator"]
            if qual == "00000000000000000071":
                ok = worker.country in [v["Country"] for v in req["LocaleValues"]]
            elif qual == "000000000000000000L0":
                ok = worker.percent_approved >= req["IntegerValues"][0]
            elif qual == "00000000000000000040":
                ok = worker.number_approved >= req["IntegerValues"][0]
            else:
                held = (qual, worker_id) in self.state.worker_quals
                ok = held if comparator == "Exists" else not held
            if not ok:
                raise Refused(f"You do not meet the qualification {qual} ({comparator}).")

    def return_assignment(self, assignment_id: str) -> None:
        """Return the assignment as the worker would (MTurk forgets it; the slot reopens)."""
        with self.lock:
            self.state.assignments[assignment_id]["AssignmentStatus"] = "Returned"

    def external_submit(self, form: dict[str, str]) -> tuple[int, str]:
        """Receive the worker page's form post; return (status, body)."""
        with self.lock:
            assignment = self.state.assignments.get(form.get("assignmentId", ""))
            if assignment is None or assignment["AssignmentStatus"] != "Accepted":
                return 400, "Unknown or already submitted assignment."
            assignment.update(
                AssignmentStatus="Submitted",
                SubmitTime=time.time(),
                Answer=json.dumps({k: v for k, v in form.items() if k != "assignmentId"}),
                AutoApprovalTime=time.time() + 3 * 86400,
            )
            return 200, "<html><body>Your HIT was submitted.</body></html>"

    # --- the requester API ---------------------------------------------------------------------

    def handle(self, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        """Run one API operation on the state (under the lock)."""
        try:
            model = MODEL.operation_model(operation)
        except Exception:
            raise Refused(f"Unknown operation {operation}", "UnknownOperationException") from None
        errors = validate(model.input_shape, params, operation)
        if errors:
            self.state.invalid += errors
            raise Refused("; ".join(errors), "ValidationException")
        self.state.calls.append((operation, params))
        method = getattr(_Ops, operation, None)
        if method is None:
            raise Refused(f"The fake does not implement {operation}", "ServiceFault")
        with self.lock:
            return method(self, params)


def _hit_status(s: State, hit: dict[str, Any]) -> str:
    taken = [
        a
        for a in s.assignments.values()
        if a["HITId"] == hit["HITId"] and a["AssignmentStatus"] != "Returned"
    ]
    pending = [a for a in taken if a["AssignmentStatus"] == "Accepted"]
    if hit["Expiration"] > time.time() and len(taken) < hit["MaxAssignments"]:
        return "Assignable"
    return "Unassignable" if pending else "Reviewable"


def _token(fake: FakeMTurk, params: dict[str, Any]) -> None:
    token = params.get("UniqueRequestToken")
    if token is None:
        return
    if token in fake.state.tokens:
        raise Refused(f"The UniqueRequestToken {token} has already been used.")
    fake.state.tokens.add(token)


class _Ops:
    """One static method per implemented operation: (fake, params) -> response."""

    @staticmethod
    def CreateQualificationType(fake: FakeMTurk, p: dict[str, Any]) -> dict[str, Any]:
        if any(q["Name"] == p["Name"] for q in fake.state.quals.values()):
            raise Refused(f"You have already created a QualificationType named {p['Name']}.")
        qid = fake.new_id("3Q")
        fake.state.quals[qid] = {"QualificationTypeId": qid, **p, "CreationTime": time.time()}
        return {"QualificationType": fake.state.quals[qid]}

    @staticmethod
    def AssociateQualificationWithWorker(fake: FakeMTurk, p: dict[str, Any]) -> dict[str, Any]:
        if p["QualificationTypeId"] not in fake.state.quals:
            raise Refused("Unknown QualificationTypeId.")
        fake.state.worker_quals[p["QualificationTypeId"], p["WorkerId"]] = p.get("IntegerValue", 1)
        return {}

    @staticmethod
    def CreateHITType(fake: FakeMTurk, p: dict[str, Any]) -> dict[str, Any]:
        for req in p.get("QualificationRequirements", []):
            if req["QualificationTypeId"] not in SYSTEM_QUALS | set(fake.state.quals):
                raise Refused(f"Unknown QualificationTypeId {req['QualificationTypeId']}.")
        Decimal(p["Reward"])  # a malformed amount fails here
        tid = fake.new_id("3T")
        fake.state.hit_types[tid] = {"HITTypeId": tid, **p}
        return {"HITTypeId": tid}

    @staticmethod
    def CreateHITWithHITType(fake: FakeMTurk, p: dict[str, Any]) -> dict[str, Any]:
        hit_type = fake.state.hit_types.get(p["HITTypeId"])
        if hit_type is None:
            raise Refused("Unknown HITTypeId.")
        root = ET.fromstring(p.get("Question", ""))
        ns = "{http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/2006-07-14/ExternalQuestion.xsd}"
        if root.tag != f"{ns}ExternalQuestion" or root.find(f"{ns}ExternalURL") is None:
            raise Refused("Question must be an ExternalQuestion with an ExternalURL.")
        if root.find(f"{ns}FrameHeight") is None:
            raise Refused("ExternalQuestion needs a FrameHeight.")
        _token(fake, p)
        hid = fake.new_id("3H")
        fake.state.hits[hid] = {
            "HITId": hid,
            "HITTypeId": p["HITTypeId"],
            "HITGroupId": p["HITTypeId"],
            "CreationTime": time.time(),
            "Title": hit_type["Title"],
            "Description": hit_type["Description"],
            "Question": p["Question"],
            "ExternalURL": root.find(f"{ns}ExternalURL").text,
            "Keywords": hit_type.get("Keywords", ""),
            "MaxAssignments": p.get("MaxAssignments", 1),
            "Reward": hit_type["Reward"],
            "AutoApprovalDelayInSeconds": hit_type.get("AutoApprovalDelayInSeconds", 2592000),
            "Expiration": time.time() + p["LifetimeInSeconds"],
            "AssignmentDurationInSeconds": hit_type["AssignmentDurationInSeconds"],
            "QualificationRequirements": hit_type.get("QualificationRequirements", []),
            "RequesterAnnotation": p.get("RequesterAnnotation", ""),
        }
        return {"HIT": _ops_hit(fake, hid)}

    @staticmethod
    def GetHIT(fake: FakeMTurk, p: dict[str, Any]) -> dict[str, Any]:
        if p["HITId"] not in fake.state.hits:
            raise Refused(f"Hit {p['HITId']} does not exist.")
        return {"HIT": _ops_hit(fake, p["HITId"])}

    @staticmethod
    def UpdateExpirationForHIT(fake: FakeMTurk, p: dict[str, Any]) -> dict[str, Any]:
        if p["HITId"] not in fake.state.hits:
            raise Refused(f"Hit {p['HITId']} does not exist.")
        fake.state.hits[p["HITId"]]["Expiration"] = float(p["ExpireAt"])
        return {}

    @staticmethod
    def CreateAdditionalAssignmentsForHIT(fake: FakeMTurk, p: dict[str, Any]) -> dict[str, Any]:
        hit = fake.state.hits.get(p["HITId"])
        if hit is None:
            raise Refused(f"Hit {p['HITId']} does not exist.")
        new = hit["MaxAssignments"] + p["NumberOfAdditionalAssignments"]
        if hit["MaxAssignments"] < 10 <= new:
            raise Refused("A HIT created with fewer than 10 assignments cannot reach 10.")
        _token(fake, p)
        hit["MaxAssignments"] = new
        return {}

    @staticmethod
    def ListAssignmentsForHIT(fake: FakeMTurk, p: dict[str, Any]) -> dict[str, Any]:
        statuses = p.get("AssignmentStatuses") or ["Submitted", "Approved", "Rejected"]
        found = [
            _public(a)
            for a in fake.state.assignments.values()
            if a["HITId"] == p["HITId"] and a["AssignmentStatus"] in statuses
        ]
        start = int(p.get("NextToken") or 0)
        size = p.get("MaxResults", 10)
        page = found[start : start + size]
        out: dict[str, Any] = {"NumResults": len(page), "Assignments": page}
        if start + size < len(found):
            out["NextToken"] = str(start + size)
        return out

    @staticmethod
    def GetAssignment(fake: FakeMTurk, p: dict[str, Any]) -> dict[str, Any]:
        a = fake.state.assignments.get(p["AssignmentId"])
        if a is None or a["AssignmentStatus"] not in ("Submitted", "Approved", "Rejected"):
            raise Refused(f"Assignment {p['AssignmentId']} does not exist or is not submitted.")
        return {"Assignment": _public(a), "HIT": _ops_hit(fake, a["HITId"])}

    @staticmethod
    def ApproveAssignment(fake: FakeMTurk, p: dict[str, Any]) -> dict[str, Any]:
        a = fake.state.assignments.get(p["AssignmentId"])
        allowed = ("Submitted", "Rejected") if p.get("OverrideRejection") else ("Submitted",)
        if a is None or a["AssignmentStatus"] not in allowed:
            raise Refused("This operation can be called with a status of: Submitted")
        a.update(
            AssignmentStatus="Approved",
            ApprovalTime=time.time(),
            RequesterFeedback=p.get("RequesterFeedback", ""),
        )
        return {}

    @staticmethod
    def RejectAssignment(fake: FakeMTurk, p: dict[str, Any]) -> dict[str, Any]:
        a = fake.state.assignments.get(p["AssignmentId"])
        if a is None or a["AssignmentStatus"] != "Submitted":
            raise Refused("This operation can be called with a status of: Submitted")
        a.update(
            AssignmentStatus="Rejected",
            RejectionTime=time.time(),
            RequesterFeedback=p["RequesterFeedback"],
        )
        return {}

    @staticmethod
    def SendBonus(fake: FakeMTurk, p: dict[str, Any]) -> dict[str, Any]:
        a = fake.state.assignments.get(p["AssignmentId"])
        if a is None or a["WorkerId"] != p["WorkerId"]:
            raise Refused("The assignment is not this worker's.")
        if a["AssignmentStatus"] not in ("Submitted", "Approved"):
            raise Refused("A bonus needs a submitted or approved assignment.")
        if Decimal(p["BonusAmount"]) <= 0:
            raise Refused("BonusAmount must be positive.")
        _token(fake, p)
        fake.state.bonuses.append({**p, "GrantTime": time.time()})
        return {}

    @staticmethod
    def ListBonusPayments(fake: FakeMTurk, p: dict[str, Any]) -> dict[str, Any]:
        found = [
            {k: b[k] for k in ("WorkerId", "BonusAmount", "AssignmentId", "Reason", "GrantTime")}
            for b in fake.state.bonuses
            if b["AssignmentId"] == p.get("AssignmentId")
        ]
        return {"NumResults": len(found), "BonusPayments": found}

    @staticmethod
    def CreateWorkerBlock(fake: FakeMTurk, p: dict[str, Any]) -> dict[str, Any]:
        fake.state.blocks[p["WorkerId"]] = p["Reason"]
        return {}

    @staticmethod
    def DeleteWorkerBlock(fake: FakeMTurk, p: dict[str, Any]) -> dict[str, Any]:
        fake.state.blocks.pop(p["WorkerId"], None)
        return {}

    @staticmethod
    def NotifyWorkers(fake: FakeMTurk, p: dict[str, Any]) -> dict[str, Any]:
        fake.state.notifications.append(p)
        return {"NotifyWorkersFailureStatuses": []}


def _public(a: dict[str, Any]) -> dict[str, Any]:
    keys = (
        "AssignmentId",
        "WorkerId",
        "HITId",
        "AssignmentStatus",
        "AcceptTime",
        "SubmitTime",
        "ApprovalTime",
        "RejectionTime",
        "AutoApprovalTime",
        "Deadline",
        "Answer",
        "RequesterFeedback",
    )
    return {k: a[k] for k in keys if k in a}


def _ops_hit(fake: FakeMTurk, hit_id: str) -> dict[str, Any]:
    hit = dict(fake.state.hits[hit_id])
    mine = [a for a in fake.state.assignments.values() if a["HITId"] == hit_id]
    pending = sum(a["AssignmentStatus"] == "Accepted" for a in mine)
    done = sum(a["AssignmentStatus"] in ("Submitted", "Approved", "Rejected") for a in mine)
    hit.pop("ExternalURL")
    hit.update(
        HITStatus=_hit_status(fake.state, hit),
        NumberOfAssignmentsPending=pending,
        NumberOfAssignmentsCompleted=done,
        NumberOfAssignmentsAvailable=max(hit["MaxAssignments"] - pending - done, 0),
    )
    return hit


class _Handler(BaseHTTPRequestHandler):
    fake: FakeMTurk

    def log_message(self, *args: Any) -> None:  # keep test output quiet
        pass

    def _reply(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if self.path.rstrip("/") == "/mturk/externalSubmit":
            form = {k: v[0] for k, v in parse_qs(raw.decode()).items()}
            status, text = self.fake.external_submit(form)
            self._reply(status, text.encode(), "text/html")
            return
        target = self.headers.get("X-Amz-Target", "")
        auth = self.headers.get("Authorization", "")
        try:
            if not auth.startswith(f"AWS4-HMAC-SHA256 Credential={self.fake.access_key}/"):
                raise Refused(
                    "The security token included in the request is invalid.",
                    "UnrecognizedClientException",
                )
            if not target.startswith(TARGET_PREFIX):
                raise Refused(f"Bad X-Amz-Target {target!r}", "UnknownOperationException")
            if self.headers.get("Content-Type") != "application/x-amz-json-1.1":
                raise Refused(
                    "Content-Type must be application/x-amz-json-1.1", "SerializationException"
                )
            result = self.fake.handle(target[len(TARGET_PREFIX) :], json.loads(raw or b"{}"))
            self._reply(200, json.dumps(result).encode(), "application/x-amz-json-1.1")
        except Refused as exc:
            body = json.dumps({"__type": exc.kind, "Message": str(exc)}).encode()
            self._reply(400, body, "application/x-amz-json-1.1")
