"""Live chats in a real Chromium against daphne: two workers collect ED dialogues in two
browser contexts; one worker chats with GenericBot and labels its turns."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from annotation.models import Dialogue, Item, Judgment, Utterance
from annotation.services import campaign_create, campaign_set_status
from chat.models import ChatSeat
from modelhub.services import endpoint_register
from tests.browser.asgi_server import _daphne, asgi_live_server  # noqa: F401 (fixtures)
from tests.browser.axe import assert_accessible
from tests.browser.waits import wait_js

pytestmark = pytest.mark.browser

SITUATIONS = {
    "alice": "My sister surprised me with a visit after two years abroad. I cried at the door.",
    "bob": "I passed my driving test on the third try. The examiner even smiled at me.",
}
TIMEOUT = 10_000  # ms: the longest any step may take before the test fails


@pytest.fixture
def celery_eager():
    """Bot turns run in the server's process (the real-worker path is tested elsewhere)."""
    from evalsite.celery import app

    before = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = before


def _live(protocol: str, slug: str, **parameters):
    campaign = campaign_create(
        slug=slug,
        name=slug,
        protocol=protocol,
        parameters=parameters,
        controls={"open_links": True},  # the browsers arrive with bare worker ids
    )
    return campaign_set_status(campaign=campaign, status="live")


def _write_situation(page, text: str) -> None:
    page.locator('#emotion-choices input[name="emotion"]').first.check()
    page.locator("#situation-text").fill(text)
    page.get_by_role("button", name="Continue").click()


def _say(page, text: str, *, typed: bool = False) -> None:
    box = page.locator("#message-text")
    box.wait_for(state="visible")
    wait_js(page, "!document.getElementById('message-text').disabled", timeout=TIMEOUT)
    if typed:  # key by key, as a person types, and sent with Enter: the page counts the keys
        box.press_sequentially(text)
        box.press("Enter")
    else:
        box.fill(text)
        page.get_by_role("button", name="Send").click()


def _turns(page, n: int) -> None:
    wait_js(page, f"document.querySelectorAll('#transcript li').length === {n}", timeout=TIMEOUT)


