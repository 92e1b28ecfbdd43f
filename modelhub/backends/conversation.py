"""A dialogue context as chat messages every chat template and server accepts.

A context is a list of turns, oldest first, the human's last; the model answers as the
assistant. Going back from the last turn the roles alternate (user, assistant, user, …), so a
conversation the bot opened (interactive SSA's "Hi!") starts with an assistant turn. Many chat
templates refuse that — Mistral's and Gemma's raise "roles must alternate user/assistant", and
a vLLM server serving them answers 400 — and Gemma's refuses a system role too. So the messages
sent always start with a user turn and alternate strictly:

- ``leading_bot = "user"`` (the default): a neutral user turn (``opening_user_turn``, "Hello.")
  is put before the bot's opening turn, as if the person had greeted first;
- ``leading_bot = "system"``: the bot's opening turn is folded into the system message ("You
  opened the conversation by saying: …") and dropped from the messages;
- ``system_role = False``: the system message (the configured ``system_prompt`` and anything
  folded into it) is put at the start of the first user turn, for templates and servers
  without a system role (Gemma).

``conversation_messages`` returns the messages and a short description of what it did, recorded
with each generation (``Reply.prompt_format``) so a report says which format produced it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

LEADING_BOT = ("user", "system")
DEFAULT_OPENING_USER_TURN = "Hello."


@dataclass(frozen=True)
class ChatFormat:
    """How a context becomes chat messages (an endpoint's configuration)."""

    system_prompt: str | None = None
    leading_bot: str = "user"
    opening_user_turn: str = DEFAULT_OPENING_USER_TURN
    system_role: bool = True

    def __post_init__(self) -> None:
        if self.leading_bot not in LEADING_BOT:
            raise ValueError(
                f"leading_bot must be one of {', '.join(LEADING_BOT)}, not {self.leading_bot!r}"
            )
        if self.leading_bot == "user" and not self.opening_user_turn.strip():
            raise ValueError("opening_user_turn must be a non-empty text")

    @property
    def description(self) -> str:
        """Name the choices that shape the messages (stable: recorded with generations)."""
        parts = [f"leading_bot={self.leading_bot}"]
        if self.leading_bot == "user":
            parts.append(f"opening={self.opening_user_turn!r}")
        parts.append(f"system_role={'yes' if self.system_role else 'folded'}")
        if self.system_prompt:
            parts.append("system_prompt")
        return ",".join(parts)


def chat_format_from_config(config: Mapping[str, Any], backend: str) -> ChatFormat:
    """Build the ChatFormat of an endpoint's configuration; raise ValueError naming the key."""
    values = {
        key: config[key]
        for key in ("system_prompt", "leading_bot", "opening_user_turn", "system_role")
        if config.get(key) is not None
    }
    kinds = {
        "system_prompt": str,
        "leading_bot": str,
        "opening_user_turn": str,
        "system_role": bool,
    }
    for key, value in values.items():
        if not isinstance(value, kinds[key]):
            raise ValueError(f"{backend}: {key!r} must be {kinds[key].__name__}, not {value!r:.80}")
    try:
        return ChatFormat(**values)
    except ValueError as exc:
        raise ValueError(f"{backend}: {exc}") from None


def conversation_roles(n_turns: int) -> list[str]:
    """Return the role of each of ``n_turns`` turns: the last is the user's, alternating back."""
    return ["user" if (n_turns - 1 - i) % 2 == 0 else "assistant" for i in range(n_turns)]


def conversation_messages(
    turns: Sequence[str], fmt: ChatFormat, *, reply: str | None = None
) -> list[dict[str, str]]:
    """Return the chat messages of a context (the human's turn last), valid for every
    template: a user turn first, roles alternating, at most one system message, first.

    ``reply`` adds the assistant's reply as the last message (to score it).
    """
    turns = [t.strip() for t in turns]
    if not turns:
        raise ValueError("a conversation needs at least one turn")
    roles = conversation_roles(len(turns))
    messages = [{"role": r, "content": t} for r, t in zip(roles, turns, strict=True)]
    system = fmt.system_prompt.strip() if fmt.system_prompt else ""
    if messages[0]["role"] == "assistant":
        if fmt.leading_bot == "user":
            messages.insert(0, {"role": "user", "content": fmt.opening_user_turn.strip()})
        else:
            opened = messages.pop(0)["content"]
            folded = f"You opened the conversation by saying: {opened}"
            system = f"{system}\n\n{folded}" if system else folded
    if system:
        if fmt.system_role:
            messages.insert(0, {"role": "system", "content": system})
        else:
            first = messages[0]
            messages[0] = {"role": "user", "content": f"{system}\n\n{first['content']}"}
    if reply is not None:
        messages.append({"role": "assistant", "content": reply.strip()})
    return messages


def messages_alternate(messages: Sequence[Mapping[str, Any]]) -> str | None:
    """Return why ``messages`` would be refused by a strict template (None when valid):
    an optional system message first, then user and assistant alternating from a user turn."""
    roles = [m.get("role") for m in messages]
    if roles and roles[0] == "system":
        roles = roles[1:]
    if "system" in roles:
        return "a system message may only come first"
    if not roles or roles[0] != "user":
        return "the conversation must start with a user turn"
    for i, role in enumerate(roles):
        if role != ("user" if i % 2 == 0 else "assistant"):
            return "conversation roles must alternate user/assistant/user/assistant/..."
    return None
