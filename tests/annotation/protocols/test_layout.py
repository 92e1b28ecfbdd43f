"""One folder per protocol (docs/protocols.md, "Adding a protocol"): its module, worker-page
template, instructions, judge prompt and planner design live in
``annotation/protocols/<name>/``, and no module outside names a protocol by a string."""

from __future__ import annotations

import ast
from pathlib import Path

from django.template.loader import get_template

from annotation.protocols import Judged, LiveChat, Planned, Protocol, registry
from tests.test_layers import PACKAGES

ROOT = Path(__file__).resolve().parents[3]
PROTOCOLS = ROOT / "annotation" / "protocols"

# The string constants outside the protocols' folders that are spelt like a protocol but name
# something else; each (path, name) with why it stays.
ALLOWED = {
    # The data set formats of the readers (EmotionLines' and EmoContext's own files), not
    # the protocols that label them.
    ("corpora/__init__.py", "emotionlines"),
    ("corpora/__init__.py", "emocontext"),
    # `score_emotions --task`: the two shared tasks a classifier is scored on (EmoContext's
    # micro-F1, EmotionX's WA/UWA), named after their data sets.
    ("annotation/management/commands/score_emotions.py", "emotionlines"),
    ("annotation/management/commands/score_emotions.py", "emocontext"),
    # A report column: the SSA metric (Sensibleness and Specificity Average) in the glossary.
    ("dashboard/glossary.py", "ssa"),
}


def _names() -> set[str]:
    return {p.name for p in registry.all()}


def _named(path: Path, names: set[str]) -> list[tuple[str, int]]:
    """Return the string constants of ``path`` equal to one of ``names``, with their line."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        (node.value, node.lineno)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names
    ]


def _outside_modules() -> list[Path]:
    return [
        path
        for app in PACKAGES
        for path in sorted((ROOT / app).rglob("*.py"))
        if "migrations" not in path.parts and PROTOCOLS not in path.parents
    ]


def test_no_module_outside_the_protocols_names_a_protocol_by_a_string():
    names = _names()
    found = [
        f"{path.relative_to(ROOT)}:{line}: {name!r}"
        for path in _outside_modules()
        for name, line in _named(path, names)
        if (str(path.relative_to(ROOT)), name) not in ALLOWED
    ]
    assert found == []


def test_the_scan_finds_a_name_used_as_a_key_or_a_comparison(tmp_path):
    source = tmp_path / "table.py"
    source.write_text(
        'TABLE = {"likert": 1}\nif campaign.protocol == "ssa":\n    pass\n"""ssa"""\n'
    )
    assert sorted(_named(source, {"likert", "ssa"})) == [("likert", 1), ("ssa", 2), ("ssa", 4)]
    assert len(_outside_modules()) > 100  # the scan reads the apps, not an empty list


def test_every_allowed_exception_is_still_there():
    names = _names()
    present = {
        (str(path.relative_to(ROOT)), name)
        for path in _outside_modules()
        for name, _line in _named(path, names)
    }
    assert present >= ALLOWED, "drop an allowed exception that no longer occurs"


def _declares(protocol: Protocol, *attributes: str) -> bool:
    """Whether the protocol's own class (not the core's default) defines one of these."""
    return any(a in vars(type(protocol)) for a in attributes)


def test_every_protocol_folder_holds_its_module_template_and_instructions():
    for protocol in registry.all():
        folder = PROTOCOLS / protocol.name
        assert type(protocol).__module__ == f"annotation.protocols.{protocol.name}"
        assert (folder / "__init__.py").is_file(), protocol.name
        get_template(protocol.template_name)  # the loader finds it
        if isinstance(protocol, LiveChat):  # the chat page serves every live chat
            assert protocol.template_name == "annotation/chat.html"
        else:
            assert protocol.template_name == f"{protocol.name}/task.html"
            assert (folder / "task.html").is_file(), protocol.name
        assert _declares(protocol, "instructions", "default_instructions"), protocol.name
        if isinstance(protocol, Judged):
            assert "{questions}" in protocol.judge_prompt, protocol.name
            assert protocol.judge_prompt_version.startswith(f"{protocol.name}-"), protocol.name
        if isinstance(protocol, Planned):
            assert (folder / "planner.py").is_file(), protocol.name


def test_the_published_instructions_are_the_protocols_own():
    likert = registry.get("likert")
    assert "**last response**" in likert.default_instructions(likert.default_parameters())
    emotionlines = registry.get("emotionlines")
    text = emotionlines.default_instructions({"min_seconds_per_utterance": 4})
    assert "at least 4 seconds" in text and "{seconds" not in text
    categorical = registry.get("categorical")
    assert categorical.default_instructions({"instructions": "Pick one."}) == "Pick one."
    acute = registry.get("acute")  # its page's card says it all
    assert acute.default_instructions(acute.default_parameters()) == ""
