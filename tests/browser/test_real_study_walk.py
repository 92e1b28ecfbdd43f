"""A real local study walked in Chromium, with no demo shortcut (issue: "a real study from first
link to last payment"): the researcher builds a German study in the wizard with personal links,
consent, training and an attention check; workers arrive by the links the dashboard issues,
decline or consent, train, answer, continue and withdraw; an ED pair chats, one closes the tab
and comes back. On every page the walk fails on a 4xx/5xx response, a console error or an
English sentence in the German study, and on every end page it follows every link and button.

The test database is the suite's (PostgreSQL in CI); daphne serves HTTP and the chat sockets.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterator
from pathlib import Path

import polib
import pytest
from django.conf import settings
from django.contrib.auth.models import User
from playwright.sync_api import BrowserContext, Page

from annotation.models import Assignment, Campaign, Consent, Judgment, Worker
from annotation.services import campaign_create, campaign_set_status
from chat.models import ChatSeat
from providers.local import link_key
from tests.browser.asgi_server import _daphne, asgi_live_server  # noqa: F401 (fixtures)
from tests.browser.waits import wait_js

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TIMEOUT = 15_000
CATALOG = Path(settings.BASE_DIR) / "locale" / "de" / "LC_MESSAGES" / "django.po"
# English words no German page of ours should show (the items and texts below are German).
ENGLISH = re.compile(
    r"\b(the|your|you|and|please|this|with|answer|answers|submit|continue|study|item|items|"
    r"thank|withdraw|consent|agree|next)\b",
    re.IGNORECASE,
)
ATTENTION = "Bitte wählen Sie bei jeder Frage 1."
ITEMS = [
    ("k1", "Ich habe heute meine Schlüssel verloren.", "Oh nein! Wo warst du zuletzt?"),
    ("k2", "Wir haben den Pokal gewonnen!", "Glückwunsch, das ist großartig!"),
    ("k3", "Mein Hund ist krank.", "Das tut mir leid. Was sagt die Tierärztin?"),
    ("k4", "Ich habe die Prüfung bestanden.", "Super, du hast so viel gelernt!"),
    ("k5", "Mein Zug hatte zwei Stunden Verspätung.", "Wie ärgerlich, hattest du etwas zu lesen?"),
    ("k6", "Morgen ziehe ich um.", "Viel Erfolg beim Umzug!"),
]


def _payload(context: str, response: str, key: str) -> dict:
    return {"context": [context], "response": response, "model": "bot", "example": key}


def _english_msgids() -> list[str]:
    """The catalog's English sentences (a page showing one is untranslated)."""
    catalog = polib.pofile(str(CATALOG))
    return [
        e.msgid for e in catalog if len(e.msgid) > 24 and "%(" not in e.msgid and "<" not in e.msgid
    ]


class Watch:
    """Everything a browser context's pages do wrong: responses of 400 and more, console
    errors and uncaught exceptions; and, for a German study, English on its pages."""

    def __init__(self, context: BrowserContext, *, german: bool = False) -> None:
        self.failures: list[str] = []
        self.german = german
        self.msgids = _english_msgids() if german else []
        context.on("response", self._response)
        context.on("page", self._page)
        for page in context.pages:
            self._page(page)

    def _page(self, page: Page) -> None:
        page.on(
            "console", lambda m: m.type == "error" and self.failures.append(f"console: {m.text}")
        )
        page.on("pageerror", lambda e: self.failures.append(f"page error: {e}"))

    def _response(self, response) -> None:
        if response.status >= 400:
            self.failures.append(f"{response.status} {response.request.method} {response.url}")

    def check(self, page: Page, where: str) -> None:
        """Assert the page so far is clean (and German where the study is)."""
        page.wait_for_load_state()
        assert self.failures == [], (where, self.failures)
        wide = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
        assert wide[0] <= wide[1], (where, "the page is wider than the screen", wide)
        if self.german and "/task/" in page.url:
            assert page.locator("html").get_attribute("lang") == "de", where
            text = page.locator("body").inner_text()
            found = ENGLISH.findall(text)
            assert not found, (where, found, text[:600])
            shown = [m for m in self.msgids if m in text]
            assert not shown, (where, shown)


def _links(page: Page) -> list[str]:
    return page.eval_on_selector_all(
        "main a[href]", "els => els.map(e => e.href).filter(h => h.startsWith('http'))"
    )


