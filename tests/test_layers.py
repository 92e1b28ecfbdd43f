"""The house's rules, checked: the import contracts in .importlinter hold, no import inside a
function closes an import cycle, and every model is written only by the modules that own it
(docs/architecture.md, "Layers" and "Who writes what")."""

from __future__ import annotations

import ast
import configparser
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.apps import apps

ROOT = Path(__file__).resolve().parent.parent


def _packages() -> tuple[str, ...]:
    """The project's packages: .importlinter's root packages (one list for every house test)."""
    config = configparser.ConfigParser()
    config.read(ROOT / ".importlinter")
    return tuple(config["importlinter"]["root_packages"].split())


PACKAGES = _packages()
# Calls that write rows through a model's manager or queryset.
WRITES = {"create", "bulk_create", "update", "bulk_update", "get_or_create", "update_or_create"}
WRITES |= {"delete"}


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            parts = path.relative_to(ROOT).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


MODULES = _modules()


def _resolve(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imported(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> list[str]:
    """The project modules an import statement loads (``from a import b``: a.b if a module)."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            parts = module.split(".")
            parts = parts[: len(parts) - node.level + (1 if is_package else 0)]
            base = ".".join([*parts, base] if base else parts)
        names = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
    return [m for m in map(_resolve, names) if m and m.split(".")[0] in PACKAGES]


def _imports() -> tuple[dict[str, set[str]], list[tuple[str, str, int]]]:
    """Module-level imports per module (TYPE_CHECKING blocks left out, a package's parents
    included), and the imports inside functions as (importer, imported, line)."""
    top: dict[str, set[str]] = {}
    late: list[tuple[str, str, int]] = []
    for module, path in MODULES.items():
        is_package = path.name == "__init__.py"
        top[module] = set()

        def walk(
            node: ast.AST, in_function: bool, module: str = module, is_package: bool = is_package
        ) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                    walk(child, True)
                elif isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                    continue
                elif isinstance(child, ast.Import | ast.ImportFrom):
                    for target in _imported(child, module, is_package):
                        if in_function:
                            late.append((module, target, child.lineno))
                        else:
                            top[module].add(target)
                else:
                    walk(child, in_function)

        walk(ast.parse(path.read_text()), False)
    for targets in top.values():
        for target in list(targets):
            parts = target.split(".")
            targets.update(".".join(parts[:i]) for i in range(1, len(parts)))
    return top, late


def _reaches(top: dict[str, set[str]], start: str, goal: str) -> bool:
    seen, stack = set(), [start]
    while stack:
        module = stack.pop()
        if module == goal:
            return True
        if module not in seen:
            seen.add(module)
            stack.extend(top.get(module, ()))
    return False


def test_the_import_contracts_hold() -> None:
    linter = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run(
        [str(linter), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "BROKEN" not in result.stdout


def test_no_import_inside_a_function_closes_a_cycle() -> None:
    top, late = _imports()
    assert late, "the scan found no function-level import at all: it is broken"
    cycles = [
        f"{MODULES[a].relative_to(ROOT)}:{line} imports {b}, which imports {a}"
        for a, b, line in late
        if _reaches(top, b, a)
    ]
    assert not cycles, "\n".join(cycles)


def test_the_cycle_check_finds_a_cycle() -> None:
    """The check above can fail: a late import back into a module's importer is found."""
    top = {"a": {"b"}, "b": set()}
    assert _reaches(top, "a", "b")
    assert not _reaches(top, "b", "a")


def _writes(path: Path) -> Iterator[tuple[str, str, int]]:
    """(model name, write method, line) for each ``Model.objects…<write>(…)`` in the file."""
    for node in ast.walk(ast.parse(path.read_text())):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr not in WRITES:
            continue
        current: ast.AST = node.func.value
        while isinstance(current, ast.Attribute | ast.Call):
            if (
                isinstance(current, ast.Attribute)
                and current.attr == "objects"
                and isinstance(current.value, ast.Name)
            ):
                yield current.value.id, node.func.attr, node.lineno
                break
            current = current.func if isinstance(current, ast.Call) else current.value


@pytest.mark.django_db(databases=[])
def test_each_model_is_written_only_by_its_own_app() -> None:
    owners = {model.__name__: model._meta.app_config.name for model in apps.get_models()}
    found, foreign = 0, []
    for module, path in MODULES.items():
        for model, method, line in _writes(path):
            if model not in owners:
                continue
            found += 1
            if owners[model] != module.split(".")[0]:
                foreign.append(f"{path.relative_to(ROOT)}:{line} {model}.{method}")
    assert found > 50, "the scan found too few writes: it is broken"
    assert not foreign, "\n".join(foreign)


# Inside annotation, who writes which rows: the parts the docs name (docs/architecture.md,
# "Who writes what"), each a module prefix. Live chats (through the core's dialogue services)
# and data set imports both write dialogues: the one overlap.
CORE = (
    "annotation.services",
    "annotation.allocation",  # the counters judged/claims and leases (their one owner)
    "annotation.quality",  # soft blocks (Participation)
    "annotation.tallies",
)
WRITERS: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(
        ("Campaign", "Item", "Lease", "Worker", "Participation", "Consent", "Assignment"),
        CORE,
    ),
    **dict.fromkeys(("Judgment", "AuditLog", "CampaignTally"), CORE),
    **dict.fromkeys(("TrainingItem", "TrainingAttempt", "TrainingAnswer", "Qualification"), CORE),
    **dict.fromkeys(
        ("Dialogue", "Situation", "Utterance"),
        ("annotation.services", "annotation.services.datasets"),
    ),
    "Dataset": ("annotation.services.datasets",),
    "WorkerBlock": ("annotation.services",),
}


@pytest.mark.django_db(databases=[])
def test_inside_annotation_each_part_writes_only_its_own_rows() -> None:
    models = {m.__name__ for m in apps.get_app_config("annotation").get_models()}
    assert models == set(WRITERS), "a model of annotation has no writer in WRITERS"
    found, elsewhere = 0, []
    for module, path in MODULES.items():
        if module.split(".")[0] != "annotation":
            continue
        for model, method, line in _writes(path):
            if model in WRITERS:
                found += 1
                if not module.startswith(WRITERS[model]):
                    elsewhere.append(f"{path.relative_to(ROOT)}:{line} {model}.{method}")
    assert found > 40, "the scan found too few writes: it is broken"
    assert not elsewhere, "\n".join(elsewhere)


def test_the_architecture_map_names_every_package_and_every_part_of_the_core() -> None:
    """docs/architecture.md's map ("Apps and modules") matches the folders: each package of
    .importlinter has its entry, and so does each module and folder at annotation's root."""
    doc = (ROOT / "docs" / "architecture.md").read_text()
    atlas = doc[doc.index("## Apps and modules") : doc.index("## Layers")]
    conventional = {"__init__.py", "apps.py", "migrations", "__pycache__"}
    missing = [f"{package}/" for package in PACKAGES if f"\n{package}/" not in atlas]
    missing += [
        f"annotation/{entry.name}"
        for entry in sorted((ROOT / "annotation").iterdir())
        if entry.name not in conventional
        and (entry.name + ("/" if entry.is_dir() else "")) not in atlas
    ]
    assert not missing, "not in docs/architecture.md's map: " + ", ".join(missing)
