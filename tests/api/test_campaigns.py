"""Campaigns through the API: the services' rules, all or nothing, the one error body."""

import json

from annotation.models import AuditLog, Campaign, Item
from tests.api.conftest import error_of
from tests.factories import CampaignFactory, ItemFactory, likert_payload


def _create(api, slug="study-1", **extra):
    body = {"slug": slug, "name": "Study one", "protocol": "likert"} | extra
    return api.post("/campaigns", body)


def test_a_campaign_is_created_as_a_draft_with_the_protocols_defaults_and_settings(
    api, researcher
) -> None:
    response = _create(
        api,
        settings={"redundancy": 4, "reward": "0.50", "budget": 20, "gold_rate": 0.1},
        study={"description": "Rate replies."},
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["status"] == "draft" and body["owner"] == "ada"
    assert body["settings"]["redundancy"] == 4 and body["settings"]["reward"] == "0.50"
    assert body["settings"]["budget"] == "20.00"
    assert body["study"]["description"] == "Rate replies."
    assert "aspects" in body["parameters"] or body["parameters"]  # the protocol's defaults
    campaign = Campaign.objects.get(slug="study-1")
    assert campaign.owner == researcher and campaign.gold_rate == 0.1


def test_a_refused_setting_creates_nothing_and_names_the_field(api) -> None:
    response = _create(api, settings={"redundancy": 4, "gold_rate": 0.9})
    error = error_of(response)
    # The schema bounds each setting (campaign_settings.SETTINGS): refused before the service.
    assert response.status_code == 422 and error["field"] == "gold_rate"
    assert "0.5" in error["message"]
    assert not Campaign.objects.exists()
    error = error_of(_create(api, settings={"colour": "blue"}))
    assert error["field"] == "colour" and "Extra inputs" in error["message"]
    assert error_of(_create(api, protocol="nope"))["code"] == "invalid"
    assert not Campaign.objects.exists()


def test_a_taken_slug_is_a_conflict(api) -> None:
    assert _create(api).status_code == 201
    response = _create(api)
    assert response.status_code == 409 and error_of(response)["code"] == "conflict"


def test_the_list_filters_by_status_and_protocol_and_pages(api, researcher) -> None:
    for n in range(5):
        CampaignFactory(owner=researcher, slug=f"live-{n}")
    CampaignFactory(owner=researcher, slug="paused-1", status=Campaign.Status.PAUSED)
    CampaignFactory(owner=researcher, slug="ssa-1", protocol="ssa", parameters={})
    body = api.get("/campaigns?status=live&protocol=likert&limit=2&offset=1").json()
    assert body["count"] == 5 and len(body["results"]) == 2 and body["offset"] == 1
    assert [c["slug"] for c in api.get("/campaigns?status=paused").json()["results"]] == [
        "paused-1"
    ]
    assert api.get("/campaigns?protocol=ssa").json()["count"] == 1
    error = error_of(api.get("/campaigns?limit=0"))
    assert error["field"] == "limit"
    assert error_of(api.get("/campaigns?status=gone"))["field"] == "status"


def test_settings_change_through_the_settings_service(api) -> None:
    _create(api)
    response = api.patch("/campaigns/study-1", {"settings": {"redundancy": 2, "budget": "5.00"}})
    assert response.status_code == 200, response.content
    assert response.json()["settings"]["redundancy"] == 2
    assert response.json()["settings"]["budget"] == "5.00"
    error = error_of(api.patch("/campaigns/study-1", {"settings": {"redundancy": "two"}}))
    assert error["field"] == "redundancy"
    assert Campaign.objects.get().redundancy == 2


def test_a_live_campaign_changes_only_quality_control(api, researcher) -> None:
    CampaignFactory(owner=researcher, slug="live-1")
    response = api.patch("/campaigns/live-1", {"settings": {"redundancy": 9}})
    # A well-formed change the campaign's state refuses: a conflict, as for its parameters.
    assert response.status_code == 409 and error_of(response)["field"] == "redundancy"
    response = api.patch("/campaigns/live-1", {"parameters": {}})
    assert response.status_code == 409
    assert api.patch("/campaigns/live-1", {"settings": {"gold_rate": 0.2}}).status_code == 200


def test_items_are_added_all_or_nothing_and_a_repeat_adds_nothing(api) -> None:
    _create(api)
    items = [{"key": f"i{n}", "payload": likert_payload(n)} for n in range(3)]
    response = api.post("/campaigns/study-1/items", {"items": items})
    assert response.status_code == 201 and response.json()["added"] == 3
    assert api.post("/campaigns/study-1/items", {"items": items}).json() == {
        "added": 0,
        "skipped": 3,
        "jobs": [],
    }
    bad = [*items, {"key": "i9", "payload": {"context": []}}]
    error = error_of(api.post("/campaigns/study-1/items", {"items": bad}))
    assert "i9" in error["message"]
    assert Item.objects.count() == 3


def test_items_upload_in_the_wizards_jsonl_format(api) -> None:
    _create(api)
    lines = "\n".join(json.dumps({"key": f"u{n}", "payload": likert_payload(n)}) for n in range(4))
    from django.core.files.uploadedfile import SimpleUploadedFile

    upload = SimpleUploadedFile("items.jsonl", lines.encode(), "application/x-ndjson")
    response = api.client.post(
        "/api/v1/campaigns/study-1/items/upload", {"items": upload}, headers=api.headers
    )
    assert response.status_code == 201, response.content
    assert response.json()["added"] == 4
    bad = SimpleUploadedFile("items.jsonl", b'{"key": "x"}\nnot json\n')
    response = api.client.post(
        "/api/v1/campaigns/study-1/items/upload", {"items": bad}, headers=api.headers
    )
    assert response.status_code == 400 and "items.jsonl" in error_of(response)["message"]
    assert Item.objects.count() == 4


def test_the_lifecycle_launch_pause_resume_finish(api) -> None:
    _create(api, settings={"reward": "0.10", "budget": "100.00"})
    error = error_of(api.post("/campaigns/study-1/status", {"status": "live"}))
    assert "items" in error["message"].lower()
    items = [{"key": f"i{n}", "payload": likert_payload(n)} for n in range(4)]
    api.post("/campaigns/study-1/items", {"items": items})
    for status in ("live", "paused", "live", "finished"):
        response = api.post("/campaigns/study-1/status", {"status": status})
        assert response.status_code == 200, response.content
        assert response.json()["status"] == status
    response = api.post("/campaigns/study-1/status", {"status": "live"})
    assert response.status_code == 409 and error_of(response)["code"] == "conflict"
    actions = set(AuditLog.objects.values_list("action", flat=True))
    assert {AuditLog.Action.PAUSE, AuditLog.Action.RESUME, AuditLog.Action.STOP} <= actions


def test_progress_shows_the_dashboards_live_numbers(api, filled) -> None:
    body = api.get(f"/campaigns/{filled.slug}/progress").json()
    assert body["items"] == 6 and body["needed"] == 18 and body["done"] == 18
    assert body["percent"] == 100 and body["report_judgments"] is None


def test_bad_input_gets_the_error_body_never_a_500(api, researcher) -> None:
    ItemFactory(campaign=CampaignFactory(owner=researcher, slug="c-1"))
    cases = [
        api.client.post(
            "/api/v1/campaigns", "{not json", content_type="application/json", headers=api.headers
        ),
        api.post("/campaigns", {"slug": "x", "protocol": "likert", "extra": 1}),
        api.post("/campaigns", {"slug": "x\u0000y", "protocol": "likert"}),
        api.post("/campaigns", {"slug": "x", "protocol": "likert", "settings": {"a\u0000": 1}}),
        api.post("/campaigns", [1, 2]),
        api.get("/campaigns/NOT_A_SLUG"),
        api.get("/campaigns/c-1/jobs/0"),
        api.get("/campaigns/c-1/jobs/99"),
        api.get("/nowhere"),
        api.post("/campaigns/c-1/status", {"status": "sideways"}),
        api.post("/campaigns/c-1/items", {"items": []}),
        api.post(
            "/campaigns/c-1/items", {"items": [{"key": "k", "payload": {}, "attention": True}]}
        ),
    ]
    for response in cases:
        assert 400 <= response.status_code < 500, response.content
        error_of(response)
    assert "NUL" in cases[2].json()["error"]["message"]
    in_query = api.get("/campaigns?status=live\u0000")
    assert in_query.status_code == 400 and "NUL" in error_of(in_query)["message"]
    assert cases[1].json()["error"]["field"] == "extra"
    assert Campaign.objects.count() == 1
