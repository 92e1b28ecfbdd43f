"""The site spread over six hosts with no shared folder, as a production cluster runs it.

Each host is a network namespace on one bridge (tests/netns.py), with its own address and its
own ``EVALSITE_DATA_DIR``: ``db`` runs a private PostgreSQL cluster, Redis and an S3 server
(moto) as the object store; ``web1`` and ``web2`` the compose ``web`` command; ``work1`` and
``work2`` the ``worker -Q default`` command; ``inf`` the ``inference`` worker beside an
OpenAI-compatible model server. The test process is the TLS proxy in front, on the bridge.
A Likert study is answered through web1, its report and export are asked on web1, built on a
worker host and downloaded from web2; a live bot chat runs over web2's websocket with its turns
on ``inf``; then the worker host running a report is lost mid-job (off the network, every
process SIGKILLed) and the other worker host finishes it, with nothing lost or doubled.
"""

from __future__ import annotations

import asyncio
import csv
import io
import json
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import boto3
import psycopg
import pytest

from tests.multihost_celery import VISIBILITY_TIMEOUT_S
from tests.netns import HostProcesses, Network, namespaces_available, stale_remove
from tests.test_deploy import Browser, _chat, compose, hidden, interpolate, wait_until

_unavailable = namespaces_available()
POSTGRES_BIN = next(iter(sorted(Path("/usr/lib/postgresql").glob("*/bin"))), None)
if _unavailable:
    pytest.skip(_unavailable, allow_module_level=True)
if POSTGRES_BIN is None or not shutil.which("redis-server"):
    pytest.skip("PostgreSQL's binaries and redis-server are needed", allow_module_level=True)

pytestmark = [pytest.mark.postgres, pytest.mark.broker, pytest.mark.slow]

HOSTS = ["db", "web1", "web2", "work1", "work2", "inf"]
BUCKET = "evalsite-files"
JOB_RECEIVED = re.compile(r"Task dashboard\.tasks\.job_run\[([^\]]+)\] received")
JOB_SUCCEEDED = "Task dashboard.tasks.job_run[{}] succeeded"
BIG_ITEMS = 400  # x 5 workers x 3 aspects: 6,000 judgments, a report of a few seconds
PASSWORD = "pw-multihost-test-1"

SETUP = """
from django.contrib.auth import get_user_model
from django.core.management import call_command
from annotation.services import campaign_create, campaign_set_status, items_add
from modelhub.services import endpoint_register

likert = campaign_create(slug="mh-likert", name="Likert", protocol="likert", redundancy=2,
                         items_per_assignment=2, controls={{"open_links": True}})
items_add(campaign=likert, items=[(f"ex{{n}}/m", {{"context": ["Hi!"], "response": f"Hello {{n}}.",
                                                  "model": "m"}}) for n in range(4)])
campaign_set_status(campaign=likert, status="live")
big = campaign_create(slug="mh-big", name="Big", protocol="likert", redundancy=5,
                      items_per_assignment=10)
items_add(campaign=big, items=[(f"ex{{n}}/m{{n % 4}}", {{"context": ["Hi!"],
          "response": f"Hello {{n}}.", "model": f"m{{n % 4}}"}}) for n in range({items})])
call_command("import_judgments", "mh-big", "{judgments}", format="long")
endpoint_register(name="inf-bot", backend="openai_http",
                  config={{"base_url": "{model_url}", "model": "tiny-chat", "max_retries": 0}})
chat = campaign_create(slug="mh-chat", name="Chat", protocol="ssa_interactive",
                       parameters={{"models": ["inf-bot"], "heartbeat_s": 30}},
                       controls={{"open_links": True}})
campaign_set_status(campaign=chat, status="live")
get_user_model().objects.create_superuser("researcher", "r@example.org", "{password}")
"""

MODEL_SERVER = """
import threading
from tests.modelhub.fake_openai import FakeServer
print(FakeServer().url, flush=True)
threading.Event().wait()
"""


@dataclass
class Cluster:
    network: Network
    processes: HostProcesses
    data_dirs: dict[str, Path]
    database_url: str
    s3: object  # boto3's S3 client, pointed at the db host

    def web(self, host: str) -> str:
        return f"http://{self.network.address[host]}:8000"

    def sql(self, query: str, *params: object) -> list[tuple]:
        with psycopg.connect(self.database_url, autocommit=True) as connection:
            return connection.execute(query, params).fetchall()


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    stale_remove()
    folder = Path(tempfile.mkdtemp(prefix="evalsite-multihost-"))
    folder.chmod(0o755)  # PostgreSQL runs as `postgres` in it
    network = Network(HOSTS)
    processes = HostProcesses(folder, network)
    try:
        network.up()
        yield _start(folder, network, processes)
    finally:
        network.down()
        processes.reap()
        shutil.rmtree(folder, ignore_errors=True)


