"""The house's sizes: no module over 500 lines, no function over 60 (STYLE.md, "Soft sizes").

A module past the limit becomes a package or splits by responsibility; a function past it
gives a named part to a function of its own. Lines are counted as ``str.splitlines`` counts
them, a function from its ``def`` to its last line (decorators apart); migrations are
generated and not counted, and a management command's ``add_arguments`` (one
``add_argument`` call per option, each with its help) may be as long as its options.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from tests.test_layers import PACKAGES

ROOT = Path(__file__).resolve().parent.parent
MODULE_LINES = 500
FUNCTION_LINES = 60
EXEMPT_FUNCTIONS = {"add_arguments"}


def _modules() -> Iterator[Path]:
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" not in path.relative_to(ROOT).parts:
                yield path


def _functions(tree: ast.AST, prefix: str = "") -> Iterator[tuple[str, int]]:
    """Yield (qualified name, lines) of every function, methods and nested ones included."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            assert node.end_lineno is not None
            yield f"{prefix}{node.name}", node.end_lineno - node.lineno + 1
            yield from _functions(node, f"{prefix}{node.name}.")
        elif isinstance(node, ast.ClassDef):
            yield from _functions(node, f"{prefix}{node.name}.")
        else:
            yield from _functions(node, prefix)


def _sizes_in(name: str, text: str) -> dict[str, tuple[int, int]]:
    """Return the module's and its functions' names → (lines, limit), exempt ones left out."""
    sizes = {name: (len(text.splitlines()), MODULE_LINES)}
    for function, lines in _functions(ast.parse(text)):
        if function.rsplit(".", 1)[-1] not in EXEMPT_FUNCTIONS:
            sizes[f"{name}::{function}"] = (lines, FUNCTION_LINES)
    return sizes


def _sizes() -> dict[str, tuple[int, int]]:
    """Return every module's and function's name → (lines, limit)."""
    sizes: dict[str, tuple[int, int]] = {}
    for path in _modules():
        sizes |= _sizes_in(str(path.relative_to(ROOT)), path.read_text())
    return sizes


def test_no_module_or_function_is_over_its_size():
    over = [
        f"{name}: {lines} lines (limit {limit})"
        for name, (lines, limit) in sorted(_sizes().items())
        if lines > limit
    ]
    assert not over, "over the house's sizes:\n" + "\n".join(over)


def test_the_count_names_a_long_method_and_exempts_add_arguments():
    body = "".join(f"        x = {i}\n" for i in range(FUNCTION_LINES))
    source = f"class A:\n    def long(self):\n{body}\n    def add_arguments(self, p):\n{body}"
    sizes = _sizes_in("m.py", source)
    assert sizes == {"m.py": (2 * FUNCTION_LINES + 4, MODULE_LINES), "m.py::A.long": (61, 60)}