def _follow_every_link(context: BrowserContext, watch: Watch, page: Page, where: str) -> None:
    """Open every link of the page in a new tab, each checked like any page."""
    hrefs = _links(page)
    assert hrefs or where.endswith("(no links)"), where
    for href in hrefs:
        tab = context.new_page()
        response = tab.goto(href)
        assert response is not None and response.status < 400, (where, href, response.status)
        watch.check(tab, f"{where} → {href}")
        tab.close()


@pytest.fixture
def researcher(asgi_live_server, browser) -> Iterator[tuple[BrowserContext, Page]]:  # noqa: F811
    User.objects.create_user("ada", password="a-long-test-password", is_staff=True)
    context = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
    page = context.new_page()
    page.goto(f"{asgi_live_server}/dashboard/")
    page.fill("#id_username", "ada")
    page.fill("#id_password", "a-long-test-password")
    page.click("input[type=submit]")
    page.wait_for_url("**/dashboard/")
    yield context, page
    context.close()


def _wizard_study(page: Page, server: str, tmp_path: Path) -> Campaign:
    """Build and launch the German Likert study through the wizard, as a researcher does."""
    page.goto(f"{server}/dashboard/new/")
    page.check("input[name=protocol][value=likert]")
    page.fill("input[name=name]", "Empathie-Studie")
    page.fill("input[name=slug]", "empathie")
    page.click("#create-draft")
    page.wait_for_url("**/new/empathie/settings/")
    page.fill("input[name=redundancy]", "2")
    page.fill("input[name=items_per_assignment]", "3")
    page.fill("input[name=gold_rate]", "0.3")
    page.fill("input[name=reward]", "0.50")
    page.fill("input[name=budget]", "20.00")
    assert not page.is_checked("input[name=open_links]")  # personal links: the default
    page.fill("textarea[name=description]", "Wir untersuchen, wie einfühlsam Chatbots antworten.")
    page.fill(
        "textarea[name=consent_text]", "Ich willige ein, dass meine Antworten gespeichert werden."
    )
    page.fill("input[name=consent_version]", "v1")
    page.select_option("select[name=language]", "de")
    page.click("#save-settings")
    page.wait_for_url("**/new/empathie/items/")

    items = tmp_path / "items.jsonl"
    items.write_text(
        "\n".join(json.dumps({"key": k, "payload": _payload(c, r, k)}) for k, c, r in ITEMS)
    )
    gold = tmp_path / "gold.jsonl"
    gold.write_text(
        json.dumps(
            {
                "key": "attention-1",
                "payload": _payload("Eine Kontrollfrage.", ATTENTION, "attention-1"),
                "gold": {"empathy": ["1"], "relevance": ["1"], "fluency": ["1"]},
                "check": "attention",
            }
        )
    )
    training = tmp_path / "training.jsonl"
    training.write_text(
        "\n".join(
            json.dumps(
                {
                    "key": f"t{n}",
                    "payload": _payload("Ich bin traurig.", ATTENTION, f"t{n}"),
                    "answers": {"empathy": ["1"], "relevance": ["1"], "fluency": ["1"]},
                    "explanation": "Die Antwort sagt, was zu wählen ist.",
                }
            )
            for n in (1, 2)
        )
    )
    page.set_input_files("input[name=items]", str(items))
    page.set_input_files("input[name=gold]", str(gold))
    page.set_input_files("input[name=training]", str(training))
    page.click("#import-items")
    page.wait_for_selector("#to-review")
    page.click("#to-review")
    page.wait_for_url("**/new/empathie/review/")
    page.click("#go-live-button")
    page.wait_for_url("**/dashboard/c/empathie/")
    campaign = Campaign.objects.get(slug="empathie")
    assert campaign.status == "live" and not campaign.open_links and campaign.language == "de"
    assert campaign.training_size == 2 and campaign.items.filter(attention=True).count() == 1
    return campaign


def _personal_links(page: Page, workers: list[str]) -> dict[str, str]:
    """Download the personal links from the campaign page (Workers → links)."""
    page.fill("#links-workers", " ".join(workers))
    with page.expect_download() as download:
        page.locator("#links form button[type=submit]").click()
    rows = csv.DictReader(io.StringIO(Path(download.value.path()).read_text()))
    return {row["worker_id"]: row["link"] for row in rows}


def _answer_page(page: Page) -> None:
    """Answer the item on screen as a careful worker: 1 everywhere where it says so, else 4."""
    choice = "1" if ATTENTION in page.locator("main").inner_text() else "4"
    for question in ("empathy", "relevance", "fluency"):
        page.check(f"input[name={question}][value='{choice}']")
    page.click("#submit-button")
    page.wait_for_load_state()


