"""The worker pages may be framed by MTurk and Prolific only (CSP frame-ancestors).

The header is checked on every kind of worker page, and a real Chromium confirms that a page
on a listed origin can frame the task while one on any other origin cannot.
"""

import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.environment import CHROMIUM
from tests.factories import CampaignFactory, ItemFactory

ALLOWED = {
    "'self'",
    "https://www.mturk.com",
    "https://worker.mturk.com",
    "https://workersandbox.mturk.com",
    "https://app.prolific.com",
}


def ancestors(response) -> set[str]:
    csp = response["Content-Security-Policy"]
    directive = next(d for d in csp.split(";") if d.strip().startswith("frame-ancestors"))
    return set(directive.split()[1:])


def test_every_worker_page_allows_exactly_mturk_and_prolific_frames(client, campaign):
    pages = [
        client.get(f"/task/{campaign.slug}/?workerId=w1"),  # an item
        client.get(f"/task/{campaign.slug}/?workerId=bad id"),  # an error message
        client.get(
            f"/task/{campaign.slug}/?assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE&hitId=H1"
        ),  # MTurk's preview
    ]
    for response in pages:
        assert ancestors(response) == ALLOWED
        assert "X-Frame-Options" not in response  # it would override frame-ancestors


class _Framer(BaseHTTPRequestHandler):
    target = ""

    def log_message(self, *args):
        pass

    def do_GET(self):
        body = f'<html><body><iframe id="hit" src="{self.target}"></iframe></body></html>'.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _framed_text(browser, framer_url: str) -> str:
    page = browser.new_page()
    try:
        page.goto(framer_url)
        page.wait_for_timeout(1500)
        frame = next(f for f in page.frames if f is not page.main_frame)
        try:
            return frame.inner_text("body", timeout=2000)
        except Exception:  # blocked: Chromium shows its own error page, or nothing
            return ""
    finally:
        page.close()


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_chromium_shows_the_task_only_inside_allowed_frames(live_server, settings):
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    from playwright.sync_api import sync_playwright

    campaign = CampaignFactory()
    ItemFactory(campaign=campaign)
    handler = type(
        "Framer", (_Framer,), {"target": f"{live_server.url}/task/{campaign.slug}/?workerId=fw"}
    )
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    framer = f"http://127.0.0.1:{server.server_address[1]}/"
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path=CHROMIUM,
                headless=True,
                args=["--no-sandbox", "--disable-background-networking", "--disable-gpu"],
            )
            try:
                assert "Item 1 of" not in _framed_text(browser, framer)  # a stranger's site
                settings.WORKER_FRAME_ANCESTORS = [framer.rstrip("/")]  # as if it were MTurk
                assert "Item 1 of" in _framed_text(browser, framer)
            finally:
                browser.close()
    finally:
        server.shutdown()
        server.server_close()
