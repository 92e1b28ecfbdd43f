"""Worker pages in the campaign's language (docs/protocols.md, "Languages"): German pages,
English ones unchanged, a researcher's own wording as written, the language checked, and the
shipped German catalog complete."""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import urlencode

import polib
import pytest
from asgiref.sync import async_to_sync
from django.conf import settings
from django.urls import reverse

from annotation.protocols import registry
from annotation.services import campaign_create, campaign_settings_update, training_items_add
from evalsite.errors import InvalidParameters
from evalsite.translations import catalogs_compile
from tests.annotation.test_training import TRAINING, ssa_payload
from tests.chat.helpers import Client, ed_campaign, ws_path
from tests.factories import CampaignFactory, ItemFactory

ROOT = Path(settings.BASE_DIR)
CATALOG = ROOT / "locale" / "de" / "LC_MESSAGES" / "django.po"
LIKERT = {"empathy": "4", "relevance": "5", "fluency": "3"}


def url(campaign, name="task", **params):
    query = {"workerId": "w1"} | params
    return reverse(f"annotation:{name}", args=[campaign.slug]) + "?" + urlencode(query)


def html_of(response) -> str:
    return response.content.decode()


def form_of(html: str) -> tuple[str, str]:
    token = re.search(r'name="token" value="([^"]+)"', html).group(1)
    item = re.search(r'name="item" value="(\d+)"', html).group(1)
    return token, item


def likert(language: str, **fields):
    campaign = CampaignFactory(language=language, items_per_assignment=2, **fields)
    ItemFactory.create_batch(3, campaign=campaign)
    return campaign


def pairwise(language: str):
    campaign = CampaignFactory(
        language=language,
        protocol="pairwise",
        parameters=registry.get("pairwise").default_parameters(),
    )
    payload = {
        "context": ["I got the job!"],
        "model_a": "a",
        "response_a": "Congratulations, well deserved!",
        "model_b": "b",
        "response_b": "Okay.",
        "example": "e1",
    }
    ItemFactory(campaign=campaign, payload=payload)
    return campaign


def ssa(language: str):
    campaign = CampaignFactory(
        language=language,
        protocol="ssa",
        parameters={},
        training_pass_mark=0.66,
        training_attempts=2,
    )
    ItemFactory.create_batch(2, campaign=campaign, payload=ssa_payload("Staying in, reading."))
    return campaign


@pytest.mark.django_db
def test_a_german_likert_task_page_is_german_and_an_english_one_unchanged(client):
    german = html_of(client.get(url(likert("de"))))
    assert '<html lang="de">' in german
    assert "Aufgabe 1 von 2" in german
    assert "Lesen Sie das Gespräch unten und bewerten Sie dann die <strong>letzte Antwort" in german
    assert "Zeigten die Antworten Verständnis für die Gefühle der Person" in german
    assert "Empathie/Mitgefühl" in german and "Sprachfluss" in german
    assert "1 – überhaupt nicht" in german and "5 – sehr" in german
    assert "Erzähler/in:" in german and "Absenden und weiter" in german
    strings = json.loads(re.search(r'id="task-strings"[^>]*>(.*?)</script>', german).group(1))
    assert strings["wait"] == "Bitte lesen Sie sorgfältig: Sie können in %(seconds)s s antworten."
    assert "Did the responses" not in german and "Submit and continue" not in german

    english = html_of(client.get(url(likert("en"))))
    assert '<html lang="en">' in english
    assert "Item 1 of 2" in english and "Submit and continue" in english
    assert "Did the responses show understanding of the feelings" in english
    assert "1 – not at all" in english and "Speaker:" in english
    assert "Aufgabe" not in english


@pytest.mark.django_db
def test_german_a_b_and_ssa_questions_and_choices(client):
    ab = html_of(client.get(url(pairwise("de"))))
    assert "Welche Antwort ist in diesem Gespräch besser?" in ab
    for label in ("Die erste Antwort", "Die zweite Antwort", "Beide gleich", "Keine von beiden"):
        assert label in ab
    assert "Erste Antwort" in ab and "Zweite Antwort" in ab

    page = html_of(client.get(url(ssa("de"))))
    assert "Ist die Antwort sinnvoll? Nutzen Sie Ihren gesunden Menschenverstand" in page
    assert "Ist die Antwort spezifisch für den Zusammenhang?" in page
    assert "<span>Ja</span>" in page and "<span>Nein</span>" in page
    assert "Zu beurteilende Antwort" in page


@pytest.mark.django_db
def test_a_researcher_s_own_wording_stays_as_written(client):
    parameters = registry.get("pairwise").default_parameters() | {
        "question": "Which reply would you rather get from a friend?"
    }
    campaign = pairwise("de")
    campaign.parameters = parameters
    campaign.save(update_fields=["parameters"])
    page = html_of(client.get(url(campaign)))
    assert "Which reply would you rather get from a friend?" in page
    assert "Die erste Antwort" in page  # the published choices are still translated


