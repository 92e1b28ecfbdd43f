"""Typed readers of the environment for the settings: a bad value stops the process at start.

Each reader returns the variable's value or the default when it is unset (or empty). A value
that does not parse stops the process with one line on stderr that names the variable and
the expected form (``SystemExit``), never a traceback deep inside a request. manage.py, the
ASGI/WSGI servers and Celery all import the settings before they serve anything, so they all
stop at start.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import parse_qs, urlsplit

import environ

TRUE = frozenset({"1", "true", "yes", "on"})
FALSE = frozenset({"0", "false", "no", "off"})


def tasks_inline_unless_brokered() -> None:
    """For a command-line process (manage.py, a bench script, the test suite): with no
    ``CELERY_BROKER_URL``, set ``EVALSITE_TASKS_INLINE=1`` (unless already set) so that its
    tasks run in it. Web servers and Celery workers never call this: without a broker they
    refuse to start (settings.py) rather than run model inference inside a request."""
    if _raw("CELERY_BROKER_URL") is None:
        os.environ.setdefault("EVALSITE_TASKS_INLINE", "1")


def fail(name: str, expected: str, value: str | None = None) -> NoReturn:
    """Stop the process: one line naming the variable, what it holds (a URL's password
    masked) and the expected form."""
    got = "" if value is None else f" (got {_masked(value)!r})"
    sys.exit(f"evalsite: configuration error: {name}{got}: expected {expected}")


def _raw(name: str) -> str | None:
    value = os.environ.get(name)
    return None if value is None or value.strip() == "" else value.strip()


def read_str(name: str, default: str = "") -> str:
    value = _raw(name)
    return default if value is None else value


def read_hooks(name: str) -> dict[str, str]:
    """Return named hooks, ``name=target`` pairs separated by ``;``: a target is a Python
    callable ``package.module:function`` or an ``http(s)://`` address (e.g. the arena's
    moderation hooks). Empty: none."""
    hooks: dict[str, str] = {}
    for entry in filter(None, (part.strip() for part in read_str(name).split(";"))):
        key, sep, target = (part.strip() for part in entry.partition("="))
        web = target.startswith(("http://", "https://"))
        code = re.fullmatch(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*", target) is not None
        if not sep or not re.fullmatch(r"[\w-]{1,40}", key) or not (web or code):
            fail(name, "name=package.module:function or name=https://address, ';' between", entry)
        hooks[key] = target
    return hooks


def read_bool(name: str, default: bool) -> bool:
    value = _raw(name)
    if value is None:
        return default
    if value.lower() in TRUE:
        return True
    if value.lower() in FALSE:
        return False
    fail(name, "true or false (also 1/0, yes/no, on/off)", value)


def read_int(name: str, default: int, *, minimum: int = 0, maximum: int | None = None) -> int:
    value = _raw(name)
    if value is None:
        return default
    wanted = (
        f"a whole number from {minimum} to {maximum}"
        if maximum is not None
        else (f"a whole number ≥ {minimum}")
    )
    try:
        number = int(value, 10)
    except ValueError:
        fail(name, wanted, value)
    if number < minimum or (maximum is not None and number > maximum):
        fail(name, wanted, value)
    return number


def read_float(name: str, default: float, *, low: float, high: float) -> float:
    value = _raw(name)
    if value is None:
        return default
    try:
        number = float(value)
    except ValueError:
        fail(name, f"a number from {low} to {high}", value)
    if not low <= number <= high:  # also refuses nan
        fail(name, f"a number from {low} to {high}", value)
    return number


def read_list(name: str, default: list[str]) -> list[str]:
    value = _raw(name)
    if value is None:
        return list(default)
    return [part.strip() for part in value.split(",") if part.strip()]


def read_url(name: str, default: str, *, schemes: tuple[str, ...]) -> str:
    """A URL with one of ``schemes`` and a host (an empty default means "not configured")."""
    value = _raw(name)
    if value is None:
        return default
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 -- raises ValueError on a port that is not a number
    except ValueError:
        fail(name, f"a URL {_forms(schemes)}", value)
    if parts.scheme not in schemes or not parts.hostname:
        fail(name, f"a URL {_forms(schemes)}", value)
    return value


def read_database(name: str, default: str) -> dict:
    """Django's DATABASES entry from a postgres:// or sqlite:/// URL."""
    value = _raw(name) or default
    scheme = value.split("://", 1)[0]
    if scheme not in ("postgres", "postgresql", "pgsql", "sqlite"):
        fail(name, "postgres://USER[:PASSWORD]@HOST[:PORT]/NAME or sqlite:///PATH", value)
    try:
        config = environ.Env.db_url_config(value)
    except (ValueError, KeyError):
        fail(name, "postgres://USER[:PASSWORD]@HOST[:PORT]/NAME or sqlite:///PATH", value)
    if not config.get("NAME"):
        fail(name, "a URL that names the database (…/NAME)", value)
    return config


