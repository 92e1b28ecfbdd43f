"""The arena in a real Chromium against daphne: two hidden models answer each message in two
panes, streamed at once; the worker votes by keyboard (desktop) or by touch (phone), the
models are revealed at the end, and "Start another chat" opens a new conversation. A model
that fails ends the conversation early, uncounted, the worker paid."""

from __future__ import annotations

import asyncio
import re
import threading

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.db import connection
from playwright.sync_api import expect

from annotation.models import Dialogue, Judgment
from annotation.services import campaign_create, campaign_set_status
from chat.arena import arena_reply_run
from chat.models import ChatSeat
from modelhub.services import endpoint_register
from tests.browser.asgi_server import _daphne, asgi_live_server  # noqa: F401 (fixtures)
from tests.browser.axe import axe_violations, describe
from tests.browser.waits import wait_js
from tests.modelhub.fake_openai import FakeServer

pytestmark = pytest.mark.browser

TIMEOUT = 10_000  # ms: the longest any step may take before the test fails
MODELS = ["arena-red", "arena-green", "arena-blue"]
PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True}
# Records, in the page, every text a pane's streamed reply showed while visible: the test
# reads it once the whole replies are in, so a fast stream is never missed between two polls.
PARTIALS_SEEN = """() => {
  window.partialsSeen = {a: [], b: [], single: []};
  [["a", "partial-a"], ["b", "partial-b"], ["single", "bot-partial"]].forEach(function (p) {
    var box = document.getElementById(p[1]);
    new MutationObserver(function () {
      if (!box.hidden && box.textContent) { window.partialsSeen[p[0]].push(box.textContent); }
    }).observe(box, {subtree: true, childList: true, characterData: true, attributes: true});
  });
}"""


class NamedServer(FakeServer):
    """The OpenAI-schema fake whose replies start with the model's name, so each pane's text
    says which model wrote it (and the test can match the panes to the reveal)."""

    def _reply(self, body: dict, i: int) -> tuple[list[str], str]:
        tokens, finish = super()._reply(body, i)
        return [body["model"], *tokens], finish


@pytest.fixture
def streamer():
    """A fake model server streaming token by token, slow enough to see a reply grow."""
    server = NamedServer()
    server.token_delay_s = 0.08
    yield server
    server.close()


@pytest.fixture
def inference_threads(monkeypatch, transactional_db):
    """Run each side's reply at once in its own thread of the server's process, as two
    workers of the inference queue do (without a broker the two would run one after the
    other inside the message's frame, and side B's text would reach the page only whole).

    The threads are started from the server's event loop (asgiref's executor), so their
    channel-layer sends reach the in-memory layer on that loop; each closes its database
    connection, and all have finished before the test's database is emptied.
    """
    finished: list[threading.Event] = []

    def run(dialogue_id: int, index: int, attempt: str | None, done: threading.Event) -> None:
        try:
            arena_reply_run(dialogue_id=dialogue_id, index=index, attempt=attempt)
        finally:
            connection.close()
            done.set()

    async def start(args: tuple) -> None:
        done = threading.Event()
        finished.append(done)
        reply = sync_to_async(run, thread_sensitive=False)
        asyncio.get_running_loop().create_task(reply(*args, done))

    def task_send(name: str, *args, **options) -> None:
        assert name == "chat.tasks.chat_arena_turn" and not options, name
        async_to_sync(start)(args)

    monkeypatch.setattr("chat.arena.task_send", task_send)
    yield
    for done in finished:
        assert done.wait(timeout=10), "a reply thread did not finish"


def _register(server: FakeServer, names: list[str], **config) -> None:
    for name in names:
        endpoint_register(
            name=name,
            backend="openai_http",
            config={"base_url": server.url, "model": name, **config},
        )


def _arena(slug: str, models: list[str], **parameters):
    campaign = campaign_create(
        slug=slug,
        name=slug,
        protocol="arena",
        parameters={"models": models, "heartbeat_s": 1, **parameters},
        controls={"open_links": True},  # the browser arrives with a bare worker id
    )
    return campaign_set_status(campaign=campaign, status="live")


