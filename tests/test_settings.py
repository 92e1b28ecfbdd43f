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


def settings_with(**env: str) -> dict:
    clean = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "REDIS_URL")
    }
    clean.update(env, DJANGO_SETTINGS_MODULE="evalsite.settings")
    out = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        env=clean,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


def test_embedded_defaults_are_sqlite_eager_celery_and_in_memory_channels():
    assert settings_with() == {
        "db": "django.db.backends.sqlite3",
        "eager": True,
        "layer": "channels.layers.InMemoryChannelLayer",
    }


def test_environment_selects_postgresql_a_broker_and_redis_channels():
    assert settings_with(
        DATABASE_URL="postgres://u@127.0.0.1:5432/x",
        CELERY_BROKER_URL="redis://127.0.0.1:6379/0",
        REDIS_URL="redis://127.0.0.1:6379/1",
    ) == {
        "db": "django.db.backends.postgresql",
        "eager": False,
        "layer": "channels_redis.core.RedisChannelLayer",
    }


def test_celery_is_configured_for_safe_delivery():
    conf = app.conf
    assert conf.task_serializer == "json" and conf.accept_content == ["json"]
    assert conf.task_acks_late is True and conf.worker_prefetch_multiplier == 1
    assert conf.task_time_limit and conf.task_soft_time_limit < conf.task_time_limit
    assert {q.name for q in conf.task_queues} == {"default", "inference"}
    assert conf.task_routes["modelhub.tasks.*"] == {"queue": "inference"}
