"""Model backends behind one small interface; adding one is a module and a line here."""

import inspect

from modelhub.backends.base import (
    Backend,
    BackendError,
    Example,
    Reply,
    TokenScores,
    TransientBackendError,
)
from modelhub.backends.emotion_prepend import EmotionPrepend
from modelhub.backends.generic_bot import GenericBot
from modelhub.backends.gold import Gold
from modelhub.backends.hf_local import HFLocal
from modelhub.backends.openai_http import OpenAIHTTP
from modelhub.backends.retrieval import Retrieval

BACKENDS: dict[str, type[Backend]] = {
    backend.name: backend
    for backend in (GenericBot, Gold, HFLocal, OpenAIHTTP, Retrieval, EmotionPrepend)
}


def backend_load(name: str, config: dict) -> Backend:
    """Return the backend called ``name`` built from ``config``; raise ValueError if either is
    wrong (unknown backend, unknown or badly typed option, missing model folder, …)."""
    if name not in BACKENDS:
        raise ValueError(f"unknown backend {name!r}; known: {', '.join(sorted(BACKENDS))}")
    if not isinstance(config, dict):
        raise ValueError(f"the configuration of {name!r} must be a JSON object, not {config!r}")
    parameters = inspect.signature(BACKENDS[name].__init__).parameters
    named = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    options = [p for p, spec in parameters.items() if p != "self" and spec.kind in named]
    unknown = sorted(set(config) - set(options))
    if unknown:
        raise ValueError(
            f"bad configuration for backend {name!r}: unknown option {unknown[0]!r}; "
            f"known: {', '.join(options) or 'none'}"
        )
    missing = [
        p for p in options if parameters[p].default is inspect.Parameter.empty and p not in config
    ]
    if missing:
        raise ValueError(f"the {name} backend needs {', '.join(map(repr, missing))}")
    if BACKENDS[name].wraps:  # a wrapper (emotion_prepend): its inner backend built first
        inner = config["backend"]
        if inner == name or not isinstance(inner, str):
            raise ValueError(
                f"{name} wraps another backend: 'backend' must name one, not {inner!r}"
            )
        config = config | {"backend": backend_load(inner, config.get("config") or {})}
    try:
        return BACKENDS[name](**config)
    except TypeError as exc:
        raise ValueError(f"bad configuration for backend {name!r}: {exc}") from None


__all__ = [
    "BACKENDS",
    "Backend",
    "BackendError",
    "Example",
    "Reply",
    "TokenScores",
    "TransientBackendError",
    "backend_load",
]
