"""A thin Python client of evalsite's REST API (docs/api.md), for notebooks and pipelines.

    from evalsite.client import Client
    site = Client("https://evalsite.example.org", key="evs_…")
    site.campaign_create("study-1", "likert", settings={"reward": "0.50", "budget": "40"})

Each method is one request and returns the JSON answer; a 4xx raises ``ApiError`` with the
API's ``code``, ``message`` and ``field``. Requests that spend money (``bonus``,
``approve``) carry an ``Idempotency-Key`` (a fresh one unless given), and a failed
connection is retried with the same key, so a retry never pays twice. Needs httpx, which
the server does not import (requirements-dev.txt pins it).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx

RETRIES = 3


class ApiError(Exception):
    """A refusal of the API: its status, and the error body's code, message and field."""

    def __init__(self, status: int, code: str, message: str, field: str | None) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status, self.code, self.message, self.field = status, code, message, field


class Client:
    """One researcher's connection to an evalsite server (``url`` without /api/v1)."""

    def __init__(self, url: str, key: str, *, timeout: float = 60.0, transport: Any = None) -> None:
        self.http = httpx.Client(
            base_url=url.rstrip("/") + "/api/v1",
            headers={"Authorization": f"Bearer {key}"},
            timeout=timeout,
            transport=transport,
        )

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- plumbing ---------------------------------------------------------------------------

    def _call(self, method: str, path: str, *, idempotency_key: str = "", **kwargs: Any) -> Any:
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else {}
        for attempt in range(RETRIES if idempotency_key else 1):
            try:
                response = self.http.request(method, path, headers=headers, **kwargs)
                break
            except httpx.TransportError:
                if attempt + 1 >= (RETRIES if idempotency_key else 1):
                    raise
                time.sleep(0.5 * 2**attempt)
        if response.status_code >= 400:
            try:
                error = response.json()["error"]
            except (ValueError, KeyError, TypeError):
                error = {"code": "http_error", "message": response.text[:500], "field": None}
            raise ApiError(response.status_code, error["code"], error["message"], error["field"])
        return response.json()

    def _pages(self, path: str, params: Mapping[str, Any], key: str) -> Iterator[Any]:
        offset = 0
        while True:
            page = self._call("GET", path, params={**params, "limit": 500, "offset": offset})
            yield from page[key]
            offset += len(page[key])
            if not page[key] or offset >= page["count"]:
                return

    # --- campaigns --------------------------------------------------------------------------

    def campaigns(self, *, status: str | None = None, protocol: str | None = None) -> list[dict]:
        """Every campaign the key sees (all pages), newest first."""
        params = {k: v for k, v in {"status": status, "protocol": protocol}.items() if v}
        return list(self._pages("/campaigns", params, "results"))

    def campaign(self, slug: str) -> dict:
        return self._call("GET", f"/campaigns/{slug}")

    def campaign_create(
        self,
        slug: str,
        protocol: str,
        *,
        name: str = "",
        parameters: Mapping[str, Any] | None = None,
        settings: Mapping[str, Any] | None = None,
        study: Mapping[str, Any] | None = None,
    ) -> dict:
        """Create a draft with the protocol's published defaults, then these settings."""
        body = {
            "slug": slug,
            "protocol": protocol,
            "name": name,
            "parameters": dict(parameters or {}),
            "settings": dict(settings or {}),
            "study": dict(study or {}),
        }
        return self._call("POST", "/campaigns", json=body)

    def campaign_update(
        self,
        slug: str,
        *,
        settings: Mapping[str, Any] | None = None,
        parameters: Mapping[str, Any] | None = None,
        study: Mapping[str, Any] | None = None,
    ) -> dict:
        body: dict[str, Any] = {"settings": dict(settings or {})}
        if parameters is not None:
            body["parameters"] = dict(parameters)
        if study is not None:
            body["study"] = dict(study)
        return self._call("PATCH", f"/campaigns/{slug}", json=body)

    def status_set(self, slug: str, status: str) -> dict:
        """``live`` (launch a draft, resume), ``paused`` or ``finished`` (for good)."""
        return self._call("POST", f"/campaigns/{slug}/status", json={"status": status})

    def launch(self, slug: str) -> dict:
        return self.status_set(slug, "live")

    # --- items and progress -----------------------------------------------------------------

    def items_add(
        self, slug: str, items: Sequence[Mapping[str, Any]], *, batch: int = 10_000
    ) -> int:
        """Add items ``{"key", "payload"[, "gold", "attention"]}`` in batches; return how many
        were new. Each batch is all or nothing; a batch sent again adds nothing."""
        added = 0
        for start in range(0, len(items), batch):
            chunk = [dict(i) for i in items[start : start + batch]]
            added += self._call("POST", f"/campaigns/{slug}/items", json={"items": chunk})["added"]
        return added

    def items_upload(
        self, slug: str, *, models: Sequence[str] = (), max_turns: int = 3, **files: Path | str
    ) -> dict:
        """Upload files in the wizard's formats (``items=``, ``gold=``, ``contexts=``,
        ``responses=``) into a draft; answers ``jobs`` when models must answer first."""
        upload = {name: (Path(path).name, Path(path).read_bytes()) for name, path in files.items()}
        data = {"models": ",".join(models), "max_turns": str(max_turns)}
        return self._call("POST", f"/campaigns/{slug}/items/upload", files=upload, data=data)

    def progress(self, slug: str) -> dict:
        return self._call("GET", f"/campaigns/{slug}/progress")

    # --- jobs, reports, exports -------------------------------------------------------------

    def job(self, slug: str, job_id: int) -> dict:
        return self._call("GET", f"/campaigns/{slug}/jobs/{job_id}")

    def job_wait(self, slug: str, job: Mapping[str, Any], *, timeout: float = 600.0) -> dict:
        """Poll a job until it is done (or raise on failure or after ``timeout`` seconds)."""
        deadline, pause = time.monotonic() + timeout, 0.2
        status = dict(job)
        while status["status"] not in ("done", "failed"):
            if time.monotonic() > deadline:
                raise TimeoutError(f"Job {status['id']} is still {status['status']}.")
            time.sleep(pause)
            pause = min(pause * 1.5, 5.0)
            status = self.job(slug, status["id"])
        if status["status"] == "failed":
            raise RuntimeError(f"Job {status['id']} failed: {status['error']}")
        return status

    def report_build(self, slug: str, *, aggregate: str = "majority") -> dict:
        """Queue a report; ``aggregate`` combines an item's labels: majority, ds or mace."""
        return self._call("POST", f"/campaigns/{slug}/reports", params={"aggregate": aggregate})

    def report(self, slug: str) -> dict:
        """The latest report: tables (``columns``, ``rows``), figure URLs, notes."""
        return self._call("GET", f"/campaigns/{slug}/reports/latest")

    def export(self, slug: str, format: str, *, what: str = "judgments", **options: bool) -> dict:
        body = {"what": what, "format": format, **options}
        return self._call("POST", f"/campaigns/{slug}/exports", json=body)

    def download(self, url: str, to: Path | str) -> Path:
        """Save a job's file (a URL from ``files`` or ``figures``) to ``to``."""
        path = Path(to)
        with self.http.stream("GET", url) as response:
            if response.status_code >= 400:
                response.read()
                error = response.json()["error"]
                raise ApiError(response.status_code, error["code"], error["message"], None)
            with path.open("wb") as out:
                for chunk in response.iter_bytes():
                    out.write(chunk)
        return path

    # --- workers ----------------------------------------------------------------------------

    def workers(self, slug: str) -> list[dict]:
        """The latest report's worker-quality table, one dict per worker."""
        rows, columns, offset = [], [], 0
        while True:
            page = self._call(
                "GET", f"/campaigns/{slug}/workers", params={"limit": 500, "offset": offset}
            )
            columns = page["columns"]
            rows += page["rows"]
            offset += len(page["rows"])
            if not page["rows"] or offset >= page["count"]:
                return [dict(zip(columns, row, strict=True)) for row in rows]

    def worker_act(
        self,
        slug: str,
        pseudonym: str,
        action: str,
        *,
        reason: str = "",
        amount: str = "",
        idempotency_key: str = "",
    ) -> str:
        """approve, reject, soft_block, bonus, block or forget; return the summary."""
        if action in ("approve", "bonus") and not idempotency_key:
            idempotency_key = str(uuid.uuid4())
        path = f"/campaigns/{slug}/workers/{pseudonym}/{action}"
        body = {"reason": reason, "amount": amount}
        return self._call("POST", path, json=body, idempotency_key=idempotency_key)["summary"]

    def bonus(
        self, slug: str, pseudonym: str, amount: str, reason: str, *, idempotency_key: str = ""
    ) -> str:
        return self.worker_act(
            slug, pseudonym, "bonus", amount=amount, reason=reason, idempotency_key=idempotency_key
        )

    def approve(self, slug: str, pseudonyms: Sequence[str] | None = None) -> str:
        """Approve the submitted work of ``pseudonyms`` (None: everyone waiting)."""
        body = {"workers": list(pseudonyms) if pseudonyms is not None else None}
        path = f"/campaigns/{slug}/workers/approve"
        return self._call("POST", path, json=body, idempotency_key=str(uuid.uuid4()))["summary"]
