"""The judges write no row themselves: the core's services write their raters, assignments and
judgments, and modelhub's its jobs (docs/architecture.md, who writes what)."""

from __future__ import annotations

import ast
from pathlib import Path

import judges

JUDGES = Path(judges.__file__).parent
OTHERS_MODELS = {"Judgment", "Assignment", "Worker", "GenerationJob"}
WRITES = {
    "create",
    "bulk_create",
    "update",
    "bulk_update",
    "get_or_create",
    "update_or_create",
    "delete",
    "save",
}


def _root(node: ast.expr) -> str | None:
    """Return the name a chain like ``Model.objects.filter(...).update`` starts from."""
    while isinstance(node, ast.Attribute | ast.Call | ast.Subscript):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def writes_in(source: str) -> list[str]:
    """Return the ORM writes in ``source``: a write method called on a chain that starts
    from one of those models (``Judgment.objects.bulk_create``, ``GenerationJob.objects
    .filter(...).update``), and any ``.save()`` or ``.delete()`` (an instance's)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        method = node.func.attr
        if method not in WRITES:
            continue
        if method in ("save", "delete") or _root(node.func.value) in OTHERS_MODELS:
            found.append(f"line {node.lineno}: {ast.unparse(node.func)}")
    return found


def test_the_scan_finds_each_kind_of_write():
    source = """
Judgment.objects.bulk_create(rows, ignore_conflicts=True)
GenerationJob.objects.filter(pk=1).exclude(status="done").update(status="failed")
Worker.objects.get_or_create(provider="model", external_id="x")
Assignment.objects.select_related("worker").get(pk=1).delete()
assignment.save(update_fields=["items_done"])
units.update({"a": 1})
Item.objects.in_bulk([1])
"""
    assert [line.split(": ")[1] for line in writes_in(source)] == [
        "Judgment.objects.bulk_create",
        "GenerationJob.objects.filter(pk=1).exclude(status='done').update",
        "Worker.objects.get_or_create",
        "Assignment.objects.select_related('worker').get(pk=1).delete",
        "assignment.save",
    ]


def test_the_judges_write_no_judgment_assignment_worker_or_job_themselves():
    modules = sorted(JUDGES.rglob("*.py"))
    assert any(m.name == "services.py" for m in modules)
    found = {
        str(m.relative_to(JUDGES)): writes
        for m in modules
        if (writes := writes_in(m.read_text(encoding="utf-8")))
    }
    assert found == {}
