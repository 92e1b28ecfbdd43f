"""Settings come from the environment, with the embedded defaults of DESIGN.md."""

import json
import os
import subprocess
import sys
from pathlib import Path

from evalsite.celery import app

ROOT = Path(__file__).resolve().parents[1]
PROBE = (
    "import json, django; from django.conf import settings; django.setup(); "
    "print(json.dumps({'db': settings.DATABASES['default']['ENGINE'], "
    "'eager': settings.CELERY_TASK_ALWAYS_EAGER, "
    "'layer': settings.CHANNEL_LAYERS['default']['BACKEND']}))"
)


def probe(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "REDIS_URL", "EVALSITE_TASKS_INLINE")
    }
    clean.update(env, DJANGO_SETTINGS_MODULE="evalsite.settings")
    return subprocess.run(
        [sys.executable, *(args or ("-c", PROBE))],
        cwd=ROOT,
        env=clean,
        capture_output=True,
        text=True,
    )


def settings_with(**env: str) -> dict:
    out = probe(**env)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_embedded_defaults_are_sqlite_inline_tasks_when_asked_and_in_memory_channels():
    assert settings_with(EVALSITE_TASKS_INLINE="1") == {
        "db": "django.db.backends.sqlite3",
        "eager": True,
        "layer": "channels.layers.InMemoryChannelLayer",
    }


def test_without_a_broker_a_server_refuses_to_start_rather_than_run_tasks_in_requests():
    out = probe()  # as asgi.py, wsgi.py and the Celery worker import the settings
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert "CELERY_BROKER_URL" in out.stderr and "EVALSITE_TASKS_INLINE=1" in out.stderr
    assert (
        settings_with(EVALSITE_TASKS_INLINE="0", CELERY_BROKER_URL="redis://h:6379/0")["eager"]
        is False
    )


def test_manage_py_runs_tasks_inline_only_when_no_broker_is_set():
    shell = "from django.conf import settings; print(settings.CELERY_TASK_ALWAYS_EAGER)"
    alone = probe("manage.py", "shell", "-c", shell)
    assert alone.returncode == 0 and alone.stdout.split()[-1] == "True", alone.stderr
    brokered = probe("manage.py", "shell", "-c", shell, CELERY_BROKER_URL="redis://h:6379/0")
    assert brokered.returncode == 0 and brokered.stdout.split()[-1] == "False", brokered.stderr


def test_environment_selects_postgresql_a_broker_and_redis_channels():
    assert settings_with(
        DATABASE_URL="postgres://u@127.0.0.1:5432/x",
        CELERY_BROKER_URL="redis://127.0.0.1:6379/0",
        REDIS_URL="redis://127.0.0.1:6379/1",
    ) == {
        "db": "django.db.backends.postgresql",
        "eager": False,
        "layer": "chat.layer.ChatRedisChannelLayer",
    }


def test_celery_is_configured_for_safe_delivery():
    conf = app.conf
    assert conf.task_serializer == "json" and conf.accept_content == ["json"]
    assert conf.task_acks_late is True and conf.worker_prefetch_multiplier == 1
    assert conf.task_time_limit and conf.task_soft_time_limit < conf.task_time_limit
    assert {q.name for q in conf.task_queues} == {"default", "inference", "webhooks"}
    assert conf.task_routes["modelhub.tasks.*"] == {"queue": "inference"}
    assert conf.task_routes["webhooks.tasks.*"] == {"queue": "webhooks"}


def database_with(**env: str) -> subprocess.CompletedProcess[str]:
    """The default database's settings under ``env`` (DATABASE_URL given or SQLite)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "EVALSITE_"))}
    clean.update(env, DJANGO_SETTINGS_MODULE="evalsite.settings", EVALSITE_TASKS_INLINE="1")
    code = (
        "import json, django; from django.conf import settings; django.setup(); "
        "d = settings.DATABASES['default']; "
        "print(json.dumps({'pool': d.get('OPTIONS', {}).get('pool'), 'age': d['CONN_MAX_AGE']}))"
    )
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=clean, capture_output=True, text=True
    )


POSTGRES = "postgres://u@127.0.0.1:5432/x"


def test_postgresql_connections_come_from_a_bounded_pool_sized_by_the_environment():
    assert json.loads(database_with(DATABASE_URL=POSTGRES).stdout) == {
        "pool": {"min_size": 1, "max_size": 10, "timeout": 30.0},
        "age": 0,
    }
    sized = database_with(
        DATABASE_URL=POSTGRES,
        EVALSITE_DB_POOL_MIN="2",
        EVALSITE_DB_POOL_MAX="5",
        EVALSITE_DB_POOL_TIMEOUT="1.5",
    )
    assert json.loads(sized.stdout)["pool"] == {"min_size": 2, "max_size": 5, "timeout": 1.5}


def test_the_pool_is_off_with_max_zero_and_on_sqlite():
    off = database_with(DATABASE_URL=POSTGRES + "?conn_max_age=60", EVALSITE_DB_POOL_MAX="0")
    assert json.loads(off.stdout) == {"pool": None, "age": 60}
    assert json.loads(database_with().stdout)["pool"] is None


def test_a_pool_refuses_persistent_connections_and_a_minimum_above_its_maximum():
    persistent = database_with(DATABASE_URL=POSTGRES + "?conn_max_age=60")
    assert persistent.returncode == 1 and "DATABASE_URL" in persistent.stderr
    upside_down = database_with(EVALSITE_DB_POOL_MIN="20", EVALSITE_DB_POOL_MAX="10")
    assert upside_down.returncode == 1
    assert "EVALSITE_DB_POOL_MIN" in upside_down.stderr and "Traceback" not in upside_down.stderr
