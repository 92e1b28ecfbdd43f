"""Django settings, read only from the environment (django-environ).

Every variable has an embedded default for local use (``make demo``, plain ``pytest``):
SQLite, Celery tasks run eagerly in-process, the in-memory channel layer. Production and CI
set ``DATABASE_URL``, ``CELERY_BROKER_URL`` and ``REDIS_URL``. See ``.env.example``.
"""

from pathlib import Path

import environ

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

DEBUG = env.bool("DJANGO_DEBUG", default=False)
# The insecure default key is only accepted when DEBUG is on or for local runs; production
# deployments must set DJANGO_SECRET_KEY (checked below).
SECRET_KEY = env.str("DJANGO_SECRET_KEY", default="")
if not SECRET_KEY:
    if env.bool("EVALSITE_PRODUCTION", default=False):
        raise environ.ImproperlyConfigured("Set DJANGO_SECRET_KEY in production.")
    SECRET_KEY = "insecure-local-only-key-do-not-use-in-production"

ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env.list("DJANGO_CSRF_TRUSTED_ORIGINS", default=[])

# Hosts allowed to frame the worker pages (MTurk's ExternalQuestion iframe, Prolific).
WORKER_FRAME_ANCESTORS = env.list(
    "EVALSITE_FRAME_ANCESTORS",
    default=[
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
]

MIDDLEWARE = [
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

DATA_DIR = Path(env.str("EVALSITE_DATA_DIR", default=str(BASE_DIR / "var")))

DATABASES = {
    "default": env.db_url("DATABASE_URL", default=f"sqlite:///{DATA_DIR / 'evalsite.sqlite3'}")
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # IMMEDIATE transactions take SQLite's write lock at BEGIN, so two allocations can never
    # interleave their read and write (SQLite has no SELECT ... FOR UPDATE).
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {"transaction_mode": "IMMEDIATE", "timeout": 20}
    )
DATABASES["default"]["ATOMIC_REQUESTS"] = False

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
STATIC_ROOT = env.str("DJANGO_STATIC_ROOT", default=None)

# Celery: eager in-process when no broker is configured (make demo, plain pytest).
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default="")
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_RESULT_BACKEND = env.str("CELERY_RESULT_BACKEND", default="")
# With Redis as broker, a task whose worker died is delivered again after this many seconds
# (kombu's default is an hour). It must exceed the longest task: hard limit 360 s.
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": env.int("CELERY_VISIBILITY_TIMEOUT", default=600)
}

# Channels: Redis when REDIS_URL is set, in-memory otherwise.
REDIS_URL = env.str("REDIS_URL", default="")
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            # redis-py's default socket timeout (5 s) equals channels-redis's blocking-read
            # timeout (5 s): an idle consumer's read would then fail with a TimeoutError and
            # kill the socket. The read must outlast the blocking pop.
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
EVALSITE_LEASE_SECONDS = env.int("EVALSITE_LEASE_SECONDS", default=15 * 60)
EVALSITE_ABANDON_SECONDS = env.int("EVALSITE_ABANDON_SECONDS", default=2 * 60 * 60)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="WARNING")},
}
MTURK_SUBMIT_HOSTS = env.list(
    "MTURK_SUBMIT_HOSTS",
    default=["https://www.mturk.com", "https://workersandbox.mturk.com"],
)

# Crowd providers (docs/providers.md). The worker URL that HITs and studies point at is
# EVALSITE_PUBLIC_URL + /task/<slug>/. MTurk: credentials from the usual AWS variables
# (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY); the sandbox unless a launch says --production;
# MTURK_ENDPOINT_URL points at any MTurk-API-compatible endpoint. Prolific: an API token.
EVALSITE_PUBLIC_URL = env.str("EVALSITE_PUBLIC_URL", default="http://localhost:8000")
MTURK_ENDPOINT_URL = env.str("MTURK_ENDPOINT_URL", default="")
MTURK_REGION = env.str("MTURK_REGION", default="us-east-1")
PROLIFIC_API_TOKEN = env.str("PROLIFIC_API_TOKEN", default="")
PROLIFIC_API_URL = env.str("PROLIFIC_API_URL", default="https://api.prolific.com")
PROLIFIC_COMPLETE_URL = env.str(
    "PROLIFIC_COMPLETE_URL", default="https://app.prolific.com/submissions/complete"
)
PROLIFIC_WORKSPACE_ID = env.str("PROLIFIC_WORKSPACE_ID", default="")
PROLIFIC_PROJECT_ID = env.str("PROLIFIC_PROJECT_ID", default="")
# Prolific's service fee on rewards and bonuses (VAT included where due): set your plan's.
PROLIFIC_FEE_RATE = env.str("PROLIFIC_FEE_RATE", default="0.43")
