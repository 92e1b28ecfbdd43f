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
from evalsite import inputs
from modelhub.services import endpoint_register
from tests.factories import CampaignFactory, ItemFactory

MAX_EXAMPLES = 12
# Not checked: that every schema-valid request is accepted. Settings, parameters and item
# payloads are free-form in the schema and checked by the services, whose refusal (400 with
# the error body) is the documented answer.


# The schema the server publishes (test_schema.py checks that /api/v1/openapi.json serves
# exactly this), loaded at collection so that each operation is a test of its own; the
# requests go to the live server. (schemathesis' lazy fixture loader does not run on
# pytest 9: it sets a node attribute pytest removed.)
schema = schemathesis.openapi.from_dict(
    json.loads(json.dumps(api.get_openapi_schema())),  # as served: status codes as text
    config=schemathesis.Config.from_dict({"generation": {"allow-x00": False}}),
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
def test_the_api_survives_schemathesis(case, live_server, key, study) -> None:
    headers = {"Authorization": f"Bearer {key}"}
    response = case.call(base_url=live_server.url, headers=headers)
    if response.status_code == 400 and inputs.MESSAGE in response.text:
        return  # a NUL in a form field: evalsite.inputs refuses it first
    case.validate_response(
        response,
        headers=headers,
        excluded_checks=[schemathesis.checks.positive_data_acceptance],
        transport_kwargs={"base_url": live_server.url, "headers": headers},
    )
