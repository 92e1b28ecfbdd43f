"""The fuzz harness: every input a worker, a chat socket, a researcher or a file may send,
generated and hostile, with a bounded number of reproducible examples (profile ``fuzz``)."""

import pytest

from tests.fuzz import strategies  # noqa: F401  (registers the hypothesis profile)


@pytest.fixture
def unlimited(settings):
    """Turn the worker pages' rate limits off: the fuzz tests send hundreds of requests from
    one address in seconds, and each must reach the view it fuzzes."""
    settings.RATE_PER_IP = 0
    settings.RATE_PER_WORKER = 0
