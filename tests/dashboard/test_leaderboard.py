"""The arena's leaderboard page (docs/dashboard.md, "Leaderboard"): the report snapshot's
ranking with intervals, the length-controlled strength beside it, votes per model and per
pair, the win-rate matrix and the operations table; its JSON poll; who may see it."""

from __future__ import annotations

import html
from datetime import timedelta
from unittest import mock

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from annotation.models import Campaign, Dialogue
from annotation.services import campaign_create, campaign_set_status
from chat import arena, arena_votes
from chat.seats import chat_arrive
from dashboard import services
from dashboard.leaderboard import STYLE_COLUMNS
from dashboard.models import Job
from modelhub.services import endpoint_register
from providers import Arrival

pytestmark = pytest.mark.django_db
MODELS = ["bot-x", "bot-y", "bot-z"]
# (model A, model B) of each conversation and its votes, one per exchange.
BATTLES = [
    (("bot-x", "bot-y"), ["a", "a"]),
    (("bot-y", "bot-z"), ["a", "tie"]),
    (("bot-x", "bot-z"), ["a", "both_bad"]),
    (("bot-z", "bot-x"), ["b"]),
]


@pytest.fixture(autouse=True)
def data_dir(settings, tmp_path):
    """Keep the report snapshots' files out of the real var/ folder."""
    settings.DATA_DIR = tmp_path


@pytest.fixture
def ada(client, researcher) -> Client:
    client.force_login(researcher)
    return client


def arena_live(owner: User, slug: str = "arena", models: list[str] = MODELS) -> Campaign:
    """Ada's live arena of registered models."""
    for name in models:
        endpoint_register(name=name, backend="generic_bot")
    campaign = campaign_create(
        slug=slug,
        name="Arena",
        protocol="arena",
        parameters={"models": models},
        controls={"open_links": True},
        owner=owner,
    )
    return campaign_set_status(campaign=campaign, status="live")


def converse(campaign: Campaign, worker: str, pair: tuple[str, str], votes: list[str]) -> None:
    """Hold one conversation of ``pair`` (the draw fixed) through the chat's services: an
    exchange and a vote per entry of ``votes``, then the end that makes them judgments."""
    with mock.patch("chat.seats.pair_next", return_value=pair):
        visit = chat_arrive(campaign=campaign, arrival=Arrival(provider="local", worker_id=worker))
    seat = visit.seat
    later = timezone.now() + timedelta(seconds=30)
    for turn, winner in enumerate(votes, start=1):
        text = "Tell me about the sea." * turn
        sent = arena.arena_message_send(
            seat_id=seat.pk, client_id=f"c{turn}", text=text, signals={}
        )
        side_a = Dialogue.objects.get(pk=seat.dialogue_id)
        for dialogue_id in (side_a.pk, side_a.metadata["battle"]["b"]):
            # Run the reply as the inference task would (unless, after a commit, it just ran).
            arena.arena_reply_run(dialogue_id=dialogue_id, index=sent.index + 1)
            replied = Dialogue.objects.get(pk=dialogue_id).utterances
            assert replied.filter(index=sent.index + 1, speaker="bot").exists()
        arena_votes.vote_submit(seat_id=seat.pk, turn=turn, answers={"winner": winner}, now=later)
    arena_votes.arena_end(seat_id=seat.pk, now=later + timedelta(seconds=30))


def battles(campaign: Campaign, plan=BATTLES, first: int = 0) -> None:
    for n, (pair, votes) in enumerate(plan, start=first):
        converse(campaign, f"w{n}", pair, votes)


def report_build(campaign: Campaign) -> Job:
    """Build the report snapshot as the job's worker would."""
    job = services.job_start(campaign=campaign, kind=Job.Kind.REPORT)
    assert services.job_run(job.pk)
    job.refresh_from_db()
    return job


def page_of(client: Client, campaign: Campaign) -> str:
    response = client.get(reverse("dashboard:leaderboard", args=[campaign.slug]))
    assert response.status_code == 200
    return html.unescape(response.content.decode())


def data_of(client: Client, campaign: Campaign) -> dict:
    response = client.get(reverse("dashboard:leaderboard_data", args=[campaign.slug]))
    assert response.status_code == 200
    return response.json()


@pytest.fixture
def voted(researcher) -> Campaign:
    campaign = arena_live(researcher)
    battles(campaign)
    return campaign


