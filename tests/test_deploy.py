"""The production topology of compose.yaml, run as plain processes (no container runtime here).

The `migrate`, `web`, `worker`, `inference`, `webhooks` and `beat` commands are read from
compose.yaml and started verbatim with the production environment it gives
(EVALSITE_PRODUCTION=true), pointed at the test's PostgreSQL and Redis: gunicorn with two
uvicorn worker processes behind one port, one Celery worker per queue, beat. Then a Likert
study runs end to end over HTTP (workers arrive by URL and answer until it is full, the report
job runs on the worker, the export downloads), a live chat with GenericBot runs over a real
websocket (bot turns on the `inference` worker), compose's healthchecks pass against the
running services (the workers' fails once they stop), and `/ready/` flips to 503 when the
broker it points at stops.
"""

from __future__ import annotations

import asyncio
import csv
import io
import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection

from annotation.models import Judgment, Utterance
from annotation.services import campaign_create, campaign_set_status, items_add
from dashboard.models import Job
from modelhub.services import endpoint_register

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
SERVICES = ("migrate", "web", "worker", "inference", "webhooks", "beat")
JOB_SUCCEEDED = re.compile(r"Task dashboard\.tasks\.job_run\[[^\]]+\] succeeded")

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def compose() -> dict:
    return yaml.safe_load((ROOT / "compose.yaml").read_text())


def interpolate(value: str, env: dict[str, str]) -> str:
    """Compose's ${VAR}, ${VAR:-default} and ${VAR:?error} (every required one must be set)."""

    def one(match: re.Match[str]) -> str:
        name, op, arg = match.group(1), match.group(2), match.group(3)
        if env.get(name):
            return env[name]
        assert op != ":?", f"compose.yaml requires {name}: {arg}"
        return arg if op == ":-" else ""

    return re.sub(r"\$\{(\w+)(?:(:-|:\?)([^}]*))?\}", one, value)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


class Processes:
    """The stack's processes, each in its own process group with a log file."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.running: dict[str, subprocess.Popen] = {}

    def start(self, name: str, command: list[str], env: dict[str, str]) -> subprocess.Popen:
        program = {"python": sys.executable}.get(command[0], str(BIN / command[0]))
        with (self.folder / f"{name}.log").open("ab") as log:
            process = subprocess.Popen(
                [program, *command[1:]],
                cwd=ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.running[name] = process
        return process

    def log(self, name: str) -> str:
        return (self.folder / f"{name}.log").read_text(errors="replace")

    def stop(self, name: str) -> None:
        process = self.running.pop(name)
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()

    def stop_all(self) -> None:
        for name in list(self.running):
            self.stop(name)


class Browser:
    """HTTP through a TLS-terminating proxy's eyes: X-Forwarded-Proto https, cookies kept by
    hand (the production cookies are Secure), redirects followed within the site."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.https = base.replace("http://", "https://")
        self.cookies: dict[str, str] = {}
        self.opener = urllib.request.build_opener(_NoRedirect)

    def request(self, path: str, data: dict | None = None) -> tuple[int, str, str]:
        for _ in range(5):
            headers = {"X-Forwarded-Proto": "https", "Referer": self.https + "/"}
            if data is not None:
                headers["Origin"] = self.https
            if self.cookies:
                headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
            body = urllib.parse.urlencode(data).encode() if data is not None else None
            request = urllib.request.Request(self.base + path, data=body, headers=headers)
            try:
                with self.opener.open(request, timeout=30) as response:
                    self._keep(response.headers)
                    return response.status, path, response.read().decode()
            except urllib.error.HTTPError as error:
                self._keep(error.headers)
                if error.code not in (301, 302, 303):
                    return error.code, path, error.read().decode(errors="replace")
                location = error.headers["Location"]
                path = urllib.parse.urlsplit(location)._replace(scheme="", netloc="").geturl()
                data = None
        raise AssertionError("too many redirects")

    def _keep(self, headers) -> None:
        for header in headers.get_all("Set-Cookie") or []:
            name, _, rest = header.partition("=")
            self.cookies[name.strip()] = rest.split(";", 1)[0]


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def get_json(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)
    except OSError:
        return 0, {}


def hidden(page: str, name: str) -> str:
    match = re.search(rf'name="{name}" value="([^"]*)"', page)
    assert match, f"no {name} in the page"
    return match.group(1)


