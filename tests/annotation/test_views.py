"""The worker pages, driven over HTTP with Django's test client."""

import json
import re
from html import escape

import pytest
from django.test import RequestFactory
from django.urls import reverse

from annotation.models import Assignment, Judgment
from tests.factories import CampaignFactory, ItemFactory, likert_payload
from workerpages.views import server_error

ANSWERS = {"empathy": "4", "relevance": "3", "fluency": "5"}
MTURK = {
    "assignmentId": "ASSIGN1",
    "hitId": "HIT1",
    "workerId": "AWORKER",
    "turkSubmitTo": "https://workersandbox.mturk.com",
}


def task_url(campaign, **params):
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return reverse("annotation:task", args=[campaign.slug]) + "?" + query


def submit_url(campaign, **params):
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return reverse("annotation:task_submit", args=[campaign.slug]) + "?" + query


def form_of(response):
    html = response.content.decode()
    token = re.search(r'name="token" value="([^"]+)"', html).group(1)
    item = re.search(r'name="item" value="(\d+)"', html).group(1)
    return token, item


def test_task_page_shows_context_response_questions_and_progress(client, campaign):
    response = client.get(task_url(campaign, workerId="w1"))
    assert response.status_code == 200
    html = response.content.decode()
    item = campaign.items.get(pk=form_of(response)[1])
    assert escape(item.payload["response"]) in html
    assert escape(item.payload["context"][0]) in html
    assert "Did the responses show understanding of the feelings" in html
    assert "Item 1 of 5" in html
    assert html.count('type="radio"') == 15


def test_form_submission_stores_answers_and_moves_on(client, campaign):
    page = client.get(task_url(campaign, workerId="w1"))
    token, item = form_of(page)
    response = client.post(
        submit_url(campaign, workerId="w1"), {"token": token, "item": item, **ANSWERS}
    )
    assert response.status_code == 302
    assert Judgment.objects.filter(item_id=item).count() == 3
    nxt = client.get(response["Location"])
    assert "Item 2 of 5" in nxt.content.decode()
    assert form_of(nxt)[1] != item


def test_double_submission_stores_once(client, campaign):
    token, item = form_of(client.get(task_url(campaign, workerId="w1")))
    for _ in range(2):
        r = client.post(
            submit_url(campaign, workerId="w1"), {"token": token, "item": item, **ANSWERS}
        )
        assert r.status_code == 302
    assert Judgment.objects.count() == 3


@pytest.mark.parametrize(
    ("answers", "message"),
    [
        ({"empathy": "4", "relevance": "3"}, "Please choose a rating."),
        ({**ANSWERS, "fluency": "9"}, "between 1 and 5"),
        ({**ANSWERS, "fluency": "x"}, "whole number"),
        ({**ANSWERS, "fluency": "²"}, "whole number"),  # str.isdigit() takes it, int() not
        ({**ANSWERS, "fluency": "①"}, "whole number"),
    ],
)
def test_malformed_form_answers_get_400_with_the_message_and_store_nothing(
    client, campaign, answers, message
):
    token, item = form_of(client.get(task_url(campaign, workerId="w1")))
    response = client.post(
        submit_url(campaign, workerId="w1"), {"token": token, "item": item, **answers}
    )
    assert response.status_code == 400
    assert message in response.content.decode()
    assert form_of(response)[1] == item  # the same item is shown again
    assert not Judgment.objects.exists()


@pytest.mark.parametrize("item", ["²", "①", "٣"])
def test_an_item_id_of_non_ascii_digits_is_refused_not_a_server_error(client, campaign, item):
    token, _ = form_of(client.get(task_url(campaign, workerId="w1")))
    body = {"token": token, "item": item, "answers": ANSWERS}
    response = _json_post(client, campaign, body)
    assert response.status_code == 404
    assert response.json()["error"] == "This item is not part of this study."
    assert not Judgment.objects.exists()