@pytest.mark.axe
def test_two_workers_pair_write_situations_and_hold_both_chats_with_roles_swapped(
    asgi_live_server,  # noqa: F811
    browser,
    artifacts,
):
    campaign = _live("empathetic_chat", "ed-browser", heartbeat_s=2)
    contexts = {
        name: browser.new_context(viewport={"width": 900, "height": 900}) for name in SITUATIONS
    }
    pages = {name: ctx.new_page() for name, ctx in contexts.items()}
    for name, page in pages.items():
        page.goto(f"{asgi_live_server}/task/{campaign.slug}/?workerId={name}")
        page.get_by_role("heading", name="Step 1: describe a situation").wait_for()
    alice = pages["alice"]
    alice.screenshot(path=artifacts / "ed_situation.png", full_page=True)
    # A refused situation says the server's exact reason, at the field and in the alert.
    _write_situation(alice, "One thing. Then another. And a third. And a fourth.")
    reason = "Please write 1 to 3 sentences (you wrote 4)."
    alice.locator("#situation-error").get_by_text(reason).wait_for(timeout=TIMEOUT)
    assert reason in alice.locator("#chat-error").inner_text()
    assert alice.locator("#situation-text").get_attribute("aria-invalid") == "true"
    assert_accessible(alice, "chat: situation refused")
    _write_situation(alice, SITUATIONS["alice"])
    alice.get_by_role("heading", name="Waiting for a partner…").wait_for()
    alice.screenshot(path=artifacts / "ed_waiting.png", full_page=True)
    assert_accessible(alice, "chat: lobby")
    _write_situation(pages["bob"], SITUATIONS["bob"])
    alice.get_by_role("status").get_by_text("Your partner arrived").wait_for(timeout=TIMEOUT)
    for conversation in (1, 2):
        heading = re.compile(f"Conversation {conversation} of 2")
        for page in pages.values():
            page.get_by_role("heading", name=heading).wait_for(timeout=TIMEOUT)
        speaker_name = next(
            n for n, p in pages.items() if "Speaker" in p.locator("#chat-heading").inner_text()
        )
        speaker = pages[speaker_name]
        listener = next(p for n, p in pages.items() if n != speaker_name)
        assert "Listener" in listener.locator("#chat-heading").inner_text()
        # The Speaker sees their own situation; the Listener sees neither label nor situation.
        assert SITUATIONS[speaker_name] in speaker.locator("#my-situation").inner_text()
        assert SITUATIONS[speaker_name] not in listener.content()
        for n in range(4):
            who = speaker if n % 2 == 0 else listener
            _say(who, f"Conversation {conversation}, message {n + 1}.", typed=n == 0)
            for page in pages.values():
                _turns(page, n + 1)
            counter = who.locator("#message-count")
            assert counter.inner_text().startswith(f"Messages: {n + 1} of 4–8")
            assert ("can end it now" in counter.inner_text()) == (n == 3)
            if conversation == 1 and n == 1:
                # The Speaker reloads mid-chat: the same conversation comes back.
                speaker.reload()
                _turns(speaker, 2)
        speaker.screenshot(path=artifacts / f"ed_conversation_{conversation}.png", full_page=True)
        assert_accessible(speaker, f"chat: conversation {conversation}")
        speaker.get_by_role("button", name="End this conversation").click()
        told = f"Your partner ended conversation {conversation}."
        listener.locator("#chat-notice").get_by_text(told).wait_for(timeout=TIMEOUT)
        if conversation == 1:
            assert "now you are the Speaker" in listener.locator("#chat-notice").inner_text()
    for page in pages.values():
        page.get_by_role("heading", name="Thank you!").wait_for(timeout=TIMEOUT)
        assert_accessible(page, "chat: the end")
        page.get_by_role("link", name="Finish and get your completion code").click()
        page.get_by_text("Your completion code:").wait_for(timeout=TIMEOUT)
    pages["bob"].screenshot(path=artifacts / "ed_done.png", full_page=True)
    assert_accessible(pages["bob"], "done page after a chat")
    for ctx in contexts.values():
        ctx.close()

    dialogues = list(Dialogue.objects.filter(campaign=campaign).order_by("key"))
    assert [(d.status, d.flagged) for d in dialogues] == [("complete", False)] * 2
    speakers = []
    for d in dialogues:
        rows = list(Utterance.objects.filter(dialogue=d).order_by("index"))
        assert [u.text for u in rows] == [
            f"Conversation {d.metadata['round']}, message {n}." for n in range(1, 5)
        ]
        assert [u.speaker for u in rows] == ["speaker", "listener"] * 2
        speaker_worker = rows[0].worker
        assert all((u.worker == speaker_worker) == (u.speaker == "speaker") for u in rows)
        assert d.situation.worker == speaker_worker and d.emotion == d.situation.emotion
        # The first message was typed key by key, the others filled in at once.
        assert rows[0].signals["keystrokes"] == len(rows[0].text)
        assert rows[0].signals["typing_ms"] > 0
        assert all(u.signals["keystrokes"] == 0 and u.signals["pastes"] == 0 for u in rows[1:])
        speakers.append(speaker_worker.external_id)
    assert sorted(speakers) == ["alice", "bob"]  # the roles swapped
    assert set(ChatSeat.objects.values_list("stage", flat=True)) == {"done"}
    assert set(campaign.assignments.values_list("status", flat=True)) == {"submitted"}


def test_a_worker_is_told_when_the_partner_closes_the_tab(asgi_live_server, browser):  # noqa: F811
    campaign = _live("empathetic_chat", "ed-leave", heartbeat_s=2)
    contexts = [browser.new_context() for _ in SITUATIONS]
    pages = {name: ctx.new_page() for name, ctx in zip(SITUATIONS, contexts, strict=True)}
    for name, page in pages.items():
        page.goto(f"{asgi_live_server}/task/{campaign.slug}/?workerId={name}")
        _write_situation(page, SITUATIONS[name])
    for page in pages.values():
        page.get_by_role("heading", name=re.compile("Conversation 1 of 2")).wait_for()
    pages["bob"].close()
    alice = pages["alice"]
    # Told within the heartbeat (2 s); the wait allows for the browser's own delays.
    alice.get_by_text("Your partner left the chat.").wait_for(timeout=2_500)
    alice.get_by_role("link", name="Finish and get your completion code").click()
    alice.get_by_text("Your completion code:").wait_for()
    for ctx in contexts:
        ctx.close()
    dialogue = Dialogue.objects.get(campaign=campaign)
    assert dialogue.status == "partial" and dialogue.flags == ["partner_left"]


