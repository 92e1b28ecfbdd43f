"""Django settings, read only from the environment (``evalsite.env``).

Every variable has an embedded default for local use (``make demo``, plain ``pytest``):
SQLite in ``EVALSITE_DATA_DIR``, Celery tasks run eagerly in-process, the in-memory channel
layer. Production sets ``EVALSITE_PRODUCTION=true`` and ``DATABASE_URL``,
``CELERY_BROKER_URL``, ``REDIS_URL``: see ``.env.example`` and docs/deployment.md. A malformed
variable stops the process at start with one line naming it.
"""

import secrets
from pathlib import Path

import environ

from evalsite.env import (
    fail,
    read_bool,
    read_database,
    read_float,
    read_int,
    read_list,
    read_str,
    read_url,
)

BASE_DIR = Path(__file__).resolve().parent.parent

environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

PRODUCTION = read_bool("EVALSITE_PRODUCTION", False)
DEBUG = read_bool("DJANGO_DEBUG", False)
if PRODUCTION and DEBUG:
    fail("DJANGO_DEBUG", "false when EVALSITE_PRODUCTION=true (DEBUG shows code and settings)")

# Local data: the SQLite file, reports, exports, caches. Created here, before anything can
# open the database, so a fresh clone's first command works.
DATA_DIR = Path(read_str("EVALSITE_DATA_DIR", str(BASE_DIR / "var"))).resolve()
try:
    DATA_DIR.mkdir(parents=True, exist_ok=True)
except OSError as exc:
    fail("EVALSITE_DATA_DIR", f"a folder this process can create and write ({exc.strerror})")


def _local_secret_key(path: Path) -> str:
    """This machine's own key, made once and kept in the data folder (mode 600).

    There is no public fallback key: the key signs workers' assignment tokens, so a key
    anyone can read would let anyone forge them. Several processes sharing the folder read
    the key the first one wrote (exclusive create).
    """
    try:
        with path.open("x", encoding="ascii") as out:
            path.chmod(0o600)
            out.write(secrets.token_urlsafe(50))
    except FileExistsError:
        pass
    key = path.read_text(encoding="ascii").strip()
    if len(key) < 50:
        fail("DJANGO_SECRET_KEY", f"set, or a readable key in {path} (delete it to make one anew)")
    return key


SECRET_KEY = read_str("DJANGO_SECRET_KEY")
if PRODUCTION and (len(SECRET_KEY) < 50 or len(set(SECRET_KEY)) < 5):
    fail(
        "DJANGO_SECRET_KEY",
        "at least 50 random characters when EVALSITE_PRODUCTION=true "
        "(python -c 'import secrets; print(secrets.token_urlsafe(50))')",
    )
if not SECRET_KEY:
    SECRET_KEY = _local_secret_key(DATA_DIR / "secret_key")

ALLOWED_HOSTS = read_list("DJANGO_ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = read_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])

# Hosts allowed to frame the worker pages (MTurk's ExternalQuestion iframe, Prolific).
WORKER_FRAME_ANCESTORS = read_list(
    "EVALSITE_FRAME_ANCESTORS",
    [
        "'self'",
        "https://www.mturk.com",
        "https://worker.mturk.com",
        "https://workersandbox.mturk.com",
        "https://app.prolific.com",
    ],
)

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "annotation",
    "modelhub",
    "dashboard",
    "evalsite.apps.EvalsiteConfig",
]

MIDDLEWARE = [
    "evalsite.health.probes_middleware",  # /health/, /ready/, /metrics: before the host check
    "evalsite.overload.OverloadMiddleware",  # database overload: 503 + Retry-After, not 500
    "evalsite.inputs.InputMiddleware",  # input no field accepts (NUL): 400, not 500
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "evalsite.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

WSGI_APPLICATION = "evalsite.wsgi.application"
ASGI_APPLICATION = "evalsite.asgi.application"

DATABASES = {"default": read_database("DATABASE_URL", f"sqlite:///{DATA_DIR / 'evalsite.sqlite3'}")}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # IMMEDIATE transactions take SQLite's write lock at BEGIN, so two allocations can never
    # interleave their read and write (SQLite has no SELECT ... FOR UPDATE).
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {"transaction_mode": "IMMEDIATE", "timeout": 20}
    )
