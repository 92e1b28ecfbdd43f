"""Django settings, read only from the environment (``evalsite.env``).

Every variable has an embedded default for local use (``make demo``, plain ``pytest``):
SQLite in ``EVALSITE_DATA_DIR``, Celery tasks run eagerly in-process, the in-memory channel
layer. Production sets ``EVALSITE_PRODUCTION=true`` and ``DATABASE_URL``,
``CELERY_BROKER_URL``, ``REDIS_URL``: see ``.env.example`` and docs/deployment.md. A malformed
variable stops the process at start with one line naming it.
"""

import secrets
from datetime import timedelta
from pathlib import Path

import environ

from evalsite.env import (
    fail,
    read_bool,
    read_database,
    read_float,
    read_hooks,
    read_int,
    read_list,
    read_storage,
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
    "recruitment",  # publishing on crowd providers, the ledger, review (docs/providers.md)
    "chat",  # live chats on websockets (docs/chat.md)
    "judges",  # LLM judges as model raters (docs/modelhub.md, "LLM judges")
    "modelhub",
    "workerpages",  # the worker's pages (task, consent, training, chat, end)
    "dashboard",
    "api",
    "webhooks",  # researchers' URLs told about campaign events (docs/api.md, "Webhooks")
    "ninja",  # the REST API's docs page serves its own static files (no CDN)
    "evalsite.apps.EvalsiteConfig",
    "axes",  # admin/dashboard login lockout (docs/deployment.md, "Rate limits")
]

MIDDLEWARE = [
    "evalsite.health.probes_middleware",  # /health/, /ready/, /metrics: before the host check
    "evalsite.csp.csp_middleware",  # script-src 'self' on every page, the 503 page's too
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
    "axes.middleware.AxesMiddleware",  # last, as django-axes requires
]

ROOT_URLCONF = "evalsite.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        # Each protocol's worker-page template lives in its folder: "<protocol>/task.html".
        "DIRS": [BASE_DIR / "templates", BASE_DIR / "annotation" / "protocols"],
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
# The worker pages' languages; each campaign picks one (Campaign.language). The dashboard
# stays English: there is no LocaleMiddleware (docs/protocols.md, "Languages").
LANGUAGES = [("en", "English"), ("de", "Deutsch")]
LOCALE_PATHS = [BASE_DIR / "locale"]
USE_TZ = True

# The dashboard is behind the admin's login page.
LOGIN_URL = "admin:login"

# Login lockout (django-axes, attempts in the database): after EVALSITE_LOGIN_FAILURES wrong
# passwords for one username from one address, that pair is refused for the cool-off, with
# a 429 page (evalsite.lockout); a right password before the lockout resets the count.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = read_int("EVALSITE_LOGIN_FAILURES", 5, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=read_int("EVALSITE_LOGIN_COOLOFF_MINUTES", 15, minimum=1))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "evalsite.lockout.lockout_response"
AXES_CLIENT_IP_CALLABLE = "evalsite.lockout.login_address"
AXES_VERBOSE = False
# Limits per network, not per address (evalsite.addresses.address_for_limits): an IPv6 address
# counts by its network of this many bits (one host or customer usually holds a whole /64, so
# rotating inside it must not reset a limit); IPv4 by the address.
EVALSITE_IPV6_PREFIX = read_int("EVALSITE_IPV6_PREFIX", 64, minimum=32, maximum=128)

STATIC_URL = "static/"
WHITENOISE_USE_FINDERS = True
STATICFILES_DIRS = [BASE_DIR / "static"]
# Static files are served by WhiteNoise straight from the finders (few, small files); set
# DJANGO_STATIC_ROOT and run collectstatic to serve them from one folder behind a proxy.
STATIC_ROOT = read_str("DJANGO_STATIC_ROOT") or None