@pytest.mark.django_db
def test_german_errors_on_a_missing_answer(client):
    campaign = likert("de")
    token, item = form_of(html_of(client.get(url(campaign))))
    refused = client.post(url(campaign, "task_submit"), {"token": token, "item": item})
    page = html_of(refused)
    assert refused.status_code == 400
    assert "Einige Antworten fehlen oder sind ungültig." in page
    assert "Bitte wählen Sie eine Bewertung." in page


@pytest.mark.django_db
def test_german_intro_consent_and_decline(client):
    campaign = likert(
        "de",
        description="Eine Studie über **Chatbots**.",
        consent_text="Ich bin einverstanden.",
        consent_version="2",
    )
    intro = client.get(url(campaign))
    assert "/consent/" in intro["Location"]
    page = html_of(client.get(intro["Location"]))
    assert "Über diese Studie" in page and "<strong>Chatbots</strong>" in page
    assert "Was Sie tun werden" in page
    assert "bewerten Sie dann die <strong>letzte Antwort</strong>" in page  # default, in German
    assert "Version der Einwilligungserklärung: 2." in page
    assert "Ich willige ein, Studie beginnen" in page and "Ich willige nicht ein" in page
    declined = html_of(client.post(intro["Location"], {"choice": "decline"}))
    assert "Sie nehmen nicht teil" in declined
    assert "Vielen Dank für Ihr Interesse" in declined


@pytest.mark.django_db
def test_german_training_page_and_feedback(client):
    campaign = ssa("de")
    training_items_add(campaign=campaign, items=TRAINING)
    page = html_of(client.get(url(campaign, "task_training")))
    assert "Zuerst üben" in page and "Übungsaufgabe 1 von 3 · Versuch 1 von 2" in page
    assert "Beantworten Sie vor der Studie 3 Übungsaufgaben." in page
    assert "So antworten Sie" in page and "Meine Antwort prüfen" in page
    item = re.search(r'name="item" value="(\d+)"', page).group(1)
    feedback = html_of(
        client.post(
            url(campaign, "task_training"), {"item": item, "sensible": "yes", "specific": "yes"}
        )
    )
    assert "Nicht wie erwartet" in feedback
    assert '<th scope="row">Sinnvoll</th><td>Ja ✗</td><td>Nein</td>' in feedback
    assert "Nächste Übungsaufgabe" in feedback


@pytest.mark.django_db
def test_german_end_page_and_withdrawal(client):
    campaign = likert("de")
    for _ in range(2):
        token, item = form_of(html_of(client.get(url(campaign))))
        done = client.post(url(campaign, "task_submit"), {"token": token, "item": item, **LIKERT})
    end = html_of(client.get(done["Location"]))
    assert "<h1>Vielen Dank!</h1>" in end
    assert "Sie haben diese Aufgabe abgeschlossen: Ihre Antworten sind gespeichert." in end
    assert "Ihr Abschlusscode:" in end and "Mit weiteren Aufgaben fortfahren" in end
    withdraw = html_of(client.get(url(campaign, "task_withdraw", token=token)))
    assert "Teilnahme an dieser Studie widerrufen?" in withdraw
    gone = html_of(client.post(url(campaign, "task_withdraw"), {"token": token}))
    assert "Sie haben Ihre Teilnahme widerrufen" in gone


@pytest.mark.django_db
def test_an_unknown_or_closed_study_answers_in_the_site_s_language(client):
    closed = likert("de", status="paused")
    page = html_of(client.get(url(closed)))
    assert "There is no open study at this address." in page  # tells nothing about it


@pytest.mark.django_db
def test_a_german_chat_page_carries_its_script_s_sentences_in_german(client):
    campaign = ed_campaign()
    campaign_settings_update(campaign=campaign, values={}, study={"language": "de"})
    page = html_of(client.get(url(campaign)))
    assert "Schritt 1: eine Situation beschreiben" in page
    strings = json.loads(re.search(r'id="chat-strings"[^>]*>(.*?)</script>', page).group(1))
    assert strings["connected"] == "Verbunden"
    assert strings["your_message"] == "Ihre Nachricht"
    assert strings["emotions"]["surprised"] == "überrascht"


@pytest.mark.django_db(transaction=True)
def test_the_chat_socket_speaks_the_campaign_s_language():
    campaign = ed_campaign()
    campaign_settings_update(campaign=campaign, values={}, study={"language": "de"})
    path = ws_path(campaign, "alice")

    async def scenario():
        client = Client(path)
        state = await client.connect()
        await client.send(type="situation", emotion=state["offered"][0], text="")
        error = await client.until(lambda f: f["type"] == "error")
        await client.close()
        return error

    error = async_to_sync(scenario)()
    assert error["message"] == "Bitte überprüfen Sie Ihre Situation."
    assert error["fields"]["situation"].startswith("Beschreiben Sie eine Situation")