def _open(page, url: str) -> None:
    page.goto(url)
    _ready(page)


def _ready(page) -> None:
    """Wait for the arena's chat to be open and the box ready to write in."""
    page.get_by_role("heading", name=re.compile("Two chatbots, A and B")).wait_for()
    page.evaluate(PARTIALS_SEEN)
    wait_js(page, "!document.getElementById('message-text').disabled", timeout=TIMEOUT)


def _replies(page, exchange: int) -> dict[str, str]:
    """Wait until both panes hold ``exchange`` replies; return each pane's last reply."""
    for side in "ab":
        expect(page.locator(f"#pane-{side} li")).to_have_count(2 * exchange, timeout=TIMEOUT)
    return {side: page.locator(f"#pane-{side} li").last.inner_text() for side in "ab"}


def _streamed(page, replies: dict[str, str]) -> None:
    """Check each pane showed its reply growing (a part shorter than the whole) before the
    whole reply landed, that the streamed text is gone now, and that nothing streamed into
    the single-bot box below the panes."""
    seen = page.evaluate("window.partialsSeen")
    for side, whole in replies.items():
        assert seen[side], f"pane {side} showed no streamed text (do partials say their side?)"
        assert all(whole.startswith(text) for text in seen[side]), (seen[side], whole)
        assert min(len(text) for text in seen[side]) < len(whole), seen[side]
        expect(page.locator(f"#partial-{side}")).to_be_hidden()
    assert not seen["single"], seen["single"]
    page.evaluate("window.partialsSeen = {a: [], b: [], single: []}")


def _vote_by_keyboard(page, presses: int, reason: str) -> None:
    """Vote with the keys alone from where the focus is once the vote form opens (its first
    choice): Space chooses it, each ArrowRight the next, Tab goes to the reason, Tab to the
    button, Enter votes."""
    form = page.locator("#vote-form")
    form.wait_for(state="visible", timeout=TIMEOUT)
    expect(form).to_be_in_viewport()
    expect(page.get_by_role("radio", name="A is better")).to_be_focused()
    page.keyboard.press("Space")
    for _ in range(presses):
        page.keyboard.press("ArrowRight")
    page.keyboard.press("Tab")
    expect(page.get_by_role("textbox", name="Why? (optional)")).to_be_focused()
    page.keyboard.type(reason)
    page.keyboard.press("Tab")
    expect(page.get_by_role("button", name="Vote", exact=True)).to_be_focused()
    page.keyboard.press("Enter")
    form.wait_for(state="hidden", timeout=TIMEOUT)


def _fits_the_width(page) -> None:
    """Fail when anything makes the page scroll sideways."""
    widths = page.evaluate(
        "[document.documentElement.scrollWidth, document.documentElement.clientWidth]"
    )
    assert widths[0] <= widths[1], f"the page is {widths[0]} px wide on a {widths[1]} px screen"


