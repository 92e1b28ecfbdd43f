"""De-identification: typed, indexed, consistent per dialogue; reviewed; never exported."""

import json
import re
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.dataset_reads import deidentification_replacements
from annotation.deidentify import Deidentifier, _Names, names_read
from annotation.models import Dataset, Situation, Utterance

CHAT = (
    '{"dialogue": "c1", "utterances": ['
    '{"speaker": "Amy", "text": "Hi Bob, mail amy.chen@example.com or call +886 912-345-678"}, '
    '{"speaker": "Bob", "text": "See https://example.com/x and @bob_w, I am in Taipei"}, '
    '{"speaker": "Amy", "text": "Taipei again? bob, amy.chen@example.com works"}]}\n'
    '{"dialogue": "c2", "utterances": [{"speaker": "Cid", "text": "Is Amy in Paris?"}]}\n'
)


def test_each_kind_is_replaced_by_its_type_and_index_consistently_within_a_dialogue():
    names = {"Taipei": "location", "Paris": "location", "Bob": "person", "Amy": "person"}
    texts, speakers, replaced = Deidentifier(names=names).dialogue(
        [
            "Hi Bob, mail amy.chen@example.com or call +886 912-345-678",
            "See https://example.com/x and @bob_w, I am in Taipei",
            "Taipei again? bob, amy.chen@example.com works",
        ],
        ["Amy", "Bob", "Amy"],
    )
    assert texts == [
        "Hi person_2, mail email_1 or call phone_1",
        "See url_1 and handle_1, I am in location_1",
        "location_1 again? person_2, email_1 works",
    ]
    assert speakers == ["person_1", "person_2", "person_1"]
    assert {(r.kind, r.original) for r in replaced} >= {("url", "https://example.com/x")}
    # The numbering starts again in the next dialogue.
    assert Deidentifier(names=names).dialogue(["In Paris"], ["Amy"])[0] == ["In location_1"]


def test_names_file_types_and_errors(tmp_path):
    path = tmp_path / "names.tsv"
    path.write_text("# names\nAmy\nTaipei\tlocation\n", encoding="utf-8")
    assert names_read(path) == {"Amy": "person", "Taipei": "location"}
    path.write_text("Mars\tplanet\n", encoding="utf-8")
    with pytest.raises(ValueError, match="line 1: unknown type 'planet'"):
        names_read(path)


@pytest.mark.django_db
def test_import_deidentifies_review_lists_it_and_export_never_holds_originals(
    tmp_path, admin_client, client
):
    chat, names = tmp_path / "chat.jsonl", tmp_path / "names.tsv"
    chat.write_text(CHAT, encoding="utf-8")
    names.write_text("Taipei\tlocation\nParis\tlocation\n", encoding="utf-8")
    call_command(
        "import_dataset", "jsonl", str(chat), "--name", "push",
        "--deidentify", "--names", str(names), "--speakers-are-persons",
    )  # fmt: skip
    stored = " ".join(Utterance.objects.values_list("text", flat=True))
    for secret in ("amy.chen", "912-345", "Taipei", "bob_w", "example.com", "Bob"):
        assert secret not in stored
    dataset = Dataset.objects.get(name="push")
    rows = deidentification_replacements(dataset)
    assert {"dialogue": "c1", "utterance": 1, "type": "location", "original": "Taipei",
            "replacement": "location_1"} in rows  # fmt: skip
    # c2: Amy is not a speaker there and not on the list, so she is not caught; Paris is.
    assert [r["original"] for r in rows if r["dialogue"] == "c2"] == ["Cid", "Paris"]

    url = f"/admin/annotation/dataset/{dataset.pk}/deidentification/"
    page = admin_client.get(url)
    assert page.status_code == 200 and b"location_1" in page.content and b"Taipei" in page.content
    assert client.get(url).status_code == 302  # not staff: sent to the login page

    out = tmp_path / "out.jsonl"
    call_command("export", "--dataset", "push", "--format", "jsonl", "--out", str(out))
    exported = out.read_text(encoding="utf-8")
    assert "Taipei" not in exported and "amy.chen" not in exported
    assert json.loads(exported.splitlines()[0])["metadata"]["deidentification"][0]["replacement"]


