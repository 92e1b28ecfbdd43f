"""Operations: the fresh-clone path, settings that refuse to be unsafe, readiness, and the
optional JSON logs, Sentry reporting and Prometheus metrics. Each runs the project in a
subprocess with its own environment, the way a server or a command starts."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OURS = ("DJANGO_", "EVALSITE_", "DATABASE_URL", "CELERY_", "REDIS_URL", "SENTRY_", "PROMETHEUS_")
KEY = "k" * 20 + "0123456789abcdefghijklmnopqrstuvwxyz"  # 56 characters, 37 distinct
PRODUCTION = {
    "EVALSITE_PRODUCTION": "true",
    "DJANGO_SECRET_KEY": KEY,
    "DJANGO_ALLOWED_HOSTS": "evalsite.example.org",
}


def run(args: list[str], tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """Run a Python command in the project with only the given settings variables."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(OURS)}
    # No broker here: tasks inline, as the settings allow only when asked.
    clean.update({"EVALSITE_DATA_DIR": str(tmp_path / "data"), "EVALSITE_TASKS_INLINE": "1"}, **env)
    clean["DJANGO_SETTINGS_MODULE"] = "evalsite.settings"
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=clean, capture_output=True, text=True, timeout=120
    )


def django(code: str, tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return run(["-c", "import django; django.setup()\n" + code], tmp_path, **env)


def test_a_fresh_data_folder_is_created_before_the_database_opens(tmp_path):
    folder = tmp_path / "new" / "nested"
    assert not folder.exists()
    done = run(["manage.py", "migrate", "--noinput"], tmp_path, EVALSITE_DATA_DIR=str(folder))
    assert done.returncode == 0, done.stderr
    assert (folder / "evalsite.sqlite3").is_file()


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        ("DJANGO_DEBUG", "maybe", "true or false"),
        ("EVALSITE_LEASE_SECONDS", "15m", "a whole number ≥ 1"),
        ("EVALSITE_ABANDON_SECONDS", "-5", "a whole number ≥ 1"),
        ("CELERY_VISIBILITY_TIMEOUT", "60", "a whole number ≥ 361"),
        ("DATABASE_URL", "mysql://u:hunter2@db/x", "postgres://USER"),
        ("DATABASE_URL", "postgres://u@db:notaport/x", "postgres://USER"),
        ("CELERY_BROKER_URL", "localhost:6379", "redis://HOST"),
        ("REDIS_URL", "http://127.0.0.1:6379", "redis://HOST"),
        ("SENTRY_DSN", "not a url", "https://HOST"),
        ("SENTRY_TRACES_SAMPLE_RATE", "nan", "a number from 0.0 to 1.0"),
        ("PROLIFIC_FEE_RATE", "43%", "a number from 0.0 to 1.0"),
        ("LOG_LEVEL", "LOUD", "DEBUG, INFO"),
        ("EVALSITE_DATA_DIR", "/proc/evalsite", "a folder this process can create"),
        ("EVALSITE_DB_POOL_MAX", "ten", "a whole number ≥ 0"),
        ("EVALSITE_DB_POOL_TIMEOUT", "0", "a number from 0.1 to 600.0"),
        ("EVALSITE_RETRY_AFTER", "0", "a whole number ≥ 1"),
        ("EVALSITE_STORAGE_URL", "s3://Bad_Bucket", "expected s3://BUCKET"),
        ("EVALSITE_WEBHOOKS_DEADLINE", "0", "a number from 0.5"),
    ],
)
def test_a_malformed_variable_stops_the_process_with_one_line_naming_it(
    tmp_path, name, value, expected
):
    done = run(["manage.py", "check"], tmp_path, **{name: value})
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert lines[0].startswith(f"evalsite: configuration error: {name}") and expected in lines[0]
    assert "hunter2" not in lines[0]  # a URL's password is masked


def test_production_refuses_a_missing_or_short_secret_key_and_debug(tmp_path):
    for key in ("", "short-key", "a" * 60):
        done = run(["manage.py", "check"], tmp_path, **{**PRODUCTION, "DJANGO_SECRET_KEY": key})
        assert done.returncode == 1 and "DJANGO_SECRET_KEY" in done.stderr, done.stderr
    done = run(["manage.py", "check"], tmp_path, **PRODUCTION, DJANGO_DEBUG="true")
    assert done.returncode == 1 and "DJANGO_DEBUG" in done.stderr


