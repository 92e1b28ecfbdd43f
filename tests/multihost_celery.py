"""The Celery app as tests/test_multihost.py's worker hosts run it: the project's app, with the
Redis broker's visibility timeout cut from 600 s to seconds and the sweep that hands out a
dead worker's unacknowledged tasks run every second, so that the test sees a killed host's job
delivered again while it waits. Production keeps the timeout above the longest task
(``CELERY_VISIBILITY_TIMEOUT``, docs/deployment.md, "Scaling out")."""

from evalsite.celery import app

# Above the longest task of the test (a report of a few seconds): a task still running is
# never handed to a second worker.
VISIBILITY_TIMEOUT_S = 20

app.conf.broker_transport_options = {
    "visibility_timeout": VISIBILITY_TIMEOUT_S,
    "unacked_restore_interval": 1,
    "unacked_restore_throttle": 1,
}

__all__ = ["app"]
