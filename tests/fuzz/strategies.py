"""Generated and hostile values shared by the fuzz tests, and their bounded settings."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

PROFILE = "fuzz"
settings.register_profile(
    PROFILE,
    derandomize=True,  # the same examples on every run: CI is reproducible
    database=None,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def bounded(examples: int) -> settings:
    """Return the fuzz profile's settings with at most ``examples`` examples."""
    return settings(settings.get_profile(PROFILE), max_examples=examples)


def nested(depth: int, opener: str = "[", closer: str = "]") -> str:
    """Return JSON text nested ``depth`` deep."""
    return opener * depth + closer * depth


# Strings a person never types but a client may send.
HOSTILE_TEXT = [
    "",
    " ",
    "\x00",
    "a\x00b",
    "\ud800",  # a lone surrogate
    "x\udfffy",
    "\ufeff",  # a byte-order mark
    "²",  # str.isdigit() says yes, int() says no
    "①",
    "٣",  # an Arabic-Indic digit: int() takes it
    "-1",
    "0",
    "1e309",
    "NaN",
    "Infinity",
    "9" * 400,
    "x" * 20_000,
    "<script>alert(1)</script>",
    "'; DROP TABLE annotation_judgment; --",
    "../../etc/passwd",
    "%00",
    "\u202e\u0041",
    "\U0001f600",
    "null",
    "[]",
    "{}",
    '{"a": 1}',
    nested(5000),
    nested(50, '{"a":', "}")[: 50 * 5] + "1" + "}" * 50,
]

hostile_text = st.one_of(
    st.sampled_from(HOSTILE_TEXT),
    st.text(max_size=40),
    st.text(
        alphabet=st.characters(codec=None, categories=["Nd", "No", "Cc", "Cs", "Zs"]), max_size=8
    ),
)

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    hostile_text,
)

json_values = st.recursive(
    json_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=12,
)


def json_text(value: Any) -> str:
    """Return ``value`` as JSON text, lone surrogates kept as escapes."""
    return json.dumps(value)


def query_string(pairs: list[tuple[str, str]]) -> str:
    """Return a URL query string with each text sent as UTF-8 (lone surrogates as the
    invalid bytes a broken client would send)."""
    return "&".join(
        quote(k.encode("utf-8", "surrogatepass"), safe="")
        + "="
        + quote(v.encode("utf-8", "surrogatepass"), safe="")
        for k, v in pairs
    )


def form_body(data: dict[str, Any]) -> str:
    """Return a form's fields URL-encoded as a browser would (lists as repeated fields)."""
    pairs = [
        (key, item)
        for key, value in data.items()
        for item in (value if isinstance(value, list) else [value])
    ]
    return query_string([(str(k), str(v)) for k, v in pairs])


def valid_utf8(text: str) -> str:
    """Return ``text`` with lone surrogates replaced (for the test client's multipart forms,
    which encode each field itself)."""
    return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