def test_check_deploy_is_clean_in_the_documented_production_environment(tmp_path):
    done = run(
        ["manage.py", "check", "--deploy", "--fail-level", "WARNING"], tmp_path, **PRODUCTION
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "System check identified no issues (0 silenced)." in done.stdout


def test_production_security_is_on_by_default_and_each_switch_turns_it_off(tmp_path):
    probe = (
        "from django.conf import settings as s; print(s.SECURE_HSTS_SECONDS, s.SECURE_SSL_REDIRECT,"
        " s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.SECURE_PROXY_SSL_HEADER)"
    )
    on = django(probe, tmp_path, **PRODUCTION).stdout.strip()
    assert on == "31536000 True True True ('HTTP_X_FORWARDED_PROTO', 'https')"
    off = django(
        probe,
        tmp_path,
        **PRODUCTION,
        DJANGO_SECURE_HSTS_SECONDS="0",
        DJANGO_SECURE_SSL_REDIRECT="false",
        DJANGO_SESSION_COOKIE_SECURE="false",
        DJANGO_CSRF_COOKIE_SECURE="false",
        EVALSITE_BEHIND_PROXY="false",
    ).stdout.strip()
    assert off == "0 False False False None"
    assert django(probe, tmp_path).stdout.strip() == "0 False False False None"  # local


def test_without_a_key_each_machine_makes_its_own_and_keeps_it(tmp_path):
    probe = "from django.conf import settings; print(settings.SECRET_KEY)"
    first = django(probe, tmp_path).stdout.strip()
    again = django(probe, tmp_path).stdout.strip()
    other = django(probe, tmp_path, EVALSITE_DATA_DIR=str(tmp_path / "elsewhere")).stdout.strip()
    assert len(first) >= 50 and first == again and other != first
    key_file = tmp_path / "data" / "secret_key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    source = (ROOT / "evalsite" / "settings.py").read_text()
    assert "insecure" not in source.lower()  # no public fallback key left to sign tokens


READY = (
    "import json; from django.test import Client\n"
    "r = Client(HTTP_HOST='10.1.2.3').get('/ready/')\n"
    "print(r.status_code, json.dumps(r.json()))"
)


def _ready(tmp_path: Path, **env: str) -> tuple[int, dict]:
    done = django(READY, tmp_path, **env)
    status, _, body = done.stdout.strip().rpartition("\n")[2].partition(" ")
    return int(status), json.loads(body)


def test_ready_names_unapplied_migrations_then_passes_once_migrated(tmp_path):
    status, body = _ready(tmp_path, LOG_LEVEL="CRITICAL")
    assert status == 503 and body["status"] == "unavailable"
    assert body["checks"]["database"]["ok"] and not body["checks"]["migrations"]["ok"]
    assert "not applied" in body["checks"]["migrations"]["error"]
    assert run(["manage.py", "migrate", "--noinput"], tmp_path).returncode == 0
    status, body = _ready(tmp_path, LOG_LEVEL="CRITICAL")
    assert status == 200 and body["status"] == "ok"
    assert set(body["checks"]) == {"database", "migrations"}  # nothing else configured


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again when this returns


def test_ready_is_503_naming_an_unreachable_broker_and_channel_layer(tmp_path):
    assert run(["manage.py", "migrate", "--noinput"], tmp_path).returncode == 0
    port = _closed_port()
    status, body = _ready(
        tmp_path,
        LOG_LEVEL="CRITICAL",
        CELERY_BROKER_URL=f"redis://127.0.0.1:{port}/0",
        REDIS_URL=f"redis://127.0.0.1:{port}/1",
    )
    assert status == 503
    assert body["checks"]["database"]["ok"] and body["checks"]["migrations"]["ok"]
    assert not body["checks"]["broker"]["ok"] and not body["checks"]["channel_layer"]["ok"]
    assert str(port) in body["checks"]["broker"]["error"]


def test_probes_answer_any_host_over_plain_http_in_production(tmp_path):
    code = (
        "from django.test import Client; c = Client(HTTP_HOST='10.1.2.3')\n"
        "print(c.get('/health/').status_code, c.get('/task/x/').status_code,"
        " Client(HTTP_HOST='evalsite.example.org').get('/task/x/').status_code,"
        " c.post('/health/').status_code)"
    )
    done = django(code, tmp_path, **PRODUCTION, LOG_LEVEL="CRITICAL")
    # liveness answers; other pages keep the host check (400) and the HTTPS redirect (301)
    assert done.stdout.split() == ["200", "400", "301", "405"], done.stderr


def test_json_logs_are_one_object_a_line(tmp_path):
    code = (
        "import logging; logging.getLogger('evalsite.test').warning("
        "'stored %s', 3, extra={'campaign': 'c1'})"
    )
    done = django(code, tmp_path, EVALSITE_LOG_JSON="true")
    entry = json.loads(done.stderr.strip())
    assert entry["level"] == "WARNING" and entry["logger"] == "evalsite.test"
    assert entry["message"] == "stored 3" and entry["campaign"] == "c1"
    plain = django(code, tmp_path).stderr.strip()
    assert plain.endswith("WARNING evalsite.test: stored 3")


class _Sentry(BaseHTTPRequestHandler):
    envelopes: list[bytes] = []

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        length = int(self.headers.get("Content-Length", 0))
        body = self.rfile.read(length)
        if self.headers.get("Content-Encoding") == "gzip":
            import gzip

            body = gzip.decompress(body)
        type(self).envelopes.append(body)
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args: object) -> None:
        pass


