"""Declared protocol capabilities: callers ask what a protocol can do, never its name; the
minimal example protocol of docs/architecture.md runs through a whole campaign."""

import re
from pathlib import Path

import pytest
from django.conf import settings
from django.test import override_settings
from django.urls import reverse

from annotation.items import campaign_items_from_dataset, campaign_items_from_responses
from annotation.models import Campaign, Judgment
from annotation.protocols import (
    Battles,
    DialogueItems,
    GoldChecks,
    LiveChat,
    ModelPairs,
    Protocol,
    ResponseItems,
    Simulated,
    registry,
)
from annotation.selectors import campaign_report
from annotation.services import campaign_create, campaign_set_status, items_add
from evalsite.errors import InvalidParameters
from tests.test_layers import PACKAGES

ROOT = Path(__file__).resolve().parents[3]
ARCHITECTURE = ROOT / "docs" / "architecture.md"

DECLARED = {
    "likert": {ResponseItems, GoldChecks, Simulated},
    "pairwise": {ResponseItems, GoldChecks, Simulated, ModelPairs},
    "ssa": {ResponseItems, GoldChecks, Simulated},
    "emotionlines": {DialogueItems, GoldChecks, Simulated},
    "emocontext": {DialogueItems, GoldChecks, Simulated},
    "empathetic_chat": {LiveChat},
    "ssa_interactive": {LiveChat, Simulated},
    "categorical": {GoldChecks, Simulated},
    "acute": {Simulated, ModelPairs},
    "arena": {LiveChat, Simulated, ModelPairs, Battles, GoldChecks},
}
CAPABILITIES = (
    ResponseItems,
    DialogueItems,
    GoldChecks,
    Simulated,
    LiveChat,
    ModelPairs,
    Battles,
)


def test_every_protocol_declares_exactly_its_capabilities():
    assert {p.name for p in registry.all()} == set(DECLARED)
    for protocol in registry.all():
        have = {c for c in CAPABILITIES if isinstance(protocol, c)}
        assert have == DECLARED[protocol.name], protocol.name


def test_the_core_interface_holds_no_optional_method():
    optional = {"items_build", "items_from_dialogues", "labeled_dialogues", "clean_gold"}
    optional |= {"gold_correct", "simulate_answers", "report_dialogues", "chat_mode"}
    assert not optional & set(dir(Protocol))


def test_chat_modes_are_the_ones_chat_handles():
    from chat.modes import HANDLERS

    modes = {p.chat_mode for p in registry.all() if isinstance(p, LiveChat)}
    assert modes == set(HANDLERS) == {"pair", "bot", "side_by_side"}


# A protocol name compared with a protocol or its name: `campaign.protocol == "likert"`,
# `protocol.name != 'ssa'`, in JS `s.protocol === "ssa"` (a command's own --task choice that
# happens to be spelt like a protocol is not one).
def _name_comparisons(text: str, names: set[str]) -> list[str]:
    alternatives = "|".join(re.escape(n) for n in sorted(names))
    pattern = re.compile(
        rf"""(?:\b(?:protocol|name)\b[\w.\]\["']*\s*[=!]==?\s*["']({alternatives})["'])"""
        rf"""|(?:["']({alternatives})["']\s*[=!]==?\s*[\w.]*\b(?:protocol|name)\b)"""
    )
    return [m.group(0) for m in pattern.finditer(text)]


def test_no_protocol_name_is_compared_outside_its_own_module():
    names = {p.name for p in registry.all()}
    found = []
    for folder in (*PACKAGES, "templates", "static"):
        for path in (ROOT / folder).rglob("*"):
            if path.suffix not in {".py", ".html", ".js"} or "migrations" in path.parts:
                continue
            own = any((ROOT / "annotation" / "protocols" / name) in path.parents for name in names)
            if own:
                continue
            hits = _name_comparisons(path.read_text(encoding="utf-8"), names)
            found += [f"{path.relative_to(ROOT)}: {hit}" for hit in hits]
    assert found == []