@pytest.mark.axe
def test_a_worker_chats_14_turns_with_generic_bot_and_labels_each_bot_turn(
    asgi_live_server,  # noqa: F811
    browser,
    artifacts,
    celery_eager,
):
    endpoint_register(name="generic-bot", backend="generic_bot")
    campaign = _live("ssa_interactive", "ssa-browser", models=["generic-bot"])
    page = browser.new_page(viewport={"width": 420, "height": 900})
    page.goto(f"{asgi_live_server}/task/{campaign.slug}/?workerId=ssa-worker")
    _turns(page, 1)
    assert page.locator("#transcript li").first.inner_text() == "Chatbot: Hi!"
    # Shift+Enter starts a new line; Enter sends.
    box = page.locator("#message-text")
    wait_js(page, "!document.getElementById('message-text').disabled", timeout=TIMEOUT)
    box.press_sequentially("Message 1.")
    box.press("Shift+Enter")
    box.press_sequentially("Second line.")
    assert box.input_value() == "Message 1.\nSecond line."
    assert page.locator("#transcript li").count() == 1
    box.press("Enter")
    labels = {}
    for n in range(1, 8):
        question = n % 2 == 0
        if n > 1:
            _say(page, f"Message {n}{'?' if question else '.'}")
        _turns(page, 2 * n + 1)
        page.locator("#label-form").wait_for(state="visible")
        # On a phone the label question starts below the screen: the page scrolls to it.
        expect(page.locator("#label-form")).to_be_in_viewport()
        when = "after 14" if 2 * n + 1 < 14 else "now"
        assert page.locator("#message-count").inner_text() == (
            f"Turns: {2 * n + 1} · you can end the chat {when} (at most 28)"
        )
        sensible = n != 3  # one reply judged not sensible: "specific" is never asked
        page.locator("#q-sensible").get_by_label("Yes" if sensible else "No").check()
        if sensible:
            page.locator("#q-specific").get_by_label("No").check()
        else:
            assert not page.locator("#q-specific").is_visible()
        if n == 1:
            page.screenshot(path=artifacts / "ssa_chat_label.png", full_page=True)
            assert_accessible(page, "chat: a bot turn to label")
        page.get_by_role("button", name="Save labels").click()
        page.locator("#label-form").wait_for(state="hidden")
        # The box that was disabled while labeling has the focus back, ready to type.
        expect(box).to_be_focused()
        labels[2 * n] = "yes" if sensible else "no"
    assert "you can end the chat now" in page.locator("#message-count").inner_text()
    page.get_by_role("button", name="End the chat").click()
    page.get_by_role("heading", name="Thank you!").wait_for(timeout=TIMEOUT)
    assert_accessible(page, "chat with a bot: the end")
    page.get_by_role("link", name="Finish and get your completion code").click()
    page.get_by_text("Your completion code:").wait_for()
    page.close()

    dialogue = Dialogue.objects.get(campaign=campaign)
    turns = list(Utterance.objects.filter(dialogue=dialogue).order_by("index"))
    assert len(turns) == 15 and dialogue.status == "complete"
    assert [u.speaker for u in turns] == ["bot", "user"] * 7 + ["bot"]
    assert turns[1].text == "Message 1.\nSecond line."
    for index, sensible in labels.items():
        item = Item.objects.get(campaign=campaign, key=f"{dialogue.key}/{index}")
        assert item.payload["response"] == turns[index].text
        stored = dict(Judgment.objects.filter(item=item).values_list("question", "value"))
        assert stored == {"sensible": sensible, "specific": "no"}
    assert Judgment.objects.filter(item__campaign=campaign).count() == 14