def test_sentry_reports_errors_with_the_django_and_celery_integrations(tmp_path):
    server = HTTPServer(("127.0.0.1", 0), _Sentry)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        dsn = f"http://publickey@127.0.0.1:{server.server_port}/42"
        code = (
            "import sentry_sdk\n"
            "try:\n    1 / 0\nexcept ZeroDivisionError:\n    sentry_sdk.capture_exception()\n"
            "sentry_sdk.flush(timeout=10)"
        )
        done = django(code, tmp_path, SENTRY_DSN=dsn)
        assert done.returncode == 0, done.stderr
    finally:
        server.shutdown()
    assert _Sentry.envelopes, "no envelope reached the Sentry server"
    lines = [json.loads(line) for line in _Sentry.envelopes[0].splitlines() if line.strip()]
    event = next(line for line in lines if "exception" in line)
    assert event["exception"]["values"][0]["type"] == "ZeroDivisionError"
    assert {"django", "celery"} <= set(event["sdk"]["integrations"])
    assert event["environment"] == "local"
    # off unless configured
    off = django("import sentry_sdk; print(sentry_sdk.get_client().is_active())", tmp_path)
    assert off.stdout.strip() == "False"


METRICS = """
from django.core.management import call_command
call_command("migrate", verbosity=0)
from django.test import Client
from tests.factories import JudgmentFactory
JudgmentFactory()
Client(HTTP_HOST="localhost").get("/task/nowhere/")
c = Client(HTTP_HOST="10.1.2.3")
headers = {"HTTP_AUTHORIZATION": "Bearer s3cret"}
print(c.get("/metrics").status_code)
print(c.get("/metrics", **headers).content.decode())
"""


def test_metrics_count_requests_judgments_and_chats_when_turned_on(tmp_path):
    done = django(METRICS, tmp_path, EVALSITE_METRICS="true", EVALSITE_METRICS_TOKEN="s3cret")
    assert done.returncode == 0, done.stderr
    unauthorised, _, text = done.stdout.partition("\n")
    assert unauthorised == "401"
    assert (
        'evalsite_http_requests_total{method="GET",status="404",view="annotation:task"} 1.0' in text
    )
    assert "evalsite_judgments_stored_total 1.0" in text
    assert "evalsite_active_chats 0.0" in text
    off = django(
        "from django.test import Client; print(Client().get('/metrics').status_code)", tmp_path
    )
    assert off.stdout.strip() == "404"