def test_the_name_check_finds_comparisons():
    assert _name_comparisons('if p.name == "ssa":\n', {"ssa"}) == ['name == "ssa"']
    js = "var ed = s.protocol === 'ssa';"
    assert _name_comparisons(js, {"ssa"}) == ["protocol === 'ssa'"]
    html = '{% if campaign.protocol != "ssa" %}'
    assert _name_comparisons(html, {"ssa"}) == ['protocol != "ssa"']
    assert _name_comparisons('"ssa" == campaign.protocol', {"ssa"}) == [
        '"ssa" == campaign.protocol'
    ]
    assert _name_comparisons('registry.get("ssa")', {"ssa"}) == []
    assert _name_comparisons('last_turn=task == "ssa"', {"ssa"}) == []


@pytest.mark.django_db
def test_a_protocol_without_gold_checks_refuses_gold_items():
    campaign = campaign_create(slug="ed", name="ED", protocol="empathetic_chat")
    with pytest.raises(InvalidParameters, match="takes no gold items"):
        items_add(campaign=campaign, items=[("g1", {"context": ["x"]}, {"q": ["y"]})])
    assert not campaign.items.exists()


@pytest.mark.django_db
def test_items_come_only_from_the_sources_a_protocol_declares():
    likert = campaign_create(slug="l", name="L", protocol="likert")
    with pytest.raises(InvalidParameters, match="not built from dialogues"):
        campaign_items_from_dataset(campaign=likert, dataset="anything")
    emotionlines = campaign_create(slug="e", name="E", protocol="emotionlines")
    with pytest.raises(InvalidParameters, match="not built from model responses"):
        campaign_items_from_responses(
            campaign=emotionlines, contexts=[], models=[], responses={"m": {}}
        )


def _example_sources() -> tuple[str, str]:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    python = re.search(
        r'```python\n("""annotation/protocols/politeness/__init__.py.*?)```', text, re.S
    )
    html = re.search(r"`annotation/protocols/politeness/task.html`.*?```html\n(.*?)```", text, re.S)
    assert python and html, "docs/architecture.md lost its minimal example protocol"
    return python.group(1), html.group(1)


@pytest.mark.django_db
def test_the_documented_minimal_protocol_runs_a_campaign(client, tmp_path, monkeypatch):
    code, template = _example_sources()
    namespace: dict = {}
    exec(compile(code, "politeness.py", "exec"), namespace)  # noqa: S102 (our own docs)
    protocol = namespace["PolitenessProtocol"]()
    assert not any(isinstance(protocol, c) for c in CAPABILITIES)
    monkeypatch.setitem(registry._by_name, protocol.name, protocol)
    (tmp_path / "politeness").mkdir()
    (tmp_path / "politeness" / "task.html").write_text(template)
    templates = [dict(settings.TEMPLATES[0], DIRS=[tmp_path, *settings.TEMPLATES[0]["DIRS"]])]

    campaign = campaign_create(
        slug="polite", name="Polite?", protocol="politeness", controls={"open_links": True}
    )
    assert campaign.redundancy == 3
    with pytest.raises(InvalidParameters):
        items_add(campaign=campaign, items=[("bad", {"context": ["Hi"], "response": " "})])
    items_add(
        campaign=campaign,
        items=[("i1", {"context": ["Can you help?"], "response": "Of course, gladly."})],
    )
    campaign_set_status(campaign=campaign, status=Campaign.Status.LIVE)
    with override_settings(TEMPLATES=templates):
        url = reverse("annotation:task", args=["polite"]) + "?workerId=w1"
        page = client.get(url)
        assert page.status_code == 200
        html = page.content.decode()
        assert "Of course, gladly." in html and "Is the reply polite?" in html
        token = re.search(r'name="token" value="([^"]+)"', html).group(1)
        item = re.search(r'name="item" value="(\d+)"', html).group(1)
        submit = reverse("annotation:task_submit", args=["polite"]) + "?workerId=w1"
        refused = client.post(submit, {"token": token, "item": item, "polite": "maybe"})
        assert refused.status_code == 400 and not Judgment.objects.exists()
        stored = client.post(submit, {"token": token, "item": item, "polite": "yes"})
        assert stored.status_code == 302
    assert list(Judgment.objects.values_list("question", "value")) == [("polite", "yes")]
    table = campaign_report(campaign).tables["politeness"]
    assert table.to_dict("records") == [{"judgments": 1, "polite": 1.0}]
