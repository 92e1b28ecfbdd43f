"""Contexts become chat messages that strict templates and servers accept."""

import pytest

from modelhub.backends.conversation import (
    ChatFormat,
    chat_format_from_config,
    conversation_messages,
    messages_alternate,
)

BOT_OPENED = ["Hi!", "hello, how are you?"]  # interactive SSA: the bot's opener first


def _roles(messages):
    return [m["role"] for m in messages]


def test_the_old_role_order_of_a_bot_opened_chat_is_refused_by_a_strict_template():
    old = [{"role": "assistant", "content": "Hi!"}, {"role": "user", "content": "hello"}]
    assert messages_alternate(old) == "the conversation must start with a user turn"


def test_a_bot_opener_gets_a_neutral_user_turn_before_it_by_default():
    messages = conversation_messages(BOT_OPENED, ChatFormat())
    assert messages == [
        {"role": "user", "content": "Hello."},
        {"role": "assistant", "content": "Hi!"},
        {"role": "user", "content": "hello, how are you?"},
    ]
    assert messages_alternate(messages) is None


def test_a_bot_opener_can_be_folded_into_the_system_message():
    fmt = ChatFormat(system_prompt="Be brief.", leading_bot="system")
    messages = conversation_messages(BOT_OPENED, fmt)
    assert _roles(messages) == ["system", "user"]
    assert messages[0]["content"] == ("Be brief.\n\nYou opened the conversation by saying: Hi!")
    assert messages_alternate(messages) is None


def test_without_a_system_role_the_system_text_opens_the_first_user_turn():
    fmt = ChatFormat(system_prompt="Be kind.", system_role=False)
    messages = conversation_messages(["I lost my keys."], fmt)
    assert messages == [{"role": "user", "content": "Be kind.\n\nI lost my keys."}]
    folded = conversation_messages(BOT_OPENED, ChatFormat(leading_bot="system", system_role=False))
    assert _roles(folded) == ["user"]
    assert folded[0]["content"].startswith("You opened the conversation by saying: Hi!")


@pytest.mark.parametrize("n_turns", range(1, 8))
@pytest.mark.parametrize("leading_bot", ["user", "system"])
@pytest.mark.parametrize("system_prompt", [None, "sys"])
@pytest.mark.parametrize("system_role", [True, False])
def test_every_context_length_gives_alternating_user_first_messages(
    n_turns, leading_bot, system_prompt, system_role
):
    fmt = ChatFormat(system_prompt=system_prompt, leading_bot=leading_bot, system_role=system_role)
    turns = [f"turn {i}" for i in range(n_turns)]
    messages = conversation_messages(turns, fmt)
    assert messages_alternate(messages) is None
    assert messages[-1]["role"] == "user"
    assert messages[-1]["content"].endswith(turns[-1])  # a system text may open it (folded)
    assert all(t in " ".join(m["content"] for m in messages) for t in turns)  # nothing lost
    scored = conversation_messages(turns, fmt, reply="the reply")
    assert messages_alternate(scored) is None
    assert scored[-1] == {"role": "assistant", "content": "the reply"}


def test_messages_that_do_not_alternate_are_named():
    assert messages_alternate([{"role": "user"}, {"role": "user"}]) == (
        "conversation roles must alternate user/assistant/user/assistant/..."
    )
    assert "system" in messages_alternate([{"role": "user"}, {"role": "system"}])
    assert messages_alternate([]) is not None


def test_the_format_is_read_from_an_endpoints_configuration_and_checked():
    fmt = chat_format_from_config({"leading_bot": "system", "system_role": False}, "b")
    assert fmt.description == "leading_bot=system,system_role=folded"
    assert ChatFormat().description == "leading_bot=user,opening='Hello.',system_role=yes"
    with pytest.raises(ValueError, match="b: leading_bot must be one of user, system"):
        chat_format_from_config({"leading_bot": "assistant"}, "b")
    with pytest.raises(ValueError, match="'system_role' must be bool"):
        chat_format_from_config({"system_role": "no"}, "b")
    with pytest.raises(ValueError, match="opening_user_turn must be a non-empty text"):
        chat_format_from_config({"opening_user_turn": "  "}, "b")
    with pytest.raises(ValueError, match="at least one turn"):
        conversation_messages([], ChatFormat())
