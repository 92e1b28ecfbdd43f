"""Run the README's `make demo` as a newcomer would, without a browser, and check it serves.

Starts `make demo` (on a free port), waits until it says it is running and `/health/` answers,
then fetches every worker URL the demo printed and checks that it opens its study (the page's
heading is the study's name, or its training), not an end page ("No more items for you": the
simulated crowd must leave a newcomer room), then `/ready/`, the dashboard (redirected to the
login); logs in with the printed admin password, opens the dashboard's campaign list and every
campaign page the demo printed, each of which must show the report the demo built (not "No
report built yet"). Stops the demo in every case. Exit code 0 only when every check passed.
Standard library only: it runs before anything but `make` has installed anything.

    python3 .ci/demo_check.py [--timeout 1800]
"""

from __future__ import annotations

import argparse
import html
import http.cookiejar
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Demo:
    """`make demo` in its own process group; its output echoed and kept."""

    def __init__(self, port: int) -> None:
        self.lines: list[str] = []
        self.running = threading.Event()
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self.process = subprocess.Popen(
            ["make", "demo", f"DEMO_ARGS=--addrport 127.0.0.1:{port}"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))
            print(f"  demo| {line}", end="", flush=True)
            if "The demo is running" in line:
                self.running.set()

    def stop(self) -> None:
        if self.process.poll() is not None:
            return
        for sig, wait in ((signal.SIGINT, 15), (signal.SIGTERM, 10), (signal.SIGKILL, 5)):
            try:
                os.killpg(self.process.pid, sig)
            except ProcessLookupError:
                return
            try:
                self.process.wait(timeout=wait)
                return
            except subprocess.TimeoutExpired:
                continue


def fetch(opener: urllib.request.OpenerDirector, url: str, data: dict | None = None):
    body = urllib.parse.urlencode(data).encode() if data is not None else None
    request = urllib.request.Request(url, data=body, headers={"Referer": url})
    try:
        with opener.open(request, timeout=30) as response:
            return response.status, response.geturl(), response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as error:
        return error.code, url, error.read().decode("utf-8", "replace")


def wait_for_health(base: str, demo: Demo, deadline: float) -> None:
    while time.monotonic() < deadline:
        if demo.process.poll() is not None:
            raise SystemExit(f"make demo exited with {demo.process.returncode} before serving")
        try:
            with urllib.request.urlopen(f"{base}/health/", timeout=5) as response:
                if response.status == 200 and json.load(response) == {"status": "ok"}:
                    return
        except (OSError, ValueError):
            pass
        time.sleep(1)
    raise SystemExit("the demo server did not answer /health/ in time")


# What the demo prints per study: its name, its worker URL and its dashboard page.
STUDY = (
    r"^  (?P<name>.+):\n"
    r"    (?P<worker>{base}/task/[\w-]+/\?workerId=\w+)\n"
    r"    dashboard: (?P<dashboard>{base}/dashboard/c/[\w-]+/)$"
)
END_PAGES = ("No more items for you", "Thank you!")


def worker_page_problem(name: str, status: int, page: str) -> str | None:
    """Say why a worker URL does not open its study for a newcomer, or return None."""
    if status != 200:
        return f"HTTP {status}"
    heading = re.search(r"<h1[^>]*>(.*?)</h1>", page, re.S)
    shown = html.unescape(heading.group(1).strip()) if heading else ""
    if shown in END_PAGES:
        return f"an end page instead of an item: {shown!r}"
    if not shown.startswith(name):  # the study's page, its intro or its training
        return f"the page's heading is {shown!r}, not the study {name!r}"
    if "<form" not in page and "data-ws" not in page:
        return "no form to answer and no chat"
    return None


def dashboard_page_problem(status: int, page: str) -> str | None:
    """Say why a campaign's dashboard page does not show the report the demo built, or
    return None. The page always holds its stale-report banner, hidden while it is current."""
    if status != 200:
        return f"HTTP {status}"
    if "No report built yet" in page:
        return "No report built yet"
    banner = re.search(r'<p id="stale"([^>]*)>(.*?)</p>', page, re.S)
    if banner is not None and "hidden" not in banner.group(1):
        return " ".join(banner.group(2).split())
    return None


def check(base: str, demo: Demo) -> list[str]:
    """Return the failed checks (empty when all passed)."""
    failures: list[str] = []
    output = "\n".join(demo.lines)
    studies = [m.groupdict() for m in re.finditer(STUDY.format(base=re.escape(base)), output, re.M)]
    match = re.search(r"user: admin, password: (\S+)\)", output)
    if len(studies) < 7:
        failures.append(f"expected the demo to print 7 studies' URLs, found {len(studies)}")
    if match is None:
        failures.append("the demo printed no admin password")
    plain = urllib.request.build_opener()
    for study in studies:
        url = study["worker"].replace("workerId=you", "workerId=newcomer")
        status, _, page = fetch(plain, url)
        problem = worker_page_problem(study["name"], status, page)
        print(f"  {'ok ' if problem is None else 'BAD'} {status} {url} {problem or ''}")
        if problem is not None:
            failures.append(f"{url}: {problem}")
    status, _, body = fetch(plain, f"{base}/ready/")
    print(f"  {'ok ' if status == 200 else 'BAD'} {status} {base}/ready/ {body}")
    if status != 200:
        failures.append(f"/ready/: HTTP {status} {body}")

    jar = http.cookiejar.CookieJar()
    browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    status, final, _ = fetch(browser, f"{base}/dashboard/")
    redirected = status == 200 and "/admin/login/" in final
    print(f"  {'ok ' if redirected else 'BAD'} {status} {base}/dashboard/ -> {final}")
    if not redirected:
        failures.append(f"/dashboard/ did not lead to the login page ({status} {final})")
    if match is not None:
        token = next((c.value for c in jar if c.name == "csrftoken"), "")
        status, final, page = fetch(
            browser,
            f"{base}/admin/login/?next=/dashboard/",
            {
                "csrfmiddlewaretoken": token,
                "username": "admin",
                "password": match.group(1),
                "next": "/dashboard/",
            },
        )
        logged_in = status == 200 and final.endswith("/dashboard/") and "demo-likert" in page
        print(f"  {'ok ' if logged_in else 'BAD'} {status} login as admin -> {final}")
        if not logged_in:
            failures.append(f"logging in to the dashboard failed ({status} {final})")
        for study in studies if logged_in else []:
            status, _, page = fetch(browser, study["dashboard"])
            problem = dashboard_page_problem(status, page)
            print(f"  {'ok ' if problem is None else 'BAD'} {status} {study['dashboard']}")
            if problem is not None:
                failures.append(f"{study['dashboard']}: {problem}")
    return failures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--timeout", type=float, default=1800, help="seconds for the demo")
    args = parser.parse_args()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    demo = Demo(port)
    try:
        deadline = time.monotonic() + args.timeout
        while not demo.running.wait(timeout=1):
            if demo.process.poll() is not None:
                print(f"make demo exited with {demo.process.returncode} before serving")
                return 1
            if time.monotonic() > deadline:
                print("make demo did not start serving in time")
                return 1
        wait_for_health(base, demo, time.monotonic() + 60)
        failures = check(base, demo)
    finally:
        demo.stop()
    for failure in failures:
        print(f"FAILED: {failure}")
    print("demo check: " + ("passed" if not failures else f"{len(failures)} failed"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