DATABASES["default"]["ATOMIC_REQUESTS"] = False
# PostgreSQL connections come from a bounded pool in each process (psycopg_pool through
# Django's "pool" option): under ASGI every request in flight runs in a thread of its own, and
# without a cap a launch burst opened one connection each until PostgreSQL refused clients.
# With the pool a burst queues for a connection; one that waits longer than the timeout is
# answered 503 + Retry-After (evalsite.overload). EVALSITE_DB_POOL_MAX=0 turns the pool off.
DB_POOL_MIN = read_int("EVALSITE_DB_POOL_MIN", 1)
DB_POOL_MAX = read_int("EVALSITE_DB_POOL_MAX", 10)
DB_POOL_TIMEOUT = read_float("EVALSITE_DB_POOL_TIMEOUT", 30.0, low=0.1, high=600.0)
if DB_POOL_MAX and DB_POOL_MIN > DB_POOL_MAX:
    fail("EVALSITE_DB_POOL_MIN", f"at most EVALSITE_DB_POOL_MAX ({DB_POOL_MAX})", str(DB_POOL_MIN))
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql" and DB_POOL_MAX:
    if DATABASES["default"].get("CONN_MAX_AGE"):
        fail(
            "DATABASE_URL", "no conn_max_age with the pool (EVALSITE_DB_POOL_MAX=0 to turn it off)"
        )
    DATABASES["default"]["CONN_MAX_AGE"] = 0  # a pooled connection goes back at request end
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": DB_POOL_MIN,
        "max_size": DB_POOL_MAX,
        "timeout": DB_POOL_TIMEOUT,
    }
# Seconds a client is told to wait (Retry-After) when the server is overloaded.
RETRY_AFTER_SECONDS = read_int("EVALSITE_RETRY_AFTER", 3, minimum=1)

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# The dashboard is behind the admin's login page.
LOGIN_URL = "admin:login"

STATIC_URL = "static/"
WHITENOISE_USE_FINDERS = True
STATICFILES_DIRS = [BASE_DIR / "static"]
# Static files are served by WhiteNoise straight from the finders (few, small files); set
# DJANGO_STATIC_ROOT and run collectstatic to serve them from one folder behind a proxy.
STATIC_ROOT = read_str("DJANGO_STATIC_ROOT") or None

# Behind a TLS-terminating proxy (docs/deployment.md). Production turns every protection on;
# each can be turned off (or tuned) by its variable. The probes answer over plain HTTP
# (evalsite.health.probes_middleware).
SECURE_PROXY_SSL_HEADER = (
    ("HTTP_X_FORWARDED_PROTO", "https") if read_bool("EVALSITE_BEHIND_PROXY", PRODUCTION) else None
)
SECURE_SSL_REDIRECT = read_bool("DJANGO_SECURE_SSL_REDIRECT", PRODUCTION)
SECURE_HSTS_SECONDS = read_int("DJANGO_SECURE_HSTS_SECONDS", 31_536_000 if PRODUCTION else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = read_bool("DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS", PRODUCTION)
SECURE_HSTS_PRELOAD = read_bool("DJANGO_SECURE_HSTS_PRELOAD", PRODUCTION)
SESSION_COOKIE_SECURE = read_bool("DJANGO_SESSION_COOKIE_SECURE", PRODUCTION)
CSRF_COOKIE_SECURE = read_bool("DJANGO_CSRF_COOKIE_SECURE", PRODUCTION)

# Celery: eager in-process when no broker is configured (make demo, plain pytest).
BROKER_SCHEMES = ("redis", "rediss", "amqp", "amqps", "pyamqp")
CELERY_BROKER_URL = read_url("CELERY_BROKER_URL", "", schemes=BROKER_SCHEMES)
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_RESULT_BACKEND = read_url("CELERY_RESULT_BACKEND", "", schemes=("redis", "rediss", "rpc"))
# With Redis as broker, a task whose worker died is delivered again after this many seconds
# (kombu's default is an hour). It must exceed the longest task: hard limit 360 s.
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": read_int("CELERY_VISIBILITY_TIMEOUT", 600, minimum=361)
}

# Channels: Redis when REDIS_URL is set, in-memory otherwise.
REDIS_URL = read_url("REDIS_URL", "", schemes=("redis", "rediss"))
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            # redis-py's default socket timeout (5 s) equals channels-redis's blocking-read
            # timeout (5 s): an idle consumer's read would then fail with a TimeoutError and
            # kill the socket. The read must outlast the blocking pop.
            "CONFIG": {"hosts": [{"address": REDIS_URL, "socket_timeout": 30}]},
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

