"""Model backends behind one small interface; adding one is a module and a line here."""

from modelhub.backends.base import Backend, Example
from modelhub.backends.generic_bot import GenericBot
from modelhub.backends.gold import Gold

BACKENDS: dict[str, type[Backend]] = {
    GenericBot.name: GenericBot,
    Gold.name: Gold,
}


def backend_load(name: str, config: dict) -> Backend:
    """Return the backend called ``name`` built from ``config``; raise ValueError if unknown."""
    try:
        return BACKENDS[name](**config)
    except KeyError:
        raise ValueError(
            f"unknown backend {name!r}; known: {', '.join(sorted(BACKENDS))}"
        ) from None
    except TypeError as exc:
        raise ValueError(f"bad configuration for backend {name!r}: {exc}") from None


__all__ = ["BACKENDS", "Backend", "Example", "backend_load"]