def test_the_page_shows_strengths_votes_the_win_matrix_and_operations(ada, voted) -> None:
    job = report_build(voted)
    page = page_of(ada, voted)
    assert 'data-table="leaderboard"' in page
    for column in ("strength", "ci_low", "ci_high", "strength_style", "n", "win_rate"):
        assert f'data-column="{column}"' in page, column
    assert ">Length-controlled strength<" in page and ">Votes<" in page
    board = job.result["tables"]["leaderboard"]
    assert [row[1] for row in board["rows"]] == ["bot-x", "bot-y", "bot-z"]
    # bot-x won all its decided votes: 100% over both others in the matrix.
    assert 'data-table="win_matrix"' in page
    matrix = page.split('data-table="win_matrix"')[1].split("</table>")[0]
    assert '<th scope="row">bot-x</th><td class="num">–</td><td class="num">100%</td>' in matrix
    assert 'data-table="pairs"' in page and 'data-table="models"' in page
    for column in ("failed", "reply_ms_mean", "cut_replies"):
        assert f'data-column="{column}"' in page, column
    assert 'data-figure="leaderboard"' in page and 'data-figure="ratio_heatmap"' in page
    figure = reverse(
        "dashboard:job_file", args=[voted.slug, job.pk, f"{voted.slug}_leaderboard.png"]
    )
    assert ada.get(figure).status_code == 200
    finished = job.finished_at.strftime("%Y-%m-%d %H:%M:%S")
    assert f"Computed {finished} UTC from 7 votes" in page
    assert 'id="no-votes"' not in page and 'id="groups"' not in page
    assert "7 votes in 4 completed conversations" in page  # the report's notes


def test_the_campaign_page_links_its_leaderboard(ada, voted, filled) -> None:
    page = ada.get(reverse("dashboard:campaign", args=[voted.slug])).content.decode()
    assert reverse("dashboard:leaderboard", args=[voted.slug]) in page
    likert = ada.get(reverse("dashboard:campaign", args=[filled.slug])).content.decode()
    assert 'id="leaderboard-link"' not in likert


def test_a_campaign_whose_votes_are_not_battles_has_no_leaderboard(ada, filled) -> None:
    for name in ("leaderboard", "leaderboard_data"):
        assert ada.get(reverse(f"dashboard:{name}", args=[filled.slug])).status_code == 404


def test_with_no_votes_the_page_says_so(ada, researcher) -> None:
    campaign = arena_live(researcher)
    page = page_of(ada, campaign)
    assert 'id="no-votes"' in page and "Not computed yet." in page
    assert 'data-table="leaderboard"' not in page
    assert "No conversations yet." in page
    data = data_of(ada, campaign)
    assert data["snapshot"] is None and data["votes"] == 0 and not data["stale"]
    report_build(campaign)  # a snapshot without votes
    page = page_of(ada, campaign)
    assert 'id="no-votes"' in page and "from 0 votes" in page
    assert 'data-table="win_matrix"' not in page and 'data-figure="leaderboard"' not in page


def test_groups_never_compared_are_ranked_each_on_its_own(ada, researcher) -> None:
    four = ["bot-w", "bot-x", "bot-y", "bot-z"]
    campaign = arena_live(researcher, models=four)
    battles(campaign, [(("bot-w", "bot-x"), ["a", "b"]), (("bot-y", "bot-z"), ["a", "a"])])
    job = report_build(campaign)
    assert {"leaderboard_1", "leaderboard_2"} <= set(job.result["tables"])
    page = page_of(ada, campaign)
    assert "The models form 2 groups never compared with each other" in page
    assert 'data-table="leaderboard_1"' in page and 'data-table="leaderboard_2"' in page
    assert "<h3>Group 1</h3>" in page and "<h3>Group 2</h3>" in page
    assert 'data-column="strength_style"' not in page  # no style control across groups
    matrix = page.split('data-table="win_matrix"')[1].split("</table>")[0]
    assert matrix.count("–") == 4 + 8  # the diagonal and the pairs that never met
    assert data_of(ada, campaign)["groups"] == 2


def test_the_json_poll_says_when_a_newer_snapshot_is_ready(ada, voted) -> None:
    job = report_build(voted)
    data = data_of(ada, voted)
    assert data["snapshot"] == job.pk and data["live"] and not data["stale"]
    assert data["computed_at"] == job.finished_at.isoformat()
    assert data["votes"] == 7 and data["judgments"] == data["judgments_now"]
    assert set(data["tables"]) == {
        "leaderboard",
        "leaderboard_style",
        "style_coefficients",
        "win_matrix",
        "pairs",
        "win_rates",
        "models",
    }
    assert data["tables"]["leaderboard"]["columns"][:3] == ["rank", "model", "strength"]
    battles(voted, [(("bot-y", "bot-x"), ["a"])], first=10)
    data = data_of(ada, voted)
    assert data["stale"] and data["judgments_now"] == data["judgments"] + 1
    assert 'id="stale" class="banner" >' in page_of(ada, voted).replace("\n", "")
    newer = report_build(voted)
    data = data_of(ada, voted)
    assert data["snapshot"] == newer.pk and data["votes"] == 8 and not data["stale"]


def test_the_page_polls_only_while_the_campaign_is_live(ada, voted) -> None:
    page = page_of(ada, voted)
    assert 'data-live="1"' in page and 'id="live-note"' in page
    campaign_set_status(campaign=voted, status="paused")
    page = page_of(ada, voted)
    assert 'data-live="0"' in page and 'id="live-note"' not in page
    assert data_of(ada, voted)["live"] is False


