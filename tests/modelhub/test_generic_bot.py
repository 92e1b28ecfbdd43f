"""GenericBot's question test on the shapes found in Meena's released logs."""

import subprocess
import sys
import time
from pathlib import Path

import pytest

from modelhub.backends import Example, backend_load
from modelhub.backends.generic_bot import is_question

BENCH = Path(__file__).resolve().parents[2] / "bench" / "generic_bot.py"

QUESTIONS = [
    # A question mark followed by an emoticon, emoji or "!".
    "How are you? 🙂",
    "I am good. How are you? ：）",
    "can you lend me some sweaters? ;)",
    "so you can run more frequently?:)",
    "Oooo the Mandalorian?!?!",
    "Oh cool, as a cashier？",
    # A question sentence with a sentence after it.
    "Really? Tell me more.",
    "Who is Loki? I've never heard that name before",
    "Hmm? That's strange.",
    # No question mark: auxiliary before the subject.
    "are you at work",
    "did you see family",
    "have you tried it before",
    "does it hurt",
    "is the movie any good",
    "r u ok",
    "are you sure, I think it's been out for a while",
    "ok, do you know how long it takes to go to los angeles",
    "Good! Have you seen the movie 'The Iron Giant', it's one my favorite movies",
    # No question mark: wh-word before an auxiliary.
    "what do you think",
    "What do you think about mind reading",
    "where can i find the best coffee",
    "how were your vacations",
    "What's your work",
    "not much, whats up",
    "how many friends do you have",
    "how long have you been here",
    "What languages do you speak",
    "Haha, same probably. Which one do you like the most",
    "doing good. how are you today",
    "oh! where are you",
    "how come",
    # "how/what about", "and you", fragments, "any" + noun, a question inside a clause.
    "how about you",
    "Nothing much, how about you",
    "Not bad. Feeling quite chipper. What about yourself",
    "Fine thanks and you",
    "which airport",
    "what kind",
    "any plans for the weekend",
    "glad to hear that what did you do yesterday",
]

STATEMENTS = [
    "I love tennis.",
    "Hi!",
    "ok",
    "tell me more",
    "Had to pass a rough set of interviews! :P",
    "Had the best day ever",
    "Have a great day, g2g!",
    "am a tourist",
    "may be",
    "Can't say",
    "Do your best",
    "Do it now",
    "May the force be with you",
    "Where I grew up, we had lots of water trouble too...",
    "When people are happy, they sing",
    "What people do at home is their business",
    "I like Paris, which is lovely.",
    "that's what i'm hoping to figure out!",
    "I don't know what you were referring to before!",
    "wow, what a lot",
    "how cool",
    "Same! What are the odds!",
    "Any kinds of dancing you like. It is quite diverse  :)",
    "see http://example.com/page?id=3 for the menu",
    "",
]


@pytest.mark.parametrize("turn", QUESTIONS)
def test_a_turn_containing_a_question_sentence_is_a_question(turn):
    assert is_question(turn)


@pytest.mark.parametrize("turn", STATEMENTS)
def test_statements_requests_exclamations_and_subordinate_clauses_are_not_questions(turn):
    assert not is_question(turn)


def test_generic_bot_says_i_dont_know_to_every_question_shape_and_ok_to_statements():
    bot = backend_load("generic_bot", {})
    examples = [Example(turns=("Hi!", t)) for t in QUESTIONS + STATEMENTS]
    expected = ["I don't know."] * len(QUESTIONS) + ["ok"] * len(STATEMENTS)
    assert bot.generate(examples, {}) == expected


def test_generic_bot_answers_only_the_last_turn_and_ok_to_an_empty_context():
    bot = backend_load("generic_bot", {})
    examples = [Example(turns=("How are you?", "Fine.")), Example(turns=())]
    assert bot.generate(examples, {}) == ["ok", "ok"]


def test_the_bench_counts_answers_before_and_after_on_a_log_in_meenas_format(tmp_path):
    bot_log = (
        "Meena Conversation 1\nHuman: Hi!\nMeena: Hey!\nHuman: How are you? 🙂\nMeena: Good.\n"
        "Human: how about you\nMeena: Fine.\n\nMeena Conversation 2\nHuman: Hi!\nMeena: Yo\n"
        "Human: Is it raining?\n"  # no reply: not a context
    )
    (tmp_path / "meena.txt").write_text(bot_log, encoding="utf-8")
    (tmp_path / "mitsuku_conversations_1-17.txt").write_text(
        "\nMitsuku Conversation 1\nHuman: Hi!\nMitsuku: Hi there.\n", encoding="utf-8"
    )
    (tmp_path / "human_conversations_1-26.txt").write_text(
        "Human Conversation 1\nHuman 1: Hi!\nHuman 2: What is your favorite holiday?\n"
        "Human 1: Are you there?\nHuman 2: yes\n",
        encoding="utf-8",
    )
    run = subprocess.run(
        [sys.executable, str(BENCH), "--data", str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
    )
    rows = {line.split()[0]: line.split()[1:] for line in run.stdout.splitlines()[1:]}
    assert rows["meena.txt"] == ["4", "0", "2", "2", "0"]
    assert rows["mitsuku_conversations_1-17.txt"] == ["1", "0", "0", "0", "0"]
    assert rows["human_conversations_1-26.txt"] == ["2", "1", "1", "0", "0"]
    assert rows["all"] == ["7", "1", "3", "2", "0"]


def test_the_bench_says_when_the_logs_are_missing(tmp_path):
    run = subprocess.run(
        [sys.executable, str(BENCH), "--data", str(tmp_path)], capture_output=True, text=True
    )
    assert run.returncode == 1 and "missing meena.txt" in run.stderr


@pytest.mark.parametrize("turn", ["oh " * 50_000, "what, " * 40_000, "a. " * 100_000])
def test_a_long_turn_is_classified_in_linear_time(turn):
    started = time.perf_counter()
    is_question(turn)
    assert time.perf_counter() - started < 2  # a quadratic scan took seconds to minutes