# How long a worker holds an item before it returns to the pool, and how long an accepted
# assignment may stay idle before it counts as abandoned.
EVALSITE_LEASE_SECONDS = read_int("EVALSITE_LEASE_SECONDS", 15 * 60, minimum=1)
EVALSITE_ABANDON_SECONDS = read_int("EVALSITE_ABANDON_SECONDS", 2 * 60 * 60, minimum=1)

# Logs: plain lines, or one JSON object a line for a log collector (EVALSITE_LOG_JSON=true).
LOG_LEVEL = read_str("LOG_LEVEL", "WARNING").upper()
if LOG_LEVEL not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
    fail("LOG_LEVEL", "DEBUG, INFO, WARNING, ERROR or CRITICAL", LOG_LEVEL)
LOG_JSON = read_bool("EVALSITE_LOG_JSON", False)
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "json": {"()": "evalsite.observability.JsonFormatter"},
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "json" if LOG_JSON else "plain",
        }
    },
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
}

# Error reporting (off unless SENTRY_DSN is set): Django, Celery and the Channels consumers.
SENTRY_DSN = read_url("SENTRY_DSN", "", schemes=("https", "http"))
SENTRY_ENVIRONMENT = read_str("SENTRY_ENVIRONMENT", "production" if PRODUCTION else "local")
SENTRY_TRACES_SAMPLE_RATE = read_float("SENTRY_TRACES_SAMPLE_RATE", 0.0, low=0.0, high=1.0)

# Prometheus metrics at /metrics (off unless EVALSITE_METRICS=true); a bearer token if set.
# Several web processes share PROMETHEUS_MULTIPROC_DIR (docs/deployment.md).
METRICS = read_bool("EVALSITE_METRICS", False)
METRICS_TOKEN = read_str("EVALSITE_METRICS_TOKEN")
METRICS_PORT = read_int("EVALSITE_METRICS_PORT", 0)  # a Celery worker's own exporter
if METRICS:
    MIDDLEWARE.insert(1, "evalsite.observability.metrics_middleware")

MTURK_SUBMIT_HOSTS = read_list(
    "MTURK_SUBMIT_HOSTS", ["https://www.mturk.com", "https://workersandbox.mturk.com"]
)

# Crowd providers (docs/providers.md). The worker URL that HITs and studies point at is
# EVALSITE_PUBLIC_URL + /task/<slug>/. MTurk: credentials from the usual AWS variables
# (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY); the sandbox unless a launch says --production;
# MTURK_ENDPOINT_URL points at any MTurk-API-compatible endpoint. Prolific: an API token.
EVALSITE_PUBLIC_URL = read_url(
    "EVALSITE_PUBLIC_URL", "http://localhost:8000", schemes=("https", "http")
)
MTURK_ENDPOINT_URL = read_url("MTURK_ENDPOINT_URL", "", schemes=("https", "http"))
MTURK_REGION = read_str("MTURK_REGION", "us-east-1")
PROLIFIC_API_TOKEN = read_str("PROLIFIC_API_TOKEN")
PROLIFIC_API_URL = read_url(
    "PROLIFIC_API_URL", "https://api.prolific.com", schemes=("https", "http")
)
PROLIFIC_COMPLETE_URL = read_url(
    "PROLIFIC_COMPLETE_URL",
    "https://app.prolific.com/submissions/complete",
    schemes=("https", "http"),
)
PROLIFIC_WORKSPACE_ID = read_str("PROLIFIC_WORKSPACE_ID")
PROLIFIC_PROJECT_ID = read_str("PROLIFIC_PROJECT_ID")
# Prolific's service fee on rewards and bonuses (VAT included where due): set your plan's.
PROLIFIC_FEE_RATE = str(read_float("PROLIFIC_FEE_RATE", 0.43, low=0.0, high=1.0))

if SENTRY_DSN:
    from evalsite.observability import sentry_init

    sentry_init(
        dsn=SENTRY_DSN,
        environment=SENTRY_ENVIRONMENT,
        traces_sample_rate=SENTRY_TRACES_SAMPLE_RATE,
    )
