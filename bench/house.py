"""The shape of the house, measured (issue 30): how the code splits into packages, how tangled
they are, and how big their modules and functions are.

Prints, for the checkout at ``--root`` (default: this one; give another clone, e.g. a
``git worktree`` of an older commit, to compare):
- lines of Python per top-level package (tests, bench and migrations left out) and each
  package's share;
- the entries at the root of ``annotation/`` (files and folders);
- the import cycles between packages (a package importing one that imports it back, at
  module level or inside a function);
- module-level imports of one top-level package by another, as a matrix of counts;
- modules over 500 lines and functions over 60 lines (argparse builders, ``add_arguments``,
  counted apart).

Run from the repository root: ``.venv/bin/python bench/house.py [--root PATH]``. No Django,
no database: it reads the source with ``ast``.
"""

from __future__ import annotations

import argparse
import ast
from collections import Counter, defaultdict
from pathlib import Path

SKIP = {"tests", "bench", "migrations", ".venv", "node_modules", "var", ".cache", "deploy"}
# evalsite is two things: infrastructure every app may use (settings, celery, errors, …) and
# the top of the layers (routes, the ASGI app, commands, the demo), counted apart.
TOP = ("evalsite.urls", "evalsite.asgi", "evalsite.wsgi", "evalsite.management", "evalsite.demo")


def _part(dotted: str) -> str:
    """The package a dotted module name counts under."""
    if dotted.startswith(TOP):
        return "evalsite-top"
    return dotted.split(".")[0]


def _packages(root: Path) -> list[str]:
    return sorted(
        p.name
        for p in root.iterdir()
        if p.is_dir() and (p / "__init__.py").exists() and p.name not in SKIP
    )


def _modules(root: Path, package: str) -> list[Path]:
    return [
        path
        for path in sorted((root / package).rglob("*.py"))
        if not SKIP & set(path.relative_to(root).parts)
    ]


def _imported(tree: ast.AST, packages: set[str]) -> tuple[list[str], list[str]]:
    """Top-level packages imported at module level and inside functions."""
    top, late = [], []
    scopes: list[ast.AST] = []

    def visit(node: ast.AST) -> None:
        inside = isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        if inside:
            scopes.append(node)
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [node.module]
        for name in names:
            if name.split(".")[0] in packages:
                (late if scopes else top).append(_part(name))
        for child in ast.iter_child_nodes(node):
            visit(child)
        if inside:
            scopes.pop()

    visit(tree)
    return top, late


def _sizes(path: Path, tree: ast.AST) -> tuple[int, list[tuple[str, int]]]:
    lines = len(path.read_text().splitlines())
    long = [
        (node.name, (node.end_lineno or node.lineno) - node.lineno + 1)
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and (node.end_lineno or node.lineno) - node.lineno + 1 > 60
    ]
    return lines, long


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1])
    root = parser.parse_args().root.resolve()
    found = _packages(root)
    packages = sorted({*found, "evalsite-top"} if "evalsite" in found else found)
    lines: Counter[str] = Counter()
    edges: dict[tuple[str, str], int] = defaultdict(int)
    late_edges: set[tuple[str, str]] = set()
    big, long_functions, builders = [], [], 0
    for path in (path for folder in found for path in _modules(root, folder)):
        package = _part(".".join(path.relative_to(root).with_suffix("").parts))
        tree = ast.parse(path.read_text())
        count, long = _sizes(path, tree)
        lines[package] += count
        if count > 500:
            big.append(f"{path.relative_to(root)} ({count})")
        for name, length in long:
            if name == "add_arguments":
                builders += 1
            else:
                long_functions.append(f"{path.relative_to(root)}::{name} ({length})")
        top, late = _imported(tree, set(found))
        for other in top:
            if other != package:
                edges[(package, other)] += 1
        late_edges |= {(package, other) for other in late if other != package}
    total = sum(lines.values())
    print(f"{'package':<14}{'lines':>8}{'share':>8}")
    for package, count in lines.most_common():
        print(f"{package:<14}{count:>8}{count / total:>8.1%}")
    print(f"{'all':<14}{total:>8}")
    entries = sorted(p.name for p in (root / "annotation").iterdir() if p.name != "__pycache__")
    print(f"\nannotation/ root entries: {len(entries)}")
    cycles = sorted(
        f"{a} <-> {b}"
        for a, b in set(edges) | late_edges
        if a < b and ((b, a) in edges or (b, a) in late_edges)
    )
    print(f"import cycles between packages: {len(cycles)}", *cycles, sep="\n  ")
    print("\nmodule-level imports (row imports column):")
    print(" " * 14 + "".join(f"{p[:9]:>10}" for p in packages))
    for a in packages:
        print(f"{a:<14}" + "".join(f"{edges.get((a, b), 0) or '.':>10}" for b in packages))
    print(f"\nmodules over 500 lines: {len(big)}", *big, sep="\n  ")
    print(
        f"functions over 60 lines: {len(long_functions)} (and {builders} add_arguments)",
        *long_functions,
        sep="\n  ",
    )


if __name__ == "__main__":
    main()