def test_a_json_body_nested_too_deeply_gets_400_not_a_server_error(client, campaign):
    client.get(task_url(campaign, workerId="w1"))
    response = _json_post(client, campaign, '{"answers": ' + "[" * 5000 + "]" * 5000 + "}")
    assert response.status_code == 400
    assert response.json()["error"] == "The request body is not valid JSON."


def _json_post(client, campaign, body, worker="w1"):
    return client.post(
        submit_url(campaign, workerId=worker),
        data=json.dumps(body) if not isinstance(body, str) else body,
        content_type="application/json",
    )


def test_json_api_accepts_answers(client, campaign):
    token, item = form_of(client.get(task_url(campaign, workerId="w1")))
    response = _json_post(client, campaign, {"token": token, "item": item, "answers": ANSWERS})
    assert response.status_code == 200
    assert response.json() == {"ok": True, "stored": True, "assignment_done": False}


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ("{not json", 400, "not valid JSON"),
        ("[1, 2]", 400, "JSON object"),
        ({"item": "ITEM", "answers": ANSWERS}, 403, "not valid"),
        ({"token": "TOKEN", "item": "ITEM", "answers": "4"}, 400, "'answers' must be"),
        ({"token": "TOKEN", "item": 99999999, "answers": ANSWERS}, 404, "not part of this study"),
        ({"token": "TOKEN", "item": "ITEM", "answers": {**ANSWERS, "empathy": 7}}, 400, "between"),
    ],
)
def test_json_api_refuses_bad_requests_with_a_clear_message(
    client, campaign, body, status, message
):
    token, item = form_of(client.get(task_url(campaign, workerId="w1")))
    if isinstance(body, dict):
        body = {k: (token if v == "TOKEN" else item if v == "ITEM" else v) for k, v in body.items()}
    response = _json_post(client, campaign, body)
    assert response.status_code == status
    assert message in response.json()["error"] + json.dumps(response.json().get("fields", {}))
    assert not Judgment.objects.exists()


def test_another_workers_assignment_is_refused(client, campaign):
    token, item = form_of(client.get(task_url(campaign, workerId="alice")))
    response = _json_post(
        client, campaign, {"token": token, "item": item, "answers": ANSWERS}, worker="mallory"
    )
    assert response.status_code == 403
    assert "another worker" in response.json()["error"]
    assert not Judgment.objects.exists()


def test_missing_worker_identity_is_a_clear_400(client, campaign):
    response = client.get(reverse("annotation:task", args=[campaign.slug]))
    assert response.status_code == 400
    assert "workerId" in response.content.decode()


@pytest.mark.parametrize("worker", ["a b", "x" * 200, "<script>"])
def test_malformed_worker_id_is_refused(client, campaign, worker):
    response = client.get(reverse("annotation:task", args=[campaign.slug]), {"workerId": worker})
    assert response.status_code == 400


def test_unknown_campaign_is_404(client, db):
    assert client.get("/task/nope/?workerId=w1").status_code == 404


def test_unknown_draft_paused_and_finished_studies_answer_the_same_page(client, db):
    pages = set()
    for status in ("draft", "paused", "finished", None):
        campaign = CampaignFactory.build(slug="nothing-here")
        if status:
            campaign = CampaignFactory(status=status, slug=f"s-{status}")
            ItemFactory(campaign=campaign)
        for url in (task_url(campaign, workerId="w1"), submit_url(campaign, workerId="w1")):
            response = client.post(url, {}) if "submit" in url else client.get(url)
            pages.add((response.status_code, response.content))
    (status_code, body), *others = pages
    assert others == [] and status_code == 404
    assert "no open study at this address" in body.decode()