def test_a_german_personal_link_study_from_the_wizard_to_every_end_page(
    asgi_live_server,  # noqa: F811
    browser,
    researcher,
    tmp_path,
):
    server = asgi_live_server
    _, dashboard = researcher
    campaign = _wizard_study(dashboard, server, tmp_path)
    links = _personal_links(dashboard, ["anna", "ben", "cara"])
    assert set(links) == {"anna", "ben", "cara"}
    for worker, link in links.items():
        assert link.startswith(server) and f"key={link_key(campaign.slug, worker)}" in link

    # Cara tries the bare study address with her id: refused (the one 4xx the walk expects),
    # in German, and nothing about her is stored.
    context = browser.new_context()
    page = context.new_page()
    refused = page.goto(f"{server}/task/{campaign.slug}/?workerId=cara")
    assert refused is not None and refused.status == 403
    text = page.locator("main").inner_text()
    assert "Dieser Link öffnet die Studie nicht" in text and not ENGLISH.findall(text)
    assert not Worker.objects.filter(external_id="cara").exists()
    context.close()

    context = browser.new_context()
    watch = Watch(context, german=True)
    page = context.new_page()
    # Ben reads the intro and declines: nothing about him is stored but the decline.
    page.goto(links["ben"])
    watch.check(page, "intro (ben)")
    page.click("#consent-decline")
    watch.check(page, "declined")
    _follow_every_link(context, watch, page, "declined page (no links)")
    assert not Judgment.objects.filter(worker__external_id="ben").exists()
    context.close()

    # Anna consents, trains, answers, continues, and finally withdraws.
    context = browser.new_context(
        viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True
    )
    watch = Watch(context, german=True)
    page = context.new_page()
    page.goto(links["anna"])
    watch.check(page, "intro (anna)")
    page.click("#consent-agree")
    watch.check(page, "training")
    for _ in range(2):  # two training items, feedback after each
        _answer_page(page)
        watch.check(page, "training feedback")
        page.click("#training-continue")
        watch.check(page, "after feedback")
    assert Consent.objects.filter(worker__external_id="anna").exists()
    while page.locator("#answer-form").count():
        _answer_page(page)
        watch.check(page, "item")
    assert page.locator("#continue-link").count() == 1  # the end page
    code = Assignment.objects.get(worker__external_id="anna").completion_code
    assert code in page.locator("main").inner_text()
    _follow_every_link(context, watch, page, "end page (anna)")

    page.click("#continue-link")  # the second assignment: the items left
    watch.check(page, "continued")
    while page.locator("#answer-form").count():
        _answer_page(page)
        watch.check(page, "item (second assignment)")
    _follow_every_link(context, watch, page, "second end page (anna)")
    answered = Judgment.objects.filter(worker__external_id="anna").count()
    assert answered >= 3 * len(ITEMS) // 2

    page.click("#withdraw-link")
    watch.check(page, "withdraw confirmation")
    _follow_every_link(context, watch, page, "withdraw confirmation")
    page.click("#withdraw-confirm")
    watch.check(page, "withdrawn")
    _follow_every_link(context, watch, page, "withdrawn page (no links)")
    context.close()


def _ed_study(slug: str) -> Campaign:
    campaign = campaign_create(
        slug=slug,
        name="Einfühlsame Gespräche",
        protocol="empathetic_chat",
        parameters={"min_utterances": 2, "max_utterances": 2, "heartbeat_s": 2},
        study={"language": "de"},
    )
    return campaign_set_status(campaign=campaign, status="live")


def _situation(page: Page, text: str) -> None:
    page.locator('#emotion-choices input[name="emotion"]').first.check()
    page.locator("#situation-text").fill(text)
    page.click("#situation-submit")


def _say(page: Page, text: str) -> None:
    wait_js(page, "!document.getElementById('message-text').disabled", timeout=TIMEOUT)
    page.locator("#message-text").fill(text)
    page.locator("#message-text").press("Enter")


