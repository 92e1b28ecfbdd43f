"""Accessibility checks with axe-core in the browser tests.

axe-core comes from the npm registry, installed by `make install-dev` into `.cache/axe`, never
fetched from a CDN while the tests run. A test that calls these checks is marked ``axe``: on a
machine without axe-core it is skipped before it starts (tests/environment.py), never after
half its work.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.environment import AXE_JS

BLOCKING = ("critical", "serious")


def axe_violations(page: Any) -> list[dict[str, Any]]:
    """Return axe's violations on the page as it is now (every impact)."""
    if not AXE_JS.exists():
        pytest.fail(f"{AXE_JS} is absent: mark the test `axe` so that it is skipped at the start")
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        # Evaluated through DevTools, not added as a <script> tag, which the pages' CSP refuses.
        page.evaluate(AXE_JS.read_text() + "\n;undefined")
    result = page.evaluate("() => axe.run(document, {resultTypes: ['violations']})")
    return list(result["violations"])


def describe(violations: list[dict[str, Any]]) -> str:
    """Return the violations as lines a failing test can print: rule, impact, nodes."""
    lines = []
    for v in violations:
        targets = ", ".join(" ".join(n["target"]) for n in v["nodes"][:5])
        summary = v["nodes"][0].get("failureSummary", "").replace("\n", " ")
        lines.append(f"{v['id']} ({v['impact']}): {v['help']} — {targets} — {summary}")
    return "\n".join(lines)


def assert_accessible(page: Any, name: str) -> None:
    """Fail when axe finds a critical or serious violation on the page (``name`` says which)."""
    blocking = [v for v in axe_violations(page) if v["impact"] in BLOCKING]
    assert not blocking, f"axe on {name} ({page.url}):\n{describe(blocking)}"