@pytest.mark.django_db
def test_the_language_is_one_of_the_site_s_and_checked_with_the_study_texts():
    campaign = campaign_create(slug="de-1", name="D", protocol="likert", study={"language": "de"})
    assert campaign.language == "de"
    assert campaign_create(slug="en-1", name="E", protocol="likert").language == "en"
    with pytest.raises(InvalidParameters) as refused:
        campaign_create(slug="xx-1", name="X", protocol="likert", study={"language": "fr"})
    assert "en, de" in refused.value.message and "'fr'" in refused.value.message
    with pytest.raises(InvalidParameters) as again:
        campaign_settings_update(campaign=campaign, values={}, study={"language": "klingon"})
    assert "language" in again.value.fields


def _worker_sources() -> set[str]:
    """The files whose marked strings a worker reads."""
    sources = {str(p.relative_to(ROOT)) for p in (ROOT / "templates/annotation").rglob("*.html")}
    protocols = ROOT / "annotation/protocols"
    sources |= {str(p.relative_to(ROOT)) for p in protocols.glob("*.py")}
    sources |= {str(p.relative_to(ROOT)) for p in protocols.glob("*/__init__.py")}
    sources |= {str(p.relative_to(ROOT)) for p in protocols.glob("*/*.html")}
    return sources | {
        "workerpages/views.py",
        "workerpages/helpers.py",
        "workerpages/training.py",
        "workerpages/chat.py",
        "annotation/study_pages.py",
        "chat/snapshot.py",
        "providers/base.py",
        "providers/local.py",
        "providers/prolific.py",
        "providers/mturk.py",
        "annotation/services/visits.py",
        "annotation/services/consents.py",
        "annotation/services/assignments.py",
        "annotation/services/judgments.py",
    }


def test_the_german_catalog_is_complete_and_checked():
    catalog = polib.pofile(str(CATALOG))
    assert catalog.percent_translated() == 100
    assert catalog.untranslated_entries() == [] and catalog.fuzzy_entries() == []
    assert catalog.obsolete_entries() == []
    covered = {path for entry in catalog for path, _line in entry.occurrences}
    assert covered >= _worker_sources() - {
        "annotation/protocols/__init__.py",
        "annotation/protocols/base.py",
        "templates/annotation/message.html",  # its title and text come from the views
        "templates/annotation/_questions.html",  # the protocols' wording, marked there
    }
    placeholder = re.compile(r"%\(\w+\)[-.\d]*[sdgf]|\{\w+(?::\w+)?\}")
    for entry in catalog:
        pairs = (
            [(entry.msgid, entry.msgstr)]
            if not entry.msgid_plural
            else [
                (entry.msgid, entry.msgstr_plural[0]),
                (entry.msgid_plural, entry.msgstr_plural[1]),
            ]
        )
        for source, translated in pairs:
            assert translated.strip(), entry.msgid
            assert sorted(placeholder.findall(source)) == sorted(placeholder.findall(translated))


def test_every_marked_string_of_the_worker_pages_is_in_the_catalog():
    """A string marked since the last makemessages would show in English: compare the
    templates' and modules' marked strings with the catalog's."""
    known = {entry.msgid for entry in polib.pofile(str(CATALOG))}
    marked = re.compile(r'(?:gettext(?:_lazy|_noop)?|\b_)\(\s*"((?:[^"\\]|\\.)*)"\s*\)')
    single = re.compile(r'{% translate "([^"]+)" %}')
    for source in sorted(_worker_sources()):
        text = (ROOT / source).read_text()
        for found in marked.findall(text) + single.findall(text):
            assert found.replace('\\"', '"') in known, (source, found)


def test_catalogs_compile_writes_missing_or_outdated_mo_files_without_fuzzy_entries(tmp_path):
    folder = tmp_path / "de" / "LC_MESSAGES"
    folder.mkdir(parents=True)
    source = polib.POFile()
    source.metadata = {"Content-Type": "text/plain; charset=UTF-8"}
    source.append(polib.POEntry(msgid="Yes", msgstr="Ja"))
    source.append(polib.POEntry(msgid="No", msgstr="Nö", flags=["fuzzy"]))
    source.save(str(folder / "django.po"))
    assert catalogs_compile(tmp_path) == [folder / "django.mo"]
    assert catalogs_compile(tmp_path) == []  # up to date
    compiled = {e.msgid: e.msgstr for e in polib.mofile(str(folder / "django.mo"))}
    assert compiled == {"Yes": "Ja"}
    assert catalogs_compile(tmp_path, force=True) == [folder / "django.mo"]