def test_a_draft_is_previewed_by_staff_only(client, admin_client, db):
    draft = CampaignFactory(status="draft")
    ItemFactory(campaign=draft, payload=likert_payload(7))
    preview = {**MTURK, "assignmentId": "ASSIGNMENT_ID_NOT_AVAILABLE"}
    unknown = client.get(task_url(CampaignFactory.build(slug="nothing-here"), **preview))
    anonymous = client.get(task_url(draft, **preview))
    assert anonymous.status_code == unknown.status_code == 404
    assert anonymous.content == unknown.content  # a draft looks like no study at all
    assert admin_client.get(task_url(draft, **preview)).status_code == 200


def test_mturk_preview_shows_the_task_and_accepts_nothing(client, campaign):
    preview = {**MTURK, "assignmentId": "ASSIGNMENT_ID_NOT_AVAILABLE"}
    page = client.get(task_url(campaign, **preview))
    assert page.status_code == 200
    assert "Preview" in page.content.decode()
    assert "disabled" in page.content.decode()
    post = client.post(submit_url(campaign, **preview), {"item": "1", **ANSWERS})
    assert post.status_code == 403
    assert not Assignment.objects.exists() and not Judgment.objects.exists()


def test_mturk_worker_finishes_with_a_post_to_external_submit(client, db):
    campaign = CampaignFactory(items_per_assignment=1)
    ItemFactory(campaign=campaign)
    token, item = form_of(client.get(task_url(campaign, **MTURK)))
    response = client.post(submit_url(campaign, **MTURK), {"token": token, "item": item, **ANSWERS})
    done = client.get(response["Location"])
    html = done.content.decode()
    assert 'action="https://workersandbox.mturk.com/mturk/externalSubmit"' in html
    assert 'name="assignmentId" value="ASSIGN1"' in html
    assert Assignment.objects.get().provider_assignment_id == "ASSIGN1"


def test_mturk_submit_host_must_be_an_mturk_host(client, campaign):
    response = client.get(task_url(campaign, **{**MTURK, "turkSubmitTo": "https://evil.example"}))
    assert response.status_code == 400
    assert "turkSubmitTo" in response.content.decode()


def test_local_worker_gets_a_completion_code_at_the_end(client, db):
    campaign = CampaignFactory(items_per_assignment=1)
    ItemFactory(campaign=campaign)
    token, item = form_of(client.get(task_url(campaign, workerId="w1")))
    response = client.post(
        submit_url(campaign, workerId="w1"), {"token": token, "item": item, **ANSWERS}
    )
    done = client.get(response["Location"])
    assert Assignment.objects.get().completion_code in done.content.decode()


def test_worker_with_nothing_left_gets_a_clear_end_screen(client, db):
    campaign = CampaignFactory(redundancy=1)
    ItemFactory(campaign=campaign)
    client.get(task_url(campaign, workerId="first"))
    response = client.get(task_url(campaign, workerId="second"))
    assert response.status_code == 200
    assert "No more items" in response.content.decode()
    assert not Assignment.objects.filter(worker__external_id="second").exists()


def test_worker_pages_may_be_framed_only_by_allowed_hosts(client, campaign):
    response = client.get(task_url(campaign, workerId="w1"))
    csp = response["Content-Security-Policy"]
    assert csp.startswith("frame-ancestors ")
    assert "https://workersandbox.mturk.com" in csp and "*" not in csp
    assert "X-Frame-Options" not in response


def test_health_check(client, db):
    assert client.get("/health/").json() == {"status": "ok"}


def test_a_server_error_on_a_worker_page_can_still_be_shown_in_the_provider_s_frame(
    client, campaign, monkeypatch, settings
):
    def broken(**kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr("workerpages.views.worker_visit", broken)
    client.raise_request_exception = False
    page = client.get(task_url(campaign, workerId="w1"))
    assert page.status_code == 500
    assert "X-Frame-Options" not in page.headers
    assert "frame-ancestors" in page.headers["Content-Security-Policy"]
    assert "answers so far are saved" in page.content.decode()
    staff = server_error(RequestFactory().get("/dashboard/c/x/"))  # staff pages: not framed
    assert "Content-Security-Policy" not in staff.headers
    assert not getattr(staff, "xframe_options_exempt", False)