@pytest.fixture
def stack(tmp_path) -> Iterator[tuple[str, Processes, dict[str, str]]]:
    from evalsite.celery import app

    app.control.purge()  # tasks earlier tests queued with no worker must not run here
    services = compose()["services"]
    db = connection.settings_dict
    port = free_port()
    given = {
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
        "POSTGRES_PASSWORD": "unused-here",
        "WEB_CONCURRENCY": "2",
    }
    local = {  # the compose hosts `postgres` and `redis` are this machine's
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
        "CELERY_RESULT_BACKEND": settings.CELERY_RESULT_BACKEND,
        "REDIS_URL": settings.REDIS_URL,
        "EVALSITE_DATA_DIR": str(tmp_path / "data"),
        # This run's cache keys (tests/environment.py): counters of earlier runs stay apart.
        "EVALSITE_CACHE_PREFIX": os.environ["EVALSITE_CACHE_PREFIX"],
        "EVALSITE_BIND": f"127.0.0.1:{port}",
        "FORWARDED_ALLOW_IPS": "127.0.0.1",
    }
    processes = Processes(tmp_path)
    base_env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "EVALSITE_"))}

    def env_of(name: str) -> dict[str, str]:
        environment = {
            k: interpolate(str(v), given) for k, v in services[name]["environment"].items()
        }
        return {**base_env, **environment, **local}

    try:
        migrate = processes.start("migrate", services["migrate"]["command"], env_of("migrate"))
        assert migrate.wait(timeout=120) == 0, processes.log("migrate")
        for name in SERVICES[1:]:
            command = [interpolate(str(part), given) for part in services[name]["command"]]
            if name == "beat":  # the data volume is this test's data folder
                schedule = command.index("/data/celerybeat-schedule")
                command[schedule] = local["EVALSITE_DATA_DIR"] + "/celerybeat-schedule"
            processes.start(name, command, env_of(name))
        base = f"http://127.0.0.1:{port}"
        wait_until(lambda: get_json(f"{base}/ready/")[0] == 200, 60, "the web server's /ready/")
        yield base, processes, env_of("web")
    finally:
        processes.stop_all()


def test_compose_names_the_stack_this_test_runs():
    services = compose()["services"]
    assert set(services) == {"postgres", "redis", *SERVICES, "vllm"}
    assert services["vllm"]["profiles"] == ["model"]  # optional
    for name in SERVICES:
        assert services[name]["environment"]["EVALSITE_PRODUCTION"] == "true"
    assert "gunicorn" in services["web"]["command"]
    assert services["worker"]["command"][services["worker"]["command"].index("-Q") + 1] == (
        "default"
    )
    assert services["inference"]["command"][services["inference"]["command"].index("-Q") + 1] == (
        "inference"
    )


def test_compose_builds_the_inference_worker_alone_with_the_ml_stack():
    services = compose()["services"]
    targets = {name: services[name]["build"]["target"] for name in SERVICES}
    assert targets == {**dict.fromkeys(SERVICES, "web"), "inference": "inference"}
    stages = re.findall(r"^FROM \S+ AS (\S+)$", (ROOT / "Dockerfile").read_text(), re.M)
    assert {"web", "inference"} <= set(stages) and stages[-1] == "web"  # the default build


def test_compose_gives_every_long_running_service_a_healthcheck_and_a_memory_limit():
    services = compose()["services"]
    for name in ("postgres", "redis", "web", "worker", "inference", "webhooks", "beat"):
        assert services[name]["healthcheck"]["test"], name
    for name in ("web", "worker", "inference", "webhooks", "beat"):
        assert re.fullmatch(r"\d+[mg]", services[name]["mem_limit"]), name


