"""A pytest plugin loaded before Django (``-p tests.environment`` in pyproject.toml): with no
broker configured, the suite runs Celery tasks inside the test process, which the settings
allow only when ``EVALSITE_TASKS_INLINE`` asks for it (as ``manage.py`` does for commands);
and the translations are compiled if they are not yet."""

import os
import uuid

from evalsite.env import tasks_inline_unless_brokered
from evalsite.translations import catalogs_compile

tasks_inline_unless_brokered()
# The translations' .mo files are generated (not committed): write any missing or outdated
# one before Django reads its catalogs, so that `pytest` alone works on a fresh clone.
catalogs_compile()
# Each run's cache keys apart from earlier runs' in a shared Redis: a fresh test database
# gives its campaigns the ids an earlier run used, and their counters (rate limits, open-link
# arrivals per hour) must not carry over.
os.environ["EVALSITE_CACHE_PREFIX"] = f"evalsite-test-{uuid.uuid4().hex[:12]}"