STORAGE_FORM = (
    "s3://BUCKET[/PREFIX][?endpoint_url=http(s)://HOST[:PORT]&region_name=REGION"
    "&addressing_style=path|virtual|auto] (credentials in AWS_ACCESS_KEY_ID and "
    "AWS_SECRET_ACCESS_KEY, never in the URL)"
)
_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
_STORAGE_OPTIONS = frozenset({"endpoint_url", "region_name", "addressing_style"})


def read_storage(name: str, local: Path) -> dict[str, Any]:
    """Django's STORAGES entry of the files one process writes for another (job files).

    Unset: a FileSystemStorage in ``local``, which only processes sharing that folder see.
    ``s3://BUCKET/PREFIX?endpoint_url=…&region_name=…&addressing_style=path``: django-storages'
    S3 backend, any S3-compatible server. Credentials stay in the variables boto3 reads
    (``AWS_ACCESS_KEY_ID``…, or ``AWS_S3_ACCESS_KEY_ID``… when MTurk's differ), so the URL
    is no secret.
    """
    value = _raw(name)
    if value is None:
        return {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            # A rerun's files replace the last run's under the same names.
            "OPTIONS": {"location": str(local), "allow_overwrite": True},
        }
    try:
        parts = urlsplit(value)
        query = parse_qs(parts.query, keep_blank_values=True, strict_parsing=bool(parts.query))
    except ValueError:
        fail(name, STORAGE_FORM, value)
    if (
        parts.scheme != "s3"
        or parts.fragment
        or "@" in parts.netloc
        or not _BUCKET.fullmatch(parts.netloc)
        or not set(query) <= _STORAGE_OPTIONS
        or any(len(values) != 1 or not values[0] for values in query.values())
    ):
        fail(name, STORAGE_FORM, value)
    options = {key: values[0] for key, values in query.items()}
    try:
        endpoint = urlsplit(options.get("endpoint_url", "https://s3.amazonaws.com"))
        endpoint.port  # noqa: B018 -- raises ValueError on a port that is not a number
    except ValueError:
        fail(name, STORAGE_FORM, value)
    if endpoint.scheme not in ("http", "https") or not endpoint.hostname:
        fail(name, STORAGE_FORM, value)
    if options.get("addressing_style", "auto") not in ("path", "virtual", "auto"):
        fail(name, STORAGE_FORM, value)
    return {
        "BACKEND": "storages.backends.s3.S3Storage",
        "OPTIONS": {
            "bucket_name": parts.netloc,
            "location": parts.path.strip("/"),
            **options,
            # A download bigger than this spills to a temporary file, not the web's memory.
            "max_memory_size": 16 * 2**20,
        },
    }


def _masked(value: str) -> str:
    return re.sub(r"(://[^:/@]*:)[^@/]*@", r"\1***@", value)


def _forms(schemes: tuple[str, ...]) -> str:
    return " or ".join(f"{s}://HOST…" for s in schemes)