def healthcheck(name: str, env: dict[str, str], port: int) -> subprocess.CompletedProcess:
    """Run a service's compose healthcheck here as Docker runs it in its container: `$$` is
    compose's escaped `$`, HOSTNAME the container's host name, /data the data volume (this
    test's data folder) and 8000 the web port (this test's)."""
    kind, *test = compose()["services"][name]["healthcheck"]["test"]
    here = {"$$": "$", "/data": env["EVALSITE_DATA_DIR"], ":8000/": f":{port}/"}
    for old, new in here.items():
        test = [part.replace(old, new) for part in test]
    command = ["sh", "-c", *test] if kind == "CMD-SHELL" else test
    env = {**env, "HOSTNAME": socket.gethostname(), "PATH": f"{BIN}{os.pathsep}{env['PATH']}"}
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def test_compose_publishes_the_web_port_to_this_host_only_and_trusts_only_the_proxy():
    config = compose()
    web = config["services"]["web"]
    assert web["ports"] == ["127.0.0.1:8000:8000"]
    trusted = web["environment"]["FORWARDED_ALLOW_IPS"]
    assert "*" not in trusted and trusted.endswith("172.28.0.1}")
    gateway = config["networks"]["default"]["ipam"]["config"][0]["gateway"]
    assert gateway == "172.28.0.1"


def test_compose_pins_the_versions_of_the_images_it_pulls():
    pulled = [s["image"] for s in compose()["services"].values() if "build" not in s]
    assert len(pulled) == 3  # postgres, redis, vllm
    for image in pulled:
        tag = image.rpartition(":")[2]
        assert tag != "latest" and "." in tag, f"{image} floats"


@pytest.mark.postgres
@pytest.mark.broker
@pytest.mark.redis
def test_production_stack_runs_a_study_and_a_live_chat_end_to_end(stack, tmp_path):
    base, processes, web_env = stack
    # gunicorn runs two uvicorn worker processes behind the one port.
    wait_until(lambda: processes.log("web").count("Booting worker") >= 2, 30, "two web workers")
    status, body = get_json(f"{base}/ready/")
    assert status == 200 and set(body["checks"]) == {
        "database",
        "migrations",
        "broker",
        "channel_layer",
    }

    # A Likert study: 4 responses, 2 ratings each, 2 items per assignment.
    campaign = campaign_create(
        slug="deploy-likert",
        name="Deploy",
        protocol="likert",
        redundancy=2,
        items_per_assignment=2,
        controls={"open_links": True},  # the crowd below arrives with bare worker ids
    )
    items_add(
        campaign=campaign,
        items=[
            (f"ex{n}/m", {"context": ["Hi!"], "response": f"Hello {n}.", "model": "m"})
            for n in range(4)
        ],
    )
    campaign_set_status(campaign=campaign, status="live")
    answered = 0
    for n in range(6):
        worker = Browser(base)
        query = f"?workerId=crowd{n}"
        while True:
            status, _, page = worker.request(f"/task/deploy-likert/{query}")
            assert status == 200, page[:500]
            if 'name="token"' not in page:
                break
            keys = set(re.findall(r'type="radio" name="(\w+)"', page))
            answers = {key: "4" for key in keys}
            form = {"token": hidden(page, "token"), "item": hidden(page, "item"), **answers}
            status, _, page = worker.request(f"/task/deploy-likert/submit/{query}", form)
            assert status == 200, page[:500]
            answered += 1
    # 8 answered items, each with the three aspects: one judgment per aspect.
    assert answered == 8 and Judgment.objects.filter(item__campaign=campaign).count() == 24

    # The researcher: log in, run the report and the export on the Celery worker, download.
    get_user_model().objects.create_superuser("researcher", "r@example.org", "pw-deploy-test-1")
    researcher = Browser(base)
    researcher.request("/admin/login/")
    status, path, _ = researcher.request(
        "/admin/login/?next=/dashboard/",
        {
            "csrfmiddlewaretoken": researcher.cookies["csrftoken"],
            "username": "researcher",
            "password": "pw-deploy-test-1",
            "next": "/dashboard/",
        },
    )
    assert (status, path) == (200, "/dashboard/")
    files = {}
    jobs = (("report", {}), ("export", {"format": "csv", "what": "judgments"}))
    for number, (kind, extra) in enumerate(jobs, start=1):
        form = {"csrfmiddlewaretoken": researcher.cookies["csrftoken"], "kind": kind, **extra}
        status, _, _ = researcher.request("/dashboard/c/deploy-likert/jobs/", form)
        assert status == 200
        job = Job.objects.filter(campaign=campaign, kind=kind).latest("pk")

        def finished(job_id: int = job.pk) -> bool:
            code, _, text = researcher.request(f"/dashboard/c/deploy-likert/jobs/{job_id}/")
            files[job_id] = json.loads(text)
            return files[job_id]["status"] in ("done", "failed")

        wait_until(finished, 120, f"the {kind} job")
        assert files[job.pk]["status"] == "done", (files[job.pk], processes.log("worker")[-3000:])
        # It ran on the worker, not eagerly; the worker logs it once the task has returned,
        # a moment after the job was saved done.
        wait_until(
            lambda ran=number: len(JOB_SUCCEEDED.findall(processes.log("worker"))) >= ran,
            30,
            f"the worker's log of the {kind} job",
        )
        files[kind] = files[job.pk]["files"]
    csv_url = next(url for url in files["export"] if url.endswith(".csv"))
    status, _, text = researcher.request(csv_url)
    assert status == 200 and len(list(csv.DictReader(io.StringIO(text)))) == 24

    # A live chat with GenericBot over a real websocket; its turns run on `inference`.
    endpoint_register(name="generic-bot", backend="generic_bot")
    chat = campaign_create(
        slug="deploy-chat",
        name="Chat",
        protocol="ssa_interactive",
        parameters={"models": ["generic-bot"], "heartbeat_s": 30},
        controls={"open_links": True},
    )
    campaign_set_status(campaign=chat, status="live")
    status, _, page = Browser(base).request("/task/deploy-chat/?workerId=talker")
    path = re.search(r'data-ws-path="([^"]+)"', page).group(1).replace("&amp;", "&")
    # In a thread of its own: earlier tests (Playwright) may leave a loop running in this one.
    url = base.replace("http", "ws") + path
    with ThreadPoolExecutor(1) as pool:
        reply = pool.submit(asyncio.run, _chat(url)).result(timeout=120)
    assert reply == "I don't know."
    assert Utterance.objects.filter(dialogue__campaign=chat, speaker="bot").count() == 2
    assert "chat_bot_turn" in processes.log("inference")

    # compose's healthchecks pass against the running services; the workers' fails once they
    # stop (here all three answer to celery@<this host>, in their containers each to its own).
    port = int(base.rpartition(":")[2])
    for name in ("web", "worker", "inference", "webhooks"):
        result = healthcheck(name, web_env, port)
        assert result.returncode == 0, (name, result.stdout, result.stderr[-2000:])
    wait_until(lambda: healthcheck("beat", web_env, port).returncode == 0, 60, "beat's file")
    processes.stop("worker")
    processes.stop("inference")
    processes.stop("webhooks")
    assert healthcheck("worker", web_env, port).returncode != 0