def _whose_turn(pages: dict[str, Page], last: str | None) -> str:
    """Return the worker whose composer opens next (not the one who just wrote)."""
    for _ in range(TIMEOUT // 100):
        for name, page in pages.items():
            if name != last and page.locator("#message-text").is_enabled():
                return name
        pages[next(iter(pages))].wait_for_timeout(100)
    raise AssertionError("nobody's turn")


def _personal(server: str, campaign: Campaign, worker: str) -> str:
    return f"{server}/task/{campaign.slug}/?workerId={worker}&key={link_key(campaign.slug, worker)}"


def _ed_pair(browser, server: str, slug: str, names: tuple[str, str]):
    """A live German ED study and two workers in their own browsers, arrived by their
    personal links, each having written a situation (they are paired next)."""
    campaign = _ed_study(slug)
    contexts = {name: browser.new_context() for name in names}
    watches = {name: Watch(ctx, german=True) for name, ctx in contexts.items()}
    pages = {name: ctx.new_page() for name, ctx in contexts.items()}
    for name, page in pages.items():
        page.goto(_personal(server, campaign, name))
        watches[name].check(page, f"chat page ({name})")
        _situation(page, "Ich habe gestern meinen Schlüssel im Zug verloren und war traurig.")
    return campaign, contexts, watches, pages


def test_an_ed_pair_by_personal_links_one_closes_the_tab_and_comes_back(
    asgi_live_server,  # noqa: F811
    browser,
):
    server = asgi_live_server
    campaign, contexts, watches, pages = _ed_pair(browser, server, "ed-walk", ("alice", "bob"))
    for n in (1, 2):  # two conversations of two messages, roles swapped
        for page in pages.values():
            page.get_by_role("heading", name=re.compile(f"Gespräch {n} von 2")).wait_for(
                timeout=TIMEOUT
            )
        last = None
        for text in ("Oh nein, das tut mir leid.", "Danke, es geht schon wieder."):
            last = _whose_turn(pages, last)
            _say(pages[last], text)
    # Bob closes the tab at the end screen, before taking his code; he comes back by his link.
    pages["alice"].locator("#finish-link").wait_for(state="visible", timeout=TIMEOUT)
    watches["bob"].check(pages["bob"], "chat end (bob)")
    pages["bob"].close()
    page = contexts["bob"].new_page()
    page.goto(_personal(server, campaign, "bob"))
    watches["bob"].check(page, "bob back")
    code = Assignment.objects.get(worker__external_id="bob").completion_code
    assert code in page.locator("main").inner_text()  # his chat's end screen, not a new task
    _follow_every_link(contexts["bob"], watches["bob"], page, "end page (bob)")
    alice = pages["alice"]
    alice.click("#finish-link")
    watches["alice"].check(alice, "end page (alice)")
    _follow_every_link(contexts["alice"], watches["alice"], alice, "end page (alice)")
    for ctx in contexts.values():
        ctx.close()
    # Bob's chat ended done; "Start another chat" (followed above) opened a new one.
    stages = ChatSeat.objects.filter(worker__external_id="bob").order_by("pk")
    assert list(stages.values_list("stage", flat=True)) == ["done", "situation"]


def test_an_ed_partner_who_closes_the_tab_mid_chat_comes_back_to_the_end_and_code(
    asgi_live_server,  # noqa: F811
    browser,
):
    server = asgi_live_server
    campaign, contexts, watches, pages = _ed_pair(browser, server, "ed-walk-left", ("carl", "dana"))
    for page in pages.values():
        page.get_by_role("heading", name=re.compile("Gespräch 1 von 2")).wait_for(timeout=TIMEOUT)
    pages["dana"].close()  # mid-chat: the partner is told within the heartbeat
    carl = pages["carl"]
    carl.locator("#finish-link").wait_for(state="visible", timeout=TIMEOUT)
    watches["carl"].check(carl, "partner left (carl)")
    assert carl.locator("#connection").inner_text() == ""  # no "Disconnected" at an end
    carl.click("#finish-link")
    watches["carl"].check(carl, "end page (carl)")
    _follow_every_link(contexts["carl"], watches["carl"], carl, "end page (carl)")

    page = contexts["dana"].new_page()  # Dana comes back by her link
    page.goto(_personal(server, campaign, "dana"))  # her chat's end screen, not a new task
    watches["dana"].check(page, "end page (dana)")
    code = Assignment.objects.get(worker__external_id="dana").completion_code
    assert code and code in page.locator("main").inner_text()
    _follow_every_link(contexts["dana"], watches["dana"], page, "end page (dana)")
    for ctx in contexts.values():
        ctx.close()
    # Her chat ended as left; "Start another chat" (followed above) opened a new one.
    stages = ChatSeat.objects.filter(worker__external_id="dana").order_by("pk")
    assert list(stages.values_list("stage", flat=True)) == ["left", "situation"]
