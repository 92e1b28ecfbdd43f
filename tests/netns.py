"""Hosts for tests: Linux network namespaces on one bridge, each with its own address.

``Network`` makes a bridge in the root namespace (the test process's own address on it) and
one namespace per host joined to it by a veth pair: the hosts reach each other and the test
only over that network, as separate machines would. Every name starts with ``mh`` and a random
suffix; ``stale_remove`` deletes what a killed run left behind. Needs root and iproute2.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import signal
import subprocess
import uuid
from pathlib import Path

from tests.test_deploy import BIN, ROOT, Processes

SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
STALE = re.compile(r"^mh[0-9a-f]{4}(br|-\w+)$")


def ip(*args: str) -> str:
    """Run ``ip`` and return its output; a failure raises with ip's message."""
    done = subprocess.run(["ip", *args], capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def namespaces_available() -> str | None:
    """Return why this machine cannot make network namespaces, or None when it can."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    probe = f"mh{uuid.uuid4().hex[:4]}-probe"
    try:
        ip("netns", "add", probe)
        ip("netns", "del", probe)
    except (OSError, RuntimeError) as exc:
        return f"cannot make a network namespace: {exc}"
    return None


def _kill_namespace_processes(namespace: str) -> None:
    for pid in ip("netns", "pids", namespace).split():
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(pid), signal.SIGKILL)


def stale_remove() -> None:
    """Delete the namespaces (and their processes) and bridges of earlier runs."""
    for line in ip("netns", "list").splitlines():
        name = line.split()[0] if line.strip() else ""
        if STALE.match(name):
            _kill_namespace_processes(name)
            ip("netns", "del", name)
    for line in ip("-o", "link", "show", "type", "bridge").splitlines():
        name = line.split(":")[1].strip()
        if STALE.match(name):
            ip("link", "del", name)


class Network:
    """A bridge with the test's address (``.1``) and a namespace per host (``.2`` on)."""

    def __init__(self, hosts: list[str]) -> None:
        self.prefix = f"mh{uuid.uuid4().hex[:4]}"
        self.subnet = f"10.213.{random.randint(0, 255)}"
        self.bridge = f"{self.prefix}br"
        self.gateway = f"{self.subnet}.1"
        self.address = {host: f"{self.subnet}.{n}" for n, host in enumerate(hosts, start=2)}
        self.made: list[str] = []

    def namespace(self, host: str) -> str:
        return f"{self.prefix}-{host}"

    def up(self) -> None:
        ip("link", "add", self.bridge, "type", "bridge")
        ip("link", "set", self.bridge, "up")
        ip("addr", "add", f"{self.gateway}/24", "dev", self.bridge)
        for host, address in self.address.items():
            namespace = self.namespace(host)
            ip("netns", "add", namespace)
            self.made.append(namespace)
            ip("link", "add", namespace, "type", "veth", "peer", "name", "eth0", "netns", namespace)
            ip("link", "set", namespace, "master", self.bridge, "up")
            ip("-n", namespace, "addr", "add", f"{address}/24", "dev", "eth0")
            ip("-n", namespace, "link", "set", "eth0", "up")
            ip("-n", namespace, "link", "set", "lo", "up")

    def host_kill(self, host: str) -> None:
        """Take the host off the network and SIGKILL every process in it: a machine lost."""
        ip("link", "del", self.namespace(host))
        _kill_namespace_processes(self.namespace(host))

    def down(self) -> None:
        """Kill every process in the hosts and delete the namespaces and the bridge."""
        for namespace in self.made:
            _kill_namespace_processes(namespace)
            ip("netns", "del", namespace)
        self.made.clear()
        ip("link", "del", self.bridge)


class HostProcesses(Processes):
    """The stack's processes, each started inside its host's namespace."""

    def __init__(self, folder: Path, network: Network) -> None:
        super().__init__(folder)
        self.network = network

    def start_on(
        self, host: str, name: str, command: list[str], env: dict[str, str], user: str = ""
    ) -> subprocess.Popen:
        """Start ``command`` (``python`` and the venv's programs by name) on ``host``, as
        ``user`` when given; ``env`` without a ``PATH`` gets the system's."""
        program = command[0]
        if program == "python":
            program = str(BIN / "python")
        elif (BIN / program).exists():
            program = str(BIN / program)
        runner = ["runuser", "-u", user, "--"] if user else []
        namespace = self.network.namespace(host)
        with (self.folder / f"{name}.log").open("ab") as log:
            process = subprocess.Popen(
                ["ip", "netns", "exec", namespace, *runner, program, *command[1:]],
                cwd=ROOT,
                env={"PATH": SYSTEM_PATH, **env},
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.running[name] = process
        return process

    def reap(self) -> None:
        """Forget the processes (the namespaces' teardown killed them)."""
        for process in self.running.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        self.running.clear()
