"""Live chats in a real Chromium against daphne: two workers collect ED dialogues in two
browser contexts; one worker chats with GenericBot and labels its turns."""

from __future__ import annotations

import re

import pytest

from annotation.models import ChatSeat, Dialogue, Item, Judgment, Utterance
from annotation.services import campaign_create, campaign_set_status
from modelhub.services import endpoint_register
from tests.browser.asgi_server import _daphne, asgi_live_server  # noqa: F401 (fixtures)

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
    campaign = campaign_create(slug=slug, name=slug, protocol=protocol, parameters=parameters)
    return campaign_set_status(campaign=campaign, status="live")


def _write_situation(page, text: str) -> None:
    page.locator('#emotion-choices input[name="emotion"]').first.check()
    page.locator("#situation-text").fill(text)
    page.get_by_role("button", name="Continue").click()


def _say(page, text: str, *, typed: bool = False) -> None:
    box = page.locator("#message-text")
    box.wait_for(state="visible")
    page.wait_for_function("!document.getElementById('message-text').disabled", timeout=TIMEOUT)
    if typed:  # key by key, as a person types: the page counts the keystrokes
        box.press_sequentially(text)
    else:
        box.fill(text)
    page.get_by_role("button", name="Send").click()


def _turns(page, n: int) -> None:
    page.wait_for_function(
        f"document.querySelectorAll('#transcript li').length === {n}", timeout=TIMEOUT
    )


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
    pages["alice"].screenshot(path=artifacts / "ed_situation.png", full_page=True)
    _write_situation(pages["alice"], SITUATIONS["alice"])
    pages["alice"].get_by_role("heading", name="Waiting for a partner…").wait_for()
    pages["alice"].screenshot(path=artifacts / "ed_waiting.png", full_page=True)
    _write_situation(pages["bob"], SITUATIONS["bob"])
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
            if conversation == 1 and n == 1:
                # The Speaker reloads mid-chat: the same conversation comes back.
                speaker.reload()
                _turns(speaker, 2)
        speaker.screenshot(path=artifacts / f"ed_conversation_{conversation}.png", full_page=True)
        speaker.get_by_role("button", name="End this conversation").click()
    for page in pages.values():
        page.get_by_role("heading", name="Thank you!").wait_for(timeout=TIMEOUT)
        page.get_by_role("link", name="Finish and get your completion code").click()
        page.get_by_text("Your completion code:").wait_for(timeout=TIMEOUT)
    pages["bob"].screenshot(path=artifacts / "ed_done.png", full_page=True)
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
    labels = {}
    for n in range(1, 8):
        question = n % 2 == 0
        _say(page, f"Message {n}{'?' if question else '.'}")
        _turns(page, 2 * n + 1)
        page.locator("#label-form").wait_for(state="visible")
        sensible = n != 3  # one reply judged not sensible: "specific" is never asked
        page.locator("#q-sensible").get_by_label("Yes" if sensible else "No").check()
        if sensible:
            page.locator("#q-specific").get_by_label("No").check()
        else:
            assert not page.locator("#q-specific").is_visible()
        if n == 1:
            page.screenshot(path=artifacts / "ssa_chat_label.png", full_page=True)
        page.get_by_role("button", name="Save labels").click()
        page.locator("#label-form").wait_for(state="hidden")
        labels[2 * n] = "yes" if sensible else "no"
    page.get_by_role("button", name="End the chat").click()
    page.get_by_role("heading", name="Thank you!").wait_for(timeout=TIMEOUT)
    page.get_by_role("link", name="Finish and get your completion code").click()
    page.get_by_text("Your completion code:").wait_for()
    page.close()

    dialogue = Dialogue.objects.get(campaign=campaign)
    turns = list(Utterance.objects.filter(dialogue=dialogue).order_by("index"))
    assert len(turns) == 15 and dialogue.status == "complete"
    assert [u.speaker for u in turns] == ["bot", "user"] * 7 + ["bot"]
    for index, sensible in labels.items():
        item = Item.objects.get(campaign=campaign, key=f"{dialogue.key}/{index}")
        assert item.payload["response"] == turns[index].text
        stored = dict(Judgment.objects.filter(item=item).values_list("question", "value"))
        assert stored == {"sensible": sensible, "specific": "no"}
    assert Judgment.objects.filter(item__campaign=campaign).count() == 14