def test_names_need_deidentify(tmp_path):
    with pytest.raises(CommandError, match="only with --deidentify"):
        call_command("import_dataset", "jsonl", str(tmp_path / "x"), "--names", "n.tsv")


def test_the_situation_is_deidentified_with_the_dialogues_numbering():
    names = {"Amy": "person", "Taipei": "location"}
    done = Deidentifier(names=names).conversation(
        ["I saw Amy in Taipei", "Call Amy at 415-555-0100"],
        ["w1", "w2"],
        situation="Amy (amy@example.com, 415-555-0100) left Taipei.",
    )
    assert done.situation == "person_1 (email_1, phone_1) left location_1."
    assert done.texts == ["I saw person_1 in location_1", "Call person_1 at phone_1"]
    assert ("situation", "email", "amy@example.com", "email_1") in {
        (r.utterance, r.kind, r.original, r.replacement) for r in done.replacements
    }


@pytest.mark.django_db
def test_import_stores_the_situation_deidentified(tmp_path):
    chat = tmp_path / "ed.jsonl"
    chat.write_text(
        '{"dialogue": "e1", "emotion": "proud", "situation": "Amy, mail amy@example.com", '
        '"situation_author": "w7", "utterances": ["Amy finished first", "Well done amy"]}\n',
        encoding="utf-8",
    )
    names = tmp_path / "names.tsv"
    names.write_text("Amy\n", encoding="utf-8")
    call_command(
        "import_dataset", "jsonl", str(chat), "--name", "ed", "--deidentify", "--names", str(names)
    )
    assert Situation.objects.get().text == "person_1, mail email_1"
    assert list(Utterance.objects.values_list("text", flat=True)) == [
        "person_1 finished first",
        "Well done person_1",
    ]
    rows = deidentification_replacements(Dataset.objects.get(name="ed"))
    assert {"dialogue": "e1", "utterance": "situation", "type": "email",
            "original": "amy@example.com", "replacement": "email_1"} in rows  # fmt: skip


@pytest.mark.parametrize(
    "number",
    [
        "+1 415 555 0100",
        "(415) 555-0100",
        "415-555-0100",
        "+44 20 7946 0958",
        "0151 496 0000",
        "+886 912-345-678",
        "415.555.0100",
        "+44 (0) 20 7946 0958",
    ],
)
def test_phone_numbers_are_replaced_whole(number):
    [text], _, replaced = Deidentifier().dialogue([f"Call {number} today."])
    assert text == "Call phone_1 today."
    assert [r.original for r in replaced] == [number]


@pytest.mark.parametrize(
    "text",
    [
        "Moved 1990-05-12.",
        "Moved 12/05/1990.",
        "Moved 12.05.1990.",
        "Counting 3 - 2 - 1 - 0, go!",
        "Counting 5 4 3 2 1 0 9 8, go!",
        "From 1990-2000 I lived there.",
        "Room 12, floor 3.",
    ],
)
def test_dates_and_short_digit_runs_are_not_phone_numbers(text):
    assert Deidentifier().dialogue([text])[0] == [text]


def test_a_date_next_to_a_phone_number_leaves_the_date_and_replaces_the_number():
    [text], _, _ = Deidentifier().dialogue(
        ["On 1990-05-12 415-555-0100 and 0151 496 0000 12.05.1990"]
    )
    assert text == "On 1990-05-12 phone_1 and phone_2 12.05.1990"


@pytest.mark.parametrize(
    "domain", ["example.co.uk", "shop.example.com.au", "example.de", "myblog.io", "example.nz"]
)
def test_bare_domains_of_every_country_are_urls(domain):
    [text], _, replaced = Deidentifier().dialogue([f"See {domain}/me now"])
    assert text == "See url_1 now"
    assert [r.original for r in replaced] == [f"{domain}/me"]