def _start(folder: Path, network: Network, processes: HostProcesses) -> Cluster:
    db = network.address["db"]
    pgdata = folder / "pgdata"
    pgdata.mkdir(mode=0o700)
    shutil.chown(pgdata, "postgres", "postgres")
    initdb = subprocess.run(
        ["runuser", "-u", "postgres", "--", str(POSTGRES_BIN / "initdb"), "-D", str(pgdata)]
        + ["-A", "trust", "-U", "postgres", "--no-sync"],
        capture_output=True,
        text=True,
    )
    assert initdb.returncode == 0, initdb.stderr
    with (pgdata / "pg_hba.conf").open("a") as hba:
        hba.write(f"host all all {network.subnet}.0/24 trust\n")
    settings = ["-c", f"listen_addresses={db}", "-c", f"unix_socket_directories={pgdata}"]
    settings += ["-c", "fsync=off", "-c", "max_connections=200"]
    postgres = [str(POSTGRES_BIN / "postgres"), "-D", str(pgdata), *settings]
    processes.start_on("db", "postgres", postgres, {}, user="postgres")
    redis = ["redis-server", "--bind", db, "--port", "6379", "--save", "", "--appendonly", "no"]
    redis += ["--protected-mode", "no"]  # reached from the other hosts, with no password
    processes.start_on("db", "redis", redis, {})
    s3_env = {"AWS_ACCESS_KEY_ID": "multihost", "AWS_SECRET_ACCESS_KEY": "multihost-secret"}
    moto = ["python", "-m", "moto.server", "-H", db, "-p", "9000"]
    processes.start_on("db", "s3", moto, s3_env)
    model_server = ["python", "-c", MODEL_SERVER]
    model = processes.start_on("inf", "model", model_server, {})

    database_url = f"postgres://postgres@{db}:5432/postgres"
    wait_until(lambda: _connects(database_url), 60, "PostgreSQL on the db host")
    s3 = boto3.client(
        "s3", endpoint_url=f"http://{db}:9000", region_name="us-east-1", **_aws(s3_env)
    )
    wait_until(lambda: _bucket_made(s3), 60, "the S3 server on the db host")
    wait_until(lambda: "http" in processes.log("model"), 30, "the model server on inf")
    model_url = processes.log("model").split()[0]
    assert model.poll() is None

    services = compose()["services"]
    given = {
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
        "DJANGO_ALLOWED_HOSTS": ",".join(network.address[h] for h in ("web1", "web2")),
        "POSTGRES_PASSWORD": "unused-here",
        "WEB_CONCURRENCY": "1",
    }
    data_dirs = {host: folder / f"data-{host}" for host in HOSTS[1:]}
    base_env = {
        "PATH": f"{sys.prefix}/bin:/usr/bin:/bin",
        "HOME": str(folder),
        "DATABASE_URL": database_url,
        "CELERY_BROKER_URL": f"redis://{db}:6379/0",
        "CELERY_RESULT_BACKEND": f"redis://{db}:6379/1",
        "REDIS_URL": f"redis://{db}:6379/2",
        "EVALSITE_STORAGE_URL": f"s3://{BUCKET}/jobs?endpoint_url=http://{db}:9000"
        "&region_name=us-east-1",
        **s3_env,
    }

    def env(service: str, host: str) -> dict[str, str]:
        declared = services[service]["environment"]
        return {
            **{k: interpolate(str(v), given) for k, v in declared.items()},
            **base_env,
            "EVALSITE_DATA_DIR": str(data_dirs[host]),
            "EVALSITE_BIND": f"{network.address[host]}:8000",
            # The proxy in front of the web hosts is the test process, at the bridge's address.
            "FORWARDED_ALLOW_IPS": network.gateway,
        }

    migrate = processes.start_on(
        "web1", "migrate", services["migrate"]["command"], env("migrate", "web1")
    )
    assert migrate.wait(timeout=180) == 0, processes.log("migrate")
    judgments = folder / "judgments.jsonl"
    _judgments_write(judgments)
    script = SETUP.format(
        items=BIG_ITEMS, judgments=judgments, model_url=model_url, password=PASSWORD
    )
    setup = ["python", "manage.py", "shell", "-c", script]
    admin = processes.start_on("web1", "setup", setup, env("migrate", "web1"))
    for host in ("web1", "web2"):
        processes.start_on(host, host, services["web"]["command"], env("web", host))
    worker = [str(part) for part in services["worker"]["command"]]
    worker[worker.index("-A") + 1] = "tests.multihost_celery"  # the short visibility timeout
    for host in ("work1", "work2"):
        processes.start_on(host, host, worker, env("worker", host))
    processes.start_on(
        "inf", "inference", services["inference"]["command"], env("inference", "inf")
    )
    assert admin.wait(timeout=180) == 0, processes.log("setup")
    cluster = Cluster(network, processes, data_dirs, database_url, s3)
    for host in ("web1", "web2"):
        url = f"{cluster.web(host)}/ready/"
        wait_until(lambda u=url: _status(u) == 200, 90, f"{host}'s /ready/")
    return cluster