def test_with_a_broker_new_votes_queue_one_report_build(ada, voted, settings) -> None:
    settings.CELERY_TASK_ALWAYS_EAGER = False  # a broker: builds run elsewhere
    data_of(ada, voted)
    page_of(ada, voted)
    data_of(ada, voted)
    queued = Job.objects.filter(campaign=voted, kind=Job.Kind.REPORT)
    assert queued.count() == 1 and queued.get().status == Job.Status.QUEUED
    assert data_of(ada, voted)["building"]


def test_without_a_broker_the_page_never_builds_inside_the_request(ada, voted, settings) -> None:
    settings.CELERY_TASK_ALWAYS_EAGER = True  # no broker (CI's PostgreSQL pass has one)
    data_of(ada, voted)
    page = page_of(ada, voted)
    assert not Job.objects.exists()
    assert 'id="rebuild"' in page


def test_compute_now_comes_back_to_the_leaderboard(ada, voted) -> None:
    response = ada.post(
        reverse("dashboard:job_create", args=[voted.slug]),
        {"kind": "report", "back": "leaderboard"},
    )
    assert response.url == reverse("dashboard:leaderboard", args=[voted.slug])
    assert Job.objects.filter(campaign=voted, kind=Job.Kind.REPORT).count() == 1


def test_the_poll_costs_the_same_at_more_votes(ada, voted) -> None:
    report_build(voted)
    with CaptureQueriesContext(connection) as few:
        data_of(ada, voted)
    battles(voted, BATTLES * 2, first=10)
    report_build(voted)
    with CaptureQueriesContext(connection) as more:
        data_of(ada, voted)
    assert len(more) == len(few)
    snapshot = [q["sql"] for q in few.captured_queries if "dashboard_job" in q["sql"]]
    assert snapshot and all('"quality"' not in sql and "'quality'" not in sql for sql in snapshot)


def test_another_researcher_gets_404_and_only_staff_get_in(
    voted, other_researcher, crowd_worker_user, superuser
) -> None:
    urls = [
        reverse(f"dashboard:{n}", args=[voted.slug]) for n in ("leaderboard", "leaderboard_data")
    ]
    bob = Client()
    bob.force_login(other_researcher)
    walt = Client()
    walt.force_login(crowd_worker_user)
    root = Client()
    root.force_login(superuser)
    for url in urls:
        assert bob.get(url).status_code == 404
        assert walt.get(url).status_code == 403
        assert "/admin/login/" in Client().get(url).url
        assert root.get(url).status_code == 200
    jobs = Job.objects.count()  # root's visits may have queued a build (with a broker)
    posted = bob.post(reverse("dashboard:job_create", args=[voted.slug]), {"back": "leaderboard"})
    assert posted.status_code == 404 and Job.objects.count() == jobs


def test_the_length_controlled_strength_sits_beside_the_plain_one_by_model(ada, researcher):
    campaign = arena_live(researcher)
    columns = ["rank", "model", "strength", "ci_low", "ci_high", "n", "win_rate", "neither_rate"]
    plain = [
        [1, "bot-x", 0.5, 0.1, 0.9, 40, 0.6, 0.1],
        [2, "bot-y", -0.5, -0.9, -0.1, 40, 0.4, 0.0],
    ]
    # Controlled for length, bot-y comes first: the rows are matched by model, not by rank.
    styled = [
        [1, "bot-y", 0.2, -0.3, 0.7, 40, 0.4, 0.0],
        [2, "bot-x", -0.2, -0.7, 0.3, 40, 0.6, 0.1],
    ]
    coefficients = {
        "columns": ["feature", "coefficient", "ci_low", "ci_high", "scale"],
        "rows": [["chars", 0.8, 0.3, 1.3, 120.0]],
    }
    Job.objects.create(
        campaign=campaign,
        kind=Job.Kind.REPORT,
        status=Job.Status.DONE,
        finished_at=timezone.now(),
        result={
            "judgments": 0,
            "tables": {
                "leaderboard": {"columns": columns, "rows": plain},
                "leaderboard_style": {"columns": columns, "rows": styled},
                "style_coefficients": coefficients,
            },
            "quality": {"columns": ["pseudonym"], "rows": [["p1"]]},
        },
    )
    page = page_of(ada, campaign)
    table = page.split('data-table="leaderboard"')[1].split("</table>")[0]
    assert "<td>bot-x</td><td>0.500</td><td>0.100</td><td>0.900</td><td>-0.200</td>" in table
    assert "<td>bot-y</td><td>-0.500</td><td>-0.900</td><td>-0.100</td><td>0.200</td>" in table
    shown = [part.split('"')[0] for part in table.split('data-column="')[1:]]
    assert shown == [*columns[:5], *STYLE_COLUMNS, *columns[5:]]
    style = page.split('id="style"')[1].split("</section>")[0]
    assert "<td>chars</td><td>0.800</td>" in style and ">Coefficient<" in style
