"""The Celery app as the real-worker tests run it: the project's app, with the broker's
visibility timeout cut from an hour to seconds so that a task whose worker was killed is
delivered again while the test waits (production keeps it above the longest task)."""

from evalsite.celery import app

app.conf.broker_transport_options = {
    "visibility_timeout": 3,
    "unacked_restore_interval": 1,
    "unacked_restore_throttle": 1,
}

__all__ = ["app"]
