"""The committed Python client (clients/python) is the one the current schema generates."""

from __future__ import annotations

import filecmp
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = ROOT / "clients" / "python"
REGENERATE = ".venv/bin/python clients/generate.py"


def _files(folder: Path) -> set[str]:
    """The files of a client folder that git keeps (not caches or build output)."""
    return {
        str(path.relative_to(folder))
        for path in folder.rglob("*")
        if path.is_file()
        and not {"__pycache__", "build", ".ruff_cache"} & set(path.parts)
        and ".egg-info" not in str(path)
    }


@pytest.mark.slow
def test_the_committed_client_is_the_one_the_schema_generates(tmp_path) -> None:
    fresh = tmp_path / "python"
    subprocess.run([sys.executable, str(ROOT / "clients" / "generate.py"), str(fresh)], check=True)
    committed, generated = _files(COMMITTED), _files(fresh)
    differing = sorted(
        (committed ^ generated)
        | {
            name
            for name in committed & generated
            if not filecmp.cmp(COMMITTED / name, fresh / name, shallow=False)
        }
    )
    assert not differing, (
        f"clients/python is not the client the API's schema generates ({len(differing)} files "
        f"differ, e.g. {', '.join(differing[:5])}); regenerate it: {REGENERATE}"
    )


def test_the_client_imports_nothing_of_evalsite_django_or_celery() -> None:
    """A user installs it alone: its modules name no package of the server."""
    server = ("django", "celery", "ninja", "evalsite", "annotation", "dashboard", "api.")
    imports = [
        f"{path.relative_to(COMMITTED)}: {line.strip()}"
        for path in COMMITTED.rglob("*.py")
        for line in path.read_text().splitlines()
        if line.lstrip().startswith(("import ", "from "))
        and line.split()[1].lstrip(".").startswith(server)
    ]
    assert imports == []