@pytest.mark.parametrize("text", ["I got go.You should too", "a world.Life", "fine.thanks"])
def test_a_missing_space_after_a_full_stop_is_no_url(text):
    assert Deidentifier().dialogue([text])[0] == [text]


@pytest.mark.parametrize(
    "iban", ["DE89370400440532013000", "GB82 WEST 1234 5698 7654 32", "BE68539007547034"]
)
def test_ibans_with_a_valid_checksum_are_replaced(iban):
    [text], _, replaced = Deidentifier().dialogue([f"Pay {iban} today"])
    assert text == "Pay iban_1 today"
    assert [(r.kind, r.original) for r in replaced] == [("iban", iban)]


@pytest.mark.parametrize("text", ["Pay DE00370400440532013000 today", "Code AB12CD34EF56 expired"])
def test_a_wrong_iban_checksum_is_no_iban(text):
    assert Deidentifier().dialogue([text])[0] == [text]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I was born on 12 May 1990 here", "I was born on dob_1 here"),
        ("DOB: 12/05/1990", "DOB: dob_1"),
        ("my birthday is March 3rd!", "my birthday is dob_1!"),
        ("Born 1990-05-12.", "Born dob_1."),
        ("b-day: 4th of July", "b-day: dob_1"),
    ],
)
def test_dates_of_birth_are_replaced(text, expected):
    assert Deidentifier().dialogue([text])[0] == [expected]


@pytest.mark.parametrize(
    "text", ["We met on 12 May 1990.", "Born 1990 and raised here.", "I was born in March."]
)
def test_other_dates_and_years_of_birth_are_left(text):
    assert Deidentifier().dialogue([text])[0] == [text]


def test_listed_names_are_found_exactly_where_a_regex_alternation_finds_them():
    names = ["Amy", "Amy Lee", "Lee", "Ann", "Anna", "Zoë", "Ştefan", "Jo-Jo", "Mr. Lee", "İpek"]
    texts = [
        "amy lee met Anna, not Ann; AMY and Lee and mr. lee",
        "Annabel, Amyx, x_Amy, Amy_, Amy's, (Amy) Jo-Jo Jo-Jones",
        "Zoë and ZOË and ştefan; İpek İPEK, i̇pek",
        "Amy Lee Lee Amy Amy Lee",
    ]
    words = sorted(names, key=len, reverse=True)
    pattern = re.compile(
        r"(?<!\w)(?:" + "|".join(re.escape(w) for w in words) + r")(?!\w)", re.IGNORECASE
    )
    finder = _Names(names)
    for text in texts:
        assert list(_Names.matches(text, [finder])) == [m.span() for m in pattern.finditer(text)]


LEAKS = Path(__file__).parents[1] / "annotation" / "data" / "leaks.jsonl"


def test_every_span_of_the_leak_list_is_replaced_and_no_look_alike_as_a_date_or_iban():
    for line in LEAKS.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        _, _, replaced = Deidentifier().dialogue([row["text"]])
        got = {(r.kind, r.original) for r in replaced}
        assert {(kind, span) for kind, span in row["leaks"]} <= got, row["text"]
        if not row["leaks"]:
            assert not {kind for kind, _ in got} & {"dob", "iban"}, row["text"]


@pytest.mark.django_db
def test_import_stores_no_iban_date_of_birth_or_foreign_domain(tmp_path):
    chat = tmp_path / "chat.jsonl"
    chat.write_text(
        '{"dialogue": "d1", "utterances": ['
        '{"speaker": "A", "text": "Pay GB82 WEST 1234 5698 7654 32, see example.co.uk"}, '
        '{"speaker": "B", "text": "I was born on 12 May 1990"}]}\n',
        encoding="utf-8",
    )
    call_command("import_dataset", "jsonl", str(chat), "--name", "d", "--deidentify")
    assert list(Utterance.objects.order_by("index").values_list("text", flat=True)) == [
        "Pay iban_1, see url_1",
        "I was born on dob_1",
    ]