def _aws(env: dict[str, str]) -> dict[str, str]:
    return {
        "aws_access_key_id": env["AWS_ACCESS_KEY_ID"],
        "aws_secret_access_key": env["AWS_SECRET_ACCESS_KEY"],
    }


def _connects(url: str) -> bool:
    try:
        psycopg.connect(url, connect_timeout=2).close()
        return True
    except psycopg.OperationalError:
        return False


def _bucket_made(s3) -> bool:
    try:
        s3.create_bucket(Bucket=BUCKET)
        return True
    except Exception:  # noqa: BLE001 - the server is still starting
        return False


def _status(url: str) -> int:
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status
    except OSError:
        return 0


def _judgments_write(path: Path) -> None:
    """Write the big campaign's judgments as a long file: 5 workers of 40 per item."""
    with path.open("w") as out:
        for n in range(BIG_ITEMS):
            for w in range(5):
                for aspect in ("empathy", "relevance", "fluency"):
                    value = str(1 + (n * 7 + w * 3 + len(aspect)) % 5)
                    row = {"item": f"ex{n}/m{n % 4}", "worker": f"w{(n + w) % 40}"}
                    out.write(json.dumps({**row, "question": aspect, "value": value}) + "\n")


def _researcher(cluster: Cluster, host: str) -> Browser:
    researcher = Browser(cluster.web(host))
    researcher.request("/admin/login/")
    status, path, _ = researcher.request(
        "/admin/login/?next=/dashboard/",
        {
            "csrfmiddlewaretoken": researcher.cookies["csrftoken"],
            "username": "researcher",
            "password": PASSWORD,
            "next": "/dashboard/",
        },
    )
    assert (status, path) == (200, "/dashboard/")
    return researcher


def _job_ask(researcher: Browser, slug: str, kind: str, **extra: str) -> None:
    form = {"csrfmiddlewaretoken": researcher.cookies["csrftoken"], "kind": kind, **extra}
    status, _, page = researcher.request(f"/dashboard/c/{slug}/jobs/", form)
    assert status == 200, page[:500]


def _job_wait(researcher: Browser, slug: str, job_id: int, timeout: float) -> dict:
    seen: dict = {}

    def finished() -> bool:
        _, _, text = researcher.request(f"/dashboard/c/{slug}/jobs/{job_id}/")
        seen.update(json.loads(text))
        return seen["status"] in ("done", "failed")

    wait_until(finished, timeout, f"job {job_id}")
    return seen


def _on_other_host(researcher: Browser, host_url: str) -> Browser:
    other = Browser(host_url)
    other.cookies = dict(researcher.cookies)  # the session is in the database, not the host
    return other


def _stored_objects(s3) -> list[bytes]:
    listing = s3.list_objects_v2(Bucket=BUCKET).get("Contents", [])
    return [s3.get_object(Bucket=BUCKET, Key=o["Key"])["Body"].read() for o in listing]


def _worker_logs(cluster: Cluster) -> str:
    return cluster.processes.log("work1") + cluster.processes.log("work2")