def test_two_panes_stream_the_worker_votes_by_keyboard_then_the_models_are_revealed(
    asgi_live_server,  # noqa: F811
    browser,
    artifacts,
    inference_threads,
    streamer,
):
    _register(streamer, MODELS)
    campaign = _arena("arena-desktop", MODELS, min_turns=2, max_turns=3)
    page = browser.new_page(viewport={"width": 1100, "height": 900})
    _open(page, f"{asgi_live_server}/task/{campaign.slug}/?workerId=voter")
    a, b = (page.locator(f"#pane-{side}").locator("..").bounding_box() for side in "ab")
    assert b["x"] >= a["x"] + a["width"] and b["y"] == a["y"]  # side by side
    box = page.locator("#message-text")
    box.focus()
    box.press_sequentially("Tell me about the sea.")
    box.press("Enter")
    replies = _replies(page, 1)
    _streamed(page, replies)
    models = {side: text.split(" ")[0] for side, text in replies.items()}
    assert set(models.values()) <= set(MODELS) and models["a"] != models["b"]
    assert replies["a"] == f"{models['a']} reply 0 to Tell me about the sea."
    assert page.locator("#pane-b li").first.inner_text() == "You: Tell me about the sea."
    page.screenshot(path=artifacts / "arena_vote.png", full_page=True)
    _vote_by_keyboard(page, 1, "It answered the question.")  # B is better
    # The box that was disabled while voting has the focus back, ready to type.
    expect(box).to_be_focused()
    assert page.locator("#message-count").inner_text().startswith("Exchanges: 1 ·")
    expect(page.locator("#end-button")).to_be_hidden()  # 2 exchanges at least
    box.press_sequentially("And the mountains?")
    box.press("Enter")
    replies = _replies(page, 2)
    _streamed(page, replies)
    assert replies["b"] == f"{models['b']} reply 0 to And the mountains?"
    _vote_by_keyboard(page, 2, "")  # a tie, no reason
    expect(box).to_be_focused()
    page.keyboard.press("Tab")  # Send
    page.keyboard.press("Tab")
    expect(page.get_by_role("button", name="Finish the conversation")).to_be_focused()
    page.keyboard.press("Enter")
    page.get_by_role("heading", name="Thank you!").wait_for(timeout=TIMEOUT)
    told = f"Chatbot A was {models['a']}; chatbot B was {models['b']}."
    expect(page.locator("#arena-reveal")).to_have_text(told)
    page.screenshot(path=artifacts / "arena_reveal.png", full_page=True)
    page.get_by_role("link", name="Finish and get your completion code").click()
    page.get_by_text("Your completion code:").wait_for(timeout=TIMEOUT)
    page.get_by_role("link", name="Start another chat").click()
    _ready(page)
    expect(page.locator("#chat-heading")).to_contain_text("(exchange 0 of at most 3)")
    for side in "ab":
        expect(page.locator(f"#pane-{side} li")).to_have_count(0)
        expect(page.locator(f"#partial-{side}")).to_be_hidden()
    expect(page.locator("#vote-form")).to_be_hidden()
    page.close()

    first, second = ChatSeat.objects.filter(campaign=campaign).order_by("pk")
    assert first.stage == "done" and second.stage == "chatting"
    assert (first.endpoint, first.endpoint_b) == (models["a"], models["b"])
    assert second.dialogue_id != first.dialogue_id
    assert second.endpoint != second.endpoint_b and {second.endpoint, second.endpoint_b} <= set(
        MODELS
    )
    assert not Dialogue.objects.get(pk=second.dialogue_id).utterances.exists()
    votes = Judgment.objects.filter(item__campaign=campaign, question="winner")
    assert sorted(votes.values_list("item__key", "value")) == [
        (f"arena-{first.pk}/1", "b"),
        (f"arena-{first.pk}/2", "tie"),
    ]
    reasons = Judgment.objects.filter(item__campaign=campaign, question="reason")
    assert list(reasons.values_list("value", flat=True)) == ["It answered the question."]


def test_on_a_phone_the_panes_stack_nothing_overflows_and_a_tap_votes(
    asgi_live_server,  # noqa: F811
    browser,
    artifacts,
    inference_threads,
    streamer,
):
    _register(streamer, MODELS[:2])
    campaign = _arena("arena-phone", MODELS[:2], vote="end", min_turns=1, max_turns=2)
    context = browser.new_context(**PHONE)
    page = context.new_page()
    _open(page, f"{asgi_live_server}/task/{campaign.slug}/?workerId=thumb")
    # A word longer than the screen is wide, in the message and in both replies.
    word = "Pneumonoultramicroscopicsilicovolcanoconiosis" * 2
    page.locator("#message-text").fill(f"What is {word}?")
    page.get_by_role("button", name="Send").tap()
    replies = _replies(page, 1)
    _streamed(page, replies)
    a, b = (page.locator(f"#pane-{side}").locator("..").bounding_box() for side in "ab")
    assert b["y"] >= a["y"] + a["height"] and b["x"] == a["x"]  # one above the other
    assert a["x"] >= 0 and a["x"] + a["width"] <= 390
    form = page.locator("#vote-form")
    form.wait_for(state="visible", timeout=TIMEOUT)
    expect(form).to_be_in_viewport()
    _fits_the_width(page)
    page.screenshot(path=artifacts / "arena_phone_vote.png", full_page=True)
    page.get_by_text("B is better", exact=True).tap()  # the choice's label
    expect(page.get_by_role("radio", name="B is better")).to_be_checked()
    page.get_by_role("button", name="Vote and finish").tap()
    page.get_by_role("heading", name="Thank you!").wait_for(timeout=TIMEOUT)
    expect(page.locator("#arena-reveal")).to_contain_text("Chatbot A was ")
    _fits_the_width(page)
    context.close()

    seat = ChatSeat.objects.get(campaign=campaign)
    assert seat.stage == "done"
    votes = Judgment.objects.filter(item__campaign=campaign, question="winner")
    assert list(votes.values_list("item__key", "value")) == [(f"arena-{seat.pk}/1", "b")]


