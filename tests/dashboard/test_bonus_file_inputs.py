"""Bonus files from the dashboard (issue #35): every malformed file gets a clear message and
pays nothing; none answers 500."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation.models import Assignment, Worker
from recruitment.models import Payment

pytestmark = pytest.mark.django_db


@pytest.fixture
def ada(client, researcher):
    client.force_login(researcher)
    return client


def _worker(campaign) -> Worker:
    ids = Assignment.objects.filter(
        campaign=campaign, status=Assignment.Status.SUBMITTED
    ).values_list("worker", flat=True)
    return Worker.objects.filter(pk__in=ids).order_by("pseudonym").first()


def _upload(client, campaign, data: bytes) -> str:
    url = reverse("dashboard:bonuses_upload", args=[campaign.slug])
    file = SimpleUploadedFile("bonuses.csv", data, content_type="text/csv")
    response = client.post(url, {"file": file}, follow=True)
    assert response.status_code == 200
    return response.content.decode()


BAD_FILES = {
    "a field past the CSV reader's limit": (
        lambda w: f'{w},0.50,"{"x" * 200_000}"\n'.encode(),
        "a field is longer than",
    ),
    "UTF-16 with its BOM": (
        lambda w: f"{w},0.50,thanks\n".encode("utf-16"),
        "UTF-8",
    ),
    "Latin-1": (lambda w: f"{w},0.50,très bien\n".encode("latin-1"), "UTF-8"),
    "a binary file": (lambda w: bytes(range(256)) * 8, "UTF-8"),
    "only a header": (lambda w: b"worker,amount,reason\n", "no bonus lines"),
    "only blank lines and commas": (lambda w: b"\n,,\n \n", "no bonus lines"),
    "a huge amount": (lambda w: f"{w},1e999999,thanks\n".encode(), "A bonus must be"),
    "an amount that is not a number": (lambda w: f"{w},NaN,thanks\n".encode(), "A bonus must be"),
    "an infinite amount": (lambda w: f"{w},Infinity,thanks\n".encode(), "A bonus must be"),
    "a negative amount": (lambda w: f"{w},-0.50,thanks\n".encode(), "A bonus must be"),
    "three decimals": (lambda w: f"{w},0.505,thanks\n".encode(), "at most two decimals"),
    "an extra column": (lambda w: f"{w},0.50,thanks,more\n".encode(), "expected 3 fields"),
    "an unknown worker": (lambda w: b"W-nobody,0.50,thanks\n", "no worker"),
    "a formula as worker": (lambda w: b'=HYPERLINK("http://x"),0.50,thanks\n', "no worker"),
    "a NUL byte": (lambda w: f"{w},0.50,tha\x00nks\n".encode(), "NUL"),
    "a reason of spaces": (lambda w: f"{w},0.50,   \n".encode(), "needs a reason"),
}


@pytest.mark.parametrize("case", list(BAD_FILES))
def test_a_malformed_bonus_file_gets_a_clear_message_and_pays_nothing(ada, filled, case) -> None:
    make, message = BAD_FILES[case]
    page = _upload(ada, filled, make(_worker(filled).pseudonym))
    assert message in page
    assert not Payment.objects.exists()


def test_a_bonus_file_with_a_bom_and_windows_line_ends_pays(ada, filled) -> None:
    worker = _worker(filled)
    data = f"\ufeffworker,amount,reason\r\n{worker.pseudonym},0.50,thanks\r\n".encode()
    assert "Paid 1 bonus(es) from the file" in _upload(ada, filled, data)
    assert list(Payment.objects.values_list("worker", "reason")) == [(worker.pk, "thanks")]
