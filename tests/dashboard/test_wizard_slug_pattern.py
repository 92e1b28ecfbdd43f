"""The wizard's slug field's ``pattern`` compiles as browsers compile it (the ``v`` flag) and
accepts exactly the slugs the service accepts."""

import html
import re
import shutil
import subprocess

import pytest
from django.urls import reverse

from annotation.services.campaigns import campaign_create
from evalsite.errors import AnnotationError

pytestmark = pytest.mark.django_db

# In a v-flag class these must be escaped; a doubled one of DOUBLE is reserved (ECMA-262,
# ClassSetSyntaxCharacter and ClassSetReservedDoublePunctuator).
SYNTAX = set("()[]{}/-\\|")
DOUBLE = set("&!#$%*+,.:;<=>?@^`~")


def v_flag_problem(pattern: str) -> str:
    """Return why ``pattern`` does not compile under the ``v`` flag's class rules ("" if it
    does); only character classes differ from the ``u`` flag in what this checks."""
    i, depth, last_char = 0, 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i, last_char = i + 2, True
            continue
        if depth == 0:
            depth, last_char = (1, False) if c == "[" else (0, False)
            i += 2 if pattern.startswith("[^", i) else 1
            continue
        nxt = pattern[i + 1] if i + 1 < len(pattern) else ""
        if c == "]":
            depth, last_char = depth - 1, True
        elif c == "[":
            depth, last_char = depth + 1, False
        elif c == "-" and last_char and nxt and (nxt == "\\" or nxt not in SYNTAX):
            last_char = False  # a range a-z: the next character ends it
        elif c in SYNTAX:
            return f"{c!r} at {i} must be escaped inside a class"
        elif c in DOUBLE and nxt == c:
            return f"{c * 2!r} at {i} is reserved inside a class"
        else:
            last_char = True
        i += 1
    return "unclosed class" if depth else ""


def test_the_v_flag_rule_refuses_what_chromium_refused() -> None:
    assert v_flag_problem("[a-z0-9][a-z0-9-]*") != ""  # the old pattern
    assert v_flag_problem("[a-z]&&[b]") == ""  # outside a class: plain characters
    assert v_flag_problem("[a&&b]") != "" and v_flag_problem("[(]") != ""
    assert v_flag_problem(r"[a-z0-9][a-z0-9\-]{0,63}") == ""


def slug_pattern(client, researcher) -> str:
    client.force_login(researcher)
    page = client.get(reverse("dashboard:wizard")).content.decode()
    match = re.search(r'name="slug"[^>]* pattern="([^"]*)"', page)
    assert match, "the slug input has no pattern"
    return html.unescape(match.group(1))


def test_the_slug_pattern_compiles_with_the_v_flag(client, researcher) -> None:
    pattern = slug_pattern(client, researcher)
    assert v_flag_problem(pattern) == ""
    node = shutil.which("node")
    if node:  # the engine Chromium uses, when this machine has it
        script = "new RegExp(process.argv[1], 'v')"
        subprocess.run([node, "-e", script, pattern], check=True, capture_output=True)


@pytest.mark.parametrize("slug", ["a", "study-1", "9lives", "-x", "A", "a_b", "a" * 65, "é"])
def test_the_slug_pattern_accepts_what_the_service_accepts(client, researcher, slug) -> None:
    pattern = slug_pattern(client, researcher)
    browser_accepts = re.fullmatch(pattern, slug) is not None  # the input anchors it
    try:
        campaign_create(slug=slug, name=slug, protocol="likert")
    except AnnotationError:
        service_accepts = False
    else:
        service_accepts = True
    assert browser_accepts == service_accepts