@pytest.mark.axe
def test_with_end_ratings_on_the_worker_rates_the_bot_by_keyboard_before_finishing(
    asgi_live_server,  # noqa: F811
    browser,
    artifacts,
    celery_eager,
):
    endpoint_register(name="generic-bot", backend="generic_bot")
    campaign = _live(
        "ssa_interactive",
        "ssa-rate-browser",
        models=["generic-bot"],
        min_turns=4,
        max_turns=8,
        end_ratings=True,
    )
    page = browser.new_page(viewport={"width": 420, "height": 900})
    page.goto(f"{asgi_live_server}/task/{campaign.slug}/?workerId=rate-worker")
    for n in (1, 2):
        _say(page, f"Message {n}.")
        _turns(page, 2 * n + 1)
        page.locator("#label-form").wait_for(state="visible")
        page.locator("#q-sensible").get_by_label("Yes").check()
        page.locator("#q-specific").get_by_label("No").check()
        page.get_by_role("button", name="Save labels").click()
        page.locator("#label-form").wait_for(state="hidden")
    page.get_by_role("button", name="End the chat").click()
    page.locator("#stage-rating").wait_for(state="visible", timeout=TIMEOUT)
    expect(page.locator("#stage-rating")).to_be_in_viewport()
    expect(page.locator("#rating-heading")).to_be_focused()
    # Saving with a question unanswered is refused, and said at that question.
    page.keyboard.press("Tab")  # the first question's choices: 1 is focused
    page.keyboard.press("ArrowRight")  # 2 …
    page.keyboard.press("ArrowRight")  # … 3, chosen as the focus moves
    page.get_by_role("button", name="Save and finish").focus()
    page.keyboard.press("Enter")
    expect(page.locator("#rate-error-human")).to_be_visible(timeout=TIMEOUT)
    expect(page.locator("#rate-human")).to_have_attribute("aria-invalid", "true")
    assert page.locator("#stage-rating").is_visible()
    # Each remaining question by keyboard: Tab into its choices, arrows to the rating.
    page.locator('input[name="rate-engaging"][value="3"]').focus()
    for presses in (4, 1, 3):  # interesting 4, human 1, knowledgeable 3
        page.keyboard.press("Tab")
        page.keyboard.press("Space")
        for _ in range(presses - 1):
            page.keyboard.press("ArrowRight")
    expect(page.locator("#rate-error-knowledgeable")).to_be_hidden()  # answered now
    page.keyboard.press("Tab")
    page.keyboard.type("Polite, but it rarely said anything specific.")
    page.screenshot(path=artifacts / "ssa_chat_rating.png", full_page=True)
    assert_accessible(page, "chat with a bot: the closing ratings")
    page.keyboard.press("Tab")  # the button
    page.keyboard.press("Enter")
    page.get_by_role("heading", name="Thank you!").wait_for(timeout=TIMEOUT)
    page.close()

    dialogue = Dialogue.objects.get(campaign=campaign)
    ratings = dialogue.metadata["ratings"]
    assert ratings["values"] == {"engaging": 3, "interesting": 4, "human": 1, "knowledgeable": 3}
    assert ratings["comment"] == "Polite, but it rarely said anything specific."
    assert ChatSeat.objects.get(campaign=campaign).stage == "done"
    assert campaign.assignments.get().status == "submitted"


@pytest.mark.axe
def test_a_streamed_reply_grows_on_the_page_then_lands_whole_in_the_transcript(
    asgi_live_server,  # noqa: F811
    browser,
    artifacts,
    celery_eager,
):
    from tests.modelhub.fake_openai import FakeServer

    server = FakeServer()
    server.token_delay_s = 0.25  # slow enough to see the reply grow
    try:
        endpoint_register(
            name="streamer",
            backend="openai_http",
            config={"base_url": server.url, "model": "tiny-chat"},
        )
        campaign = _live("ssa_interactive", "ssa-stream-browser", models=["streamer"])
        page = browser.new_page(viewport={"width": 420, "height": 900})
        page.goto(f"{asgi_live_server}/task/{campaign.slug}/?workerId=streamed")
        _turns(page, 1)
        _say(page, "Tell me about your weekend.")
        partial = page.locator("#bot-partial")
        partial.wait_for(state="visible", timeout=TIMEOUT)
        first = partial.inner_text()
        wait_js(
            page,
            f"document.getElementById('bot-partial').innerText.length > {len(first)}",
            timeout=TIMEOUT,
        )
        assert first.startswith("Chatbot: reply")
        assert not page.locator("#label-form").is_visible()  # labels wait for the whole reply
        page.screenshot(path=artifacts / "ssa_chat_streaming.png", full_page=True)
        assert_accessible(page, "chat: a bot reply streaming")
        _turns(page, 3)
        assert partial.is_hidden()
        last = page.locator("#transcript li").last.inner_text()
        assert last == "Chatbot: reply 0 to Tell me about your weekend."
        page.locator("#label-form").wait_for(state="visible")
        page.close()
    finally:
        server.close()
