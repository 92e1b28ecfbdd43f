"""Generate the Python client (clients/python) from the schema the server publishes.

    .venv/bin/python clients/generate.py            # regenerate clients/python
    .venv/bin/python clients/generate.py OUTPUT     # write it elsewhere (the test compares)

The schema comes from ``manage.py openapi_schema`` (what /api/v1/openapi.json serves); the
client from openapi-python-client (pinned in requirements-dev.txt), formatted by its own
ruff hooks under clients/python/pyproject.toml's settings. The package imports nothing of
evalsite, Django or Celery: ``pip install ./clients/python`` needs httpx and attrs only.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "clients" / "openapi-python-client.yaml"
OUTPUT = ROOT / "clients" / "python"
COMMAND = ".venv/bin/python clients/generate.py"


def generate(output: Path) -> None:
    """Write the client generated from the current schema into ``output`` (replaced)."""
    bin_dir = str(Path(sys.executable).parent)  # the venv's openapi-python-client and ruff
    env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")}
    with tempfile.TemporaryDirectory() as tmp:
        schema = Path(tmp) / "openapi.json"
        subprocess.run(
            [sys.executable, str(ROOT / "manage.py"), "openapi_schema", "--output", str(schema)],
            check=True,
            env=env,
        )
        subprocess.run(
            [
                str(Path(bin_dir) / "openapi-python-client"),
                "generate",
                "--path",
                str(schema),
                "--config",
                str(CONFIG),
                "--meta",
                "setup",
                "--output-path",
                str(output),
                "--overwrite",
                "--fail-on-warning",
            ],
            check=True,
            env=env,
            stdout=subprocess.DEVNULL,
        )
    shutil.rmtree(output / ".ruff_cache", ignore_errors=True)  # left by the ruff hooks


if __name__ == "__main__":
    generate(Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else OUTPUT)