def test_six_hosts_without_a_shared_folder_run_a_study_a_chat_and_survive_a_lost_worker(
    cluster,
):
    web1, web2 = cluster.web("web1"), cluster.web("web2")

    # A Likert study answered through web1: 4 responses, 2 ratings each.
    answered = 0
    for n in range(6):
        worker = Browser(web1)
        query = f"?workerId=crowd{n}"
        while True:
            status, _, page = worker.request(f"/task/mh-likert/{query}")
            assert status == 200, page[:500]
            if 'name="token"' not in page:
                break
            answers = {key: "4" for key in re.findall(r'type="radio" name="(\w+)"', page)}
            form = {"token": hidden(page, "token"), "item": hidden(page, "item"), **answers}
            status, _, page = worker.request(f"/task/mh-likert/submit/{query}", form)
            assert status == 200, page[:500]
            answered += 1
    likert_judgments = """SELECT count(*) FROM annotation_judgment j
        JOIN annotation_item i ON i.id = j.item_id
        JOIN annotation_campaign c ON c.id = i.campaign_id WHERE c.slug = %s"""
    assert answered == 8 and cluster.sql(likert_judgments, "mh-likert") == [(24,)]

    # Its report and export: asked on web1, built on a worker host, downloaded from web2.
    researcher = _researcher(cluster, "web1")
    on_web2 = _on_other_host(researcher, web2)
    downloaded: dict[str, str] = {}
    export_csv = ""
    for kind, extra in (("report", {}), ("export", {"format": "csv", "what": "judgments"})):
        _job_ask(researcher, "mh-likert", kind, **extra)
        [(job_id,)] = cluster.sql(
            "SELECT j.id FROM dashboard_job j JOIN annotation_campaign c ON c.id = j.campaign_id"
            " WHERE c.slug = 'mh-likert' AND j.kind = %s ORDER BY j.id DESC LIMIT 1",
            kind,
        )
        job = _job_wait(researcher, "mh-likert", job_id, 120)
        assert job["status"] == "done", (job, _worker_logs(cluster)[-3000:])
        for url in job["files"]:
            if url.endswith((".csv", ".txt", ".json", ".svg")):
                status, _, body = on_web2.request(url)
                assert status == 200, body[:500]
                downloaded[url] = body
                if kind == "export" and url.endswith(".csv"):
                    export_csv = body
    wait_until(
        lambda: _worker_logs(cluster).count("dashboard.tasks.job_run[") >= 4, 30, "worker logs"
    )
    assert len(list(csv.DictReader(io.StringIO(export_csv)))) == 24
    # The bytes web2 served are the object store's; no host's own folder holds a job file.
    stored = _stored_objects(cluster.s3)
    for body in downloaded.values():
        assert body.encode() in stored
    names = {url.rstrip("/").rsplit("/", 1)[-1] for url in downloaded}
    for host, folder in cluster.data_dirs.items():
        local = {p.name for p in folder.rglob("*") if p.is_file()} if folder.exists() else set()
        assert not names & local, f"{host} keeps job files in its own folder"

    # A live chat over web2's websocket; the bot's turns run on the inference host.
    status, _, page = Browser(web2).request("/task/mh-chat/?workerId=talker")
    assert status == 200, page[:500]
    path = re.search(r'data-ws-path="([^"]+)"', page).group(1).replace("&amp;", "&")
    with ThreadPoolExecutor(1) as pool:
        reply = pool.submit(asyncio.run, _chat(web2.replace("http", "ws") + path))
        assert reply.result(timeout=120) == "reply 0 to How?"
    bot_turns = """SELECT count(*) FROM annotation_utterance u
        JOIN annotation_dialogue d ON d.id = u.dialogue_id
        JOIN annotation_campaign c ON c.id = d.campaign_id
        WHERE c.slug = 'mh-chat' AND u.speaker = 'bot'"""
    assert cluster.sql(bot_turns) == [(2,)]
    assert "chat_bot_turn" in cluster.processes.log("inference")

    # The worker host running a report is lost mid-job; the other one finishes it.
    before = {host: len(cluster.processes.log(host)) for host in ("work1", "work2")}
    started = time.monotonic()
    _job_ask(researcher, "mh-big", "report")
    [(job_id,)] = cluster.sql(
        "SELECT j.id FROM dashboard_job j JOIN annotation_campaign c ON c.id = j.campaign_id"
        " WHERE c.slug = 'mh-big'"
    )
    wait_until(
        lambda: (
            cluster.sql("SELECT status FROM dashboard_job WHERE id = %s", job_id) == [("running",)]
        ),
        60,
        "the big report to run",
    )
    runs = {
        host: JOB_RECEIVED.findall(cluster.processes.log(host)[before[host] :]) for host in before
    }
    [(lost, [task_id])] = [(host, ids) for host, ids in runs.items() if ids]
    survivor = "work2" if lost == "work1" else "work1"
    cluster.network.host_kill(lost)
    assert cluster.sql("SELECT status FROM dashboard_job WHERE id = %s", job_id) == [
        ("running",)
    ], "the report finished before its host was lost: make it bigger"
    job = _job_wait(on_web2, "mh-big", job_id, VISIBILITY_TIMEOUT_S + 90)
    assert job["status"] == "done", (job, cluster.processes.log(survivor)[-3000:])
    assert JOB_SUCCEEDED.format(task_id) in cluster.processes.log(survivor)
    assert time.monotonic() - started < VISIBILITY_TIMEOUT_S + 60
    report = next(url for url in job["files"] if url.endswith((".txt", ".json")))
    status, _, body = on_web2.request(report)
    assert status == 200 and body.encode() in _stored_objects(cluster.s3)
    # Nothing lost or doubled: one job, the judgments as imported.
    big_jobs = (
        "SELECT count(*) FROM dashboard_job j JOIN annotation_campaign c"
        " ON c.id = j.campaign_id WHERE c.slug = 'mh-big'"
    )
    assert cluster.sql(big_jobs) == [(1,)]
    assert cluster.sql(likert_judgments, "mh-big") == [(BIG_ITEMS * 5 * 3,)]