# Files one process writes for another (the dashboard's job files: reports, exports), in
# storages["shared"]: an S3-compatible bucket when EVALSITE_STORAGE_URL names one, so that web
# and workers on different hosts share them; a folder under DATA_DIR otherwise, shared only by
# processes that share DATA_DIR (docs/deployment.md, "Files and object storage").
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    "shared": read_storage("EVALSITE_STORAGE_URL", DATA_DIR / "files"),
}

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

# Celery: tasks go to the broker. They run inside the process that queues them (model
# inference in a web request included) only when EVALSITE_TASKS_INLINE says so: manage.py sets
# it when no broker is configured (the demo, commands, runserver), the test suite likewise; a
# web server (asgi/wsgi) or a Celery worker without a broker and without it refuses to start.
BROKER_SCHEMES = ("redis", "rediss", "amqp", "amqps", "pyamqp")
CELERY_BROKER_URL = read_url("CELERY_BROKER_URL", "", schemes=BROKER_SCHEMES)
TASKS_INLINE = read_bool("EVALSITE_TASKS_INLINE", False)
if not CELERY_BROKER_URL and not TASKS_INLINE:
    fail(
        "CELERY_BROKER_URL",
        "a broker URL (redis://… or amqp://…), or EVALSITE_TASKS_INLINE=1 to run tasks inside "
        "this process (development only: a web request then runs model inference itself)",
    )
CELERY_TASK_ALWAYS_EAGER = TASKS_INLINE
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_RESULT_BACKEND = read_url("CELERY_RESULT_BACKEND", "", schemes=("redis", "rediss", "rpc"))
# With Redis as broker, a task whose worker died is delivered again after this many seconds
# (kombu's default is an hour). It must exceed the longest task: hard limit 360 s.
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": read_int("CELERY_VISIBILITY_TIMEOUT", 600, minimum=361)
}

# Webhooks (docs/api.md): receivers at private, loopback or link-local addresses are refused
# in production (a researcher's URL must not reach the site's own network) unless this allows
# them, e.g. for a receiver inside the same private network.
WEBHOOKS_ALLOW_PRIVATE = read_bool("EVALSITE_WEBHOOKS_ALLOW_PRIVATE", not PRODUCTION)
# One attempt's whole time, connect to the answer's last byte read, in seconds (docs/api.md).
WEBHOOKS_DEADLINE = read_float("EVALSITE_WEBHOOKS_DEADLINE", 10.0, low=0.5, high=60.0)

# The moderation hooks an arena study may name (docs/chat.md, "Arena"): name=module:function or
# name=https://address, ';' between. A study can only pick among these.
EVALSITE_MODERATION = read_hooks("EVALSITE_MODERATION")

# Channels: Redis when REDIS_URL is set, in-memory otherwise.
REDIS_URL = read_url("REDIS_URL", "", schemes=("redis", "rediss"))
# The pool: connections to Redis per process (per event loop), and how long a layer call waits
# for one before it fails (noted, never fatal); docs/chat.md, "Pool sizes", has the arithmetic.
CHANNEL_POOL_MAX = read_int("EVALSITE_CHANNEL_POOL_MAX", 20, minimum=2)
CHANNEL_POOL_TIMEOUT = read_float("EVALSITE_CHANNEL_POOL_TIMEOUT", 5.0, low=0.1, high=60.0)
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            # channels-redis, kept alive through a Redis outage (chat/layer.py).
            "BACKEND": "chat.layer.ChatRedisChannelLayer",
            # redis-py's default socket timeout (5 s) equals channels-redis's blocking-read
            # timeout (5 s): an idle consumer's read would then fail with a TimeoutError and
            # kill the socket. The read must outlast the blocking pop. A connection attempt
            # to a Redis that is down must fail fast rather than hold a consumer.
            "CONFIG": {
                "hosts": [
                    {"address": REDIS_URL, "socket_timeout": 30, "socket_connect_timeout": 2}
                ],
                "pool_max": CHANNEL_POOL_MAX,
                "pool_timeout_s": CHANNEL_POOL_TIMEOUT,
            },
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

