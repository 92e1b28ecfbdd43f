"""Accessibility checks with axe-core in the browser tests.

axe-core comes from the npm registry, installed by CI (`.ci/run`) into `.cache/axe`, never
fetched from a CDN while the tests run. A local run without it skips the check with the
command that installs it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
AXE_JS = ROOT / ".cache" / "axe" / "node_modules" / "axe-core" / "axe.min.js"
INSTALL = "npm install --no-audit --no-fund --prefix .cache/axe axe-core@4.10.3"
BLOCKING = ("critical", "serious")


def axe_violations(page: Any) -> list[dict[str, Any]]:
    """Return axe's violations on the page as it is now (every impact)."""
    if not AXE_JS.exists():
        pytest.skip(f"axe-core is not installed (CI installs it: {INSTALL})")
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.add_script_tag(path=str(AXE_JS))
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
