"""gunicorn's configuration of the production web server (docs/deployment.md).

gunicorn manages several uvicorn worker processes behind one port; each serves the ASGI
application (HTTP and the live chat websockets). ``WEB_CONCURRENCY`` sets the number of
processes (gunicorn reads it itself), ``EVALSITE_BIND`` the address.
"""

import os

bind = os.environ.get("EVALSITE_BIND", "0.0.0.0:8000")
worker_class = "uvicorn_worker.UvicornWorker"
workers = int(os.environ.get("WEB_CONCURRENCY", "2"))
# A live chat socket stays open for minutes; the worker's timeout is its heartbeat to the
# arbiter, not a request limit (uvicorn serves requests asynchronously).
timeout = 60
graceful_timeout = 30
keepalive = 5
accesslog = "-"
errorlog = "-"
# The TLS-terminating proxy sets X-Forwarded-For/-Proto; trust it from these addresses.
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1")


def on_starting(server: object) -> None:
    """Read the settings in the arbiter, before any worker starts: a malformed variable
    stops the server with one line instead of workers failing to boot one after another."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
    import django

    django.setup()


def child_exit(server: object, worker: object) -> None:
    """Prometheus' multiprocess mode: forget a dead worker's live values."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)  # type: ignore[attr-defined]