async def _chat(url: str) -> str:
    import websockets

    origin = url.split("/ws/")[0].replace("ws://", "http://")
    async with websockets.connect(url, origin=origin, open_timeout=10) as socket_:

        async def frame(predicate) -> dict:
            while True:
                data = json.loads(await asyncio.wait_for(socket_.recv(), timeout=60))
                if predicate(data):
                    return data

        await frame(lambda f: f["type"] == "state")
        await socket_.send(json.dumps({"type": "message", "client_id": "t-1", "text": "How?"}))
        assert (await frame(lambda f: f["type"] in ("ack", "error")))["type"] == "ack"
        state = await frame(lambda f: f["type"] == "state" and f["needs_label"] is not None)
        return state["utterances"][-1]["text"]


@pytest.mark.postgres
@pytest.mark.broker
@pytest.mark.redis
def test_ready_flips_to_503_when_the_broker_stops(stack, tmp_path):
    base, processes, web_env = stack
    port, web_port = free_port(), free_port()
    redis = subprocess.Popen(
        [
            "redis-server",
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ],
        stdout=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        env = {
            **web_env,
            "CELERY_BROKER_URL": f"redis://127.0.0.1:{port}/0",
            "EVALSITE_BIND": f"127.0.0.1:{web_port}",
            "WEB_CONCURRENCY": "1",
        }
        processes.start("web-private-broker", compose()["services"]["web"]["command"], env)
        url = f"http://127.0.0.1:{web_port}/ready/"
        wait_until(lambda: get_json(url)[0] == 200, 60, "/ready/ with the private broker")
        redis.terminate()
        redis.wait(timeout=10)
        status, body = get_json(url)
        assert status == 503 and body["status"] == "unavailable"
        assert body["checks"]["broker"]["ok"] is False and body["checks"]["database"]["ok"]
    finally:
        if redis.poll() is None:
            redis.kill()