# The cache (rate-limit counters, the dashboard's item counts): Redis when REDIS_URL is set, so
# that every web process counts together; this process's memory otherwise. While Redis is down
# each process serves the cache from a bounded memory of its own (evalsite.cache); short
# timeouts bound the call that finds out. Sessions stay in the database (Django's default
# SESSION_ENGINE), so a Redis outage logs nobody out.
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "evalsite.cache.OutageTolerantRedisCache",
            "LOCATION": REDIS_URL,
            # Keys of several sites (or test runs) sharing one Redis stay apart.
            "KEY_PREFIX": read_str("EVALSITE_CACHE_PREFIX", "evalsite"),
            # One connection pool per process, not one per request (evalsite.cache).
            "OPTIONS": {
                "pool_class": "evalsite.cache.SharedConnectionPool",
                "socket_connect_timeout": 0.25,
                "socket_timeout": 0.5,
            },
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# Rate limits of the worker pages and the chat socket (annotation.ratelimits); a campaign's own
# settings take precedence. Requests a minute to one campaign from one address and from one
# worker, arrivals (task, chat and end pages) and answers counted apart; chat frames a second
# per socket, with a burst. 0 turns a limit off.
RATE_PER_IP = read_int("EVALSITE_RATE_PER_IP", 120)
RATE_PER_WORKER = read_int("EVALSITE_RATE_PER_WORKER", 30)
CHAT_FRAMES_PER_SECOND = read_int("EVALSITE_CHAT_FRAMES_PER_SECOND", 5)
CHAT_FRAME_BURST = read_int("EVALSITE_CHAT_FRAME_BURST", 20, minimum=1)

# How long a worker holds an item before it returns to the pool, and how long an accepted
# assignment may stay idle before it counts as abandoned.
EVALSITE_LEASE_SECONDS = read_int("EVALSITE_LEASE_SECONDS", 15 * 60, minimum=1)
EVALSITE_ABANDON_SECONDS = read_int("EVALSITE_ABANDON_SECONDS", 2 * 60 * 60, minimum=1)
# An open-link arrival's first item is held at most this long, until its first answer.
OPEN_FIRST_LEASE_SECONDS = read_int("EVALSITE_OPEN_FIRST_LEASE_SECONDS", 300, minimum=10)
# How long a worker page's signed assignment token stays valid (each page gets a fresh one).
TOKEN_MAX_AGE = read_int("EVALSITE_TOKEN_MAX_AGE", 24 * 60 * 60, minimum=60)

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
    # Worker ids in logged URLs (?workerId=, PROLIFIC_PID=) become "[worker]": a log outlives
    # a worker's erasure (docs/protocols.md, "Withdrawal and erasure").
    "filters": {"worker_ids": {"()": "evalsite.observability.WorkerIdFilter"}},
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "json" if LOG_JSON else "plain",
            "filters": ["worker_ids"],
        }
    },
    "loggers": {  # access logs that have handlers of their own (gunicorn's, runserver's)
        "uvicorn.access": {"filters": ["worker_ids"]},
        "gunicorn.access": {"filters": ["worker_ids"]},
        "django.server": {"handlers": ["console"], "filters": ["worker_ids"], "propagate": False},
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
# The ISO 4217 code of the money a local study's ledger records and a Prolific workspace pays
# in (MTurk pays in USD whatever this says); every amount the dashboard shows names it.
EVALSITE_CURRENCY = read_str("EVALSITE_CURRENCY", "USD")
if not (
    len(EVALSITE_CURRENCY) == 3 and EVALSITE_CURRENCY.isascii() and EVALSITE_CURRENCY.isalpha()
):
    fail("EVALSITE_CURRENCY", "a three-letter ISO 4217 code: USD, GBP, EUR…", EVALSITE_CURRENCY)
EVALSITE_CURRENCY = EVALSITE_CURRENCY.upper()
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
