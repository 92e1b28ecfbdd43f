"""schemathesis (a fuzzer we did not write) against the published schema on a live server.

Every operation gets schema-valid and schema-invalid requests with a valid key; no answer
may be a 5xx, and every answer must conform to the schema (status codes, content types,
bodies). The schema's example slug (``study-1``) is a real campaign with judgments, so
examples reach the services, not only the 404 of an unknown slug.

Strings carry no NUL: a NUL in a URL or a form field is refused by ``evalsite.inputs``
before the API (with the API's error body, but before the key is checked, so a keyless
request with one gets 400, not 401); NUL in JSON bodies is the API's own 400 (both tested in
test_campaigns.py). A multipart file sent without a file name is a form field to Django, so
file contents with a NUL still meet that middleware: such an answer is recognised and
skipped.
"""

import json

import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from annotation.services.datasets import dataset_import
from annotation.simulation import crowd_make, crowd_run
from api.main import api
from api.models import IdempotencyKey
from evalsite import inputs
from modelhub.services import endpoint_register
from tests.factories import CampaignFactory, ItemFactory

MAX_EXAMPLES = 12
# Every check runs, positive_data_acceptance included: a request the schema calls valid is
# accepted (2xx), or refused for the state it meets (404 unknown, 409 conflict). Where what
# is accepted depends on more than the request (a protocol's parameters or payload, a
# backend's configuration, a file's contents, what the campaign holds), a 400 from the
# service is the documented answer too, for that operation only; each says why.
STATE_REFUSALS = {
    "campaign_create": "parameters are the protocol's, each protocol checks its own",
    "items_post": "an item's payload and gold are the campaign's protocol's",
    "items_upload": "the files' contents are the wizard's formats, read by their readers",
    "export_start": "dialogues export from a campaign that has some (parlai: dialogues only)",
    "workers_approve": "the pseudonyms must be the campaign's workers with work to review",
    "webhook_add": "a campaign has at most 10 endpoints (webhooks.services)",
    "model_register": "the backend checks its configuration by being built from it",
    "generation_start": "max_turns bounds the turns of each context in the same body",
    "dataset_upload": "the file's contents are its format's, read by its reader",
}
ACCEPTED = ["2xx", "3xx", "401", "403", "404", "409", "429", "5xx"]
CONFIG = {
    "generation": {"allow-x00": False},
    "operations": [
        {
            "include-operation-id": operation,
            "checks": {"positive_data_acceptance": {"expected-statuses": [*ACCEPTED, "400"]}},
        }
        for operation in STATE_REFUSALS
    ],
}


# The schema the server publishes (test_schema.py checks that /api/v1/openapi.json serves
# exactly this), loaded at collection so that each operation is a test of its own; the
# requests go to the live server. (schemathesis' lazy fixture loader does not run on
# pytest 9: it sets a node attribute pytest removed.)
schema = schemathesis.openapi.from_dict(
    json.loads(json.dumps(api.get_openapi_schema())),  # as served: status codes as text
    config=schemathesis.Config.from_dict(CONFIG),
)


@pytest.fixture
def study(researcher, tmp_path) -> None:
    """The schema's examples: a live campaign with a few judgments (``study-1``), a model
    (``generic-bot``) and a data set (``dialogues-1``)."""
    campaign = CampaignFactory(owner=researcher, slug="study-1", items_per_assignment=2)
    ItemFactory.create_batch(4, campaign=campaign)
    crowd_run(campaign=campaign, workers=crowd_make(good=2, noisy=1, spammer=0), seed=1)
    endpoint_register(name="generic-bot", backend="generic_bot")
    path = tmp_path / "dialogues-1.jsonl"
    path.write_text('{"dialogue": "d1", "utterances": ["Hi", "Hello"]}\n', encoding="utf-8")
    dataset_import(name="dialogues-1", fmt="jsonl", paths=[path])


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    derandomize=True,  # the same cases every run: a failure is a bug, never a draw
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
def test_the_api_survives_schemathesis(case, live_server, key, study, settings) -> None:
    # The fuzzer's hosts resolve nowhere: the URL's form is checked, not its address
    # (test_webhooks_api.py refuses a private one).
    settings.WEBHOOKS_ALLOW_PRIVATE = True
    # Each generated request is a new one: a key the fuzzer draws again for another body is
    # its own reuse, answered 422 (test_webhooks_api.py, test_jobs_workers.py).
    IdempotencyKey.objects.all().delete()
    headers = {"Authorization": f"Bearer {key}"}
    response = case.call(base_url=live_server.url, headers=headers)
    if response.status_code == 400 and inputs.MESSAGE in response.text:
        return  # a NUL in a form field: evalsite.inputs refuses it first
    case.validate_response(
        response,
        headers=headers,
        transport_kwargs={"base_url": live_server.url, "headers": headers},
    )