@pytest.mark.axe
def test_the_arena_page_has_no_accessibility_violations_while_voting_or_at_the_reveal(
    asgi_live_server,  # noqa: F811
    browser,
    inference_threads,
    streamer,
):
    _register(streamer, MODELS[:2])
    campaign = _arena("arena-axe", MODELS[:2], vote="end", min_turns=1, max_turns=1)
    page = browser.new_page(viewport={"width": 1100, "height": 900})
    _open(page, f"{asgi_live_server}/task/{campaign.slug}/?workerId=axe")
    _no_violations(page, "arena: waiting for the first message")
    page.locator("#message-text").fill("Tell me about the sea.")
    page.locator("#message-text").press("Enter")
    _replies(page, 1)
    page.locator("#vote-form").wait_for(state="visible", timeout=TIMEOUT)
    page.get_by_role("radio", name="Tie").check()
    _no_violations(page, "arena: chatting, the vote form open")
    page.get_by_role("button", name="Vote and finish").click()
    page.get_by_role("heading", name="Thank you!").wait_for(timeout=TIMEOUT)
    _no_violations(page, "arena: the reveal")
    page.close()


def test_a_model_that_fails_ends_the_conversation_early_uncounted_and_paid(
    asgi_live_server,  # noqa: F811
    browser,
    artifacts,
    inference_threads,
    streamer,
):
    broken = FakeServer()
    broken.mode = "500"
    try:
        _register(streamer, ["arena-ok"])
        _register(broken, ["arena-broken"], max_retries=0)
        campaign = _arena("arena-fail", ["arena-ok", "arena-broken"])
        page = browser.new_page(viewport={"width": 1100, "height": 900})
        _open(page, f"{asgi_live_server}/task/{campaign.slug}/?workerId=unlucky")
        page.locator("#message-text").fill("Tell me about the sea.")
        page.locator("#message-text").press("Enter")
        page.get_by_role("heading", name="The chat has ended").wait_for(timeout=TIMEOUT)
        said = page.locator("#end-message")
        expect(said).to_contain_text("this conversation ended early")
        expect(said).to_contain_text("It will not be counted")
        expect(said).to_contain_text("you will be paid")
        expect(page.locator("#arena-reveal")).to_be_hidden()
        expect(page.locator("#vote-form")).to_be_hidden()
        page.screenshot(path=artifacts / "arena_failed.png", full_page=True)
        page.get_by_role("link", name="Finish and get your completion code").click()
        page.get_by_text("Your completion code:").wait_for(timeout=TIMEOUT)
        page.close()
    finally:
        broken.close()

    seat = ChatSeat.objects.get(campaign=campaign)
    assert seat.stage == "failed" and seat.assignment.status == "submitted"
    assert set(Dialogue.objects.filter(campaign=campaign).values_list("status", flat=True)) == {
        "partial"
    }
    assert not Judgment.objects.filter(item__campaign=campaign).exists()


def _no_violations(page, name: str) -> None:
    """Fail on any axe violation, whatever its impact (the arena page has none)."""
    violations = axe_violations(page)
    assert not violations, f"axe on {name} ({page.url}):\n{describe(violations)}"
