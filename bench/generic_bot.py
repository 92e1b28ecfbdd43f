"""GenericBot's answers to the human turns of Meena's released logs, before and after the
question test learned turns like "How are you? 🙂", "Really? Tell me more." and "how about you".

"Before" is the old rule (the turn's last character, past quotes and brackets, is "?"); "after"
is ``modelhub.backends.generic_bot.is_question``. The human turns are those of the human side
("Human" in the Meena and Mitsuku logs, "Human 1" in the human–human ones, who opens with "Hi!"
like the human of the bot logs) that the other side answers: each is a context GenericBot would
reply to. Prints, per log and in all, the turns, how many get "I don't know." before and after,
and how many changed each way; ``--show`` lists the changed turns.

    .venv/bin/python bench/generic_bot.py [--data ../shared/data/meena] [--show]

The logs are not part of the repository (`../shared/data/README.md`); without them the script
says so and exits with status 1.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from modelhub.backends.generic_bot import is_question  # noqa: E402

# (file, the human side's speaker name)
LOGS = (
    ("meena.txt", "Human"),
    ("mitsuku_conversations_1-17.txt", "Human"),
    ("human_conversations_1-26.txt", "Human 1"),
)


def before(turn: str) -> bool:
    """Return the old rule's verdict: the turn ends with "?" past quotes and brackets."""
    return turn.rstrip(" \t\n\"')]").endswith("?")


def human_turns(path: Path, human: str) -> list[str]:
    """Return the human side's turns that the other side answers, in file order."""
    turns: list[str] = []
    for block in path.read_text(encoding="utf-8").split("\n\n"):
        lines = [line for line in block.strip().splitlines() if line.strip()]
        rows = [line.partition(": ")[::2] for line in lines[1:]]  # skip "X Conversation N"
        for (speaker, text), (following, _) in zip(rows, rows[1:], strict=False):
            if speaker == human and following != human:
                turns.append(text)
    return turns


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data",
        type=Path,
        default=ROOT.parent / "shared" / "data" / "meena",
        help="folder with Meena's logs (default ../shared/data/meena)",
    )
    parser.add_argument("--show", action="store_true", help="list the turns whose answer changed")
    args = parser.parse_args()
    missing = [name for name, _ in LOGS if not (args.data / name).is_file()]
    if missing:
        print(f"{args.data}: missing {', '.join(missing)}; nothing to measure", file=sys.stderr)
        return 1
    widths = (6, 11, 10, 7, 7)
    names = ("turns", "IDK before", "IDK after", "ok→IDK", "IDK→ok")
    print(f"{'log':34} " + " ".join(f"{n:>{w}}" for n, w in zip(names, widths, strict=True)))
    totals = [0, 0, 0, 0, 0]
    changed: list[tuple[str, bool, str]] = []
    for name, human in LOGS:
        turns = human_turns(args.data / name, human)
        old = [before(t) for t in turns]
        new = [is_question(t) for t in turns]
        row = [
            len(turns),
            sum(old),
            sum(new),
            sum(n and not o for o, n in zip(old, new, strict=True)),
            sum(o and not n for o, n in zip(old, new, strict=True)),
        ]
        totals = [a + b for a, b in zip(totals, row, strict=True)]
        changed += [(name, n, t) for t, o, n in zip(turns, old, new, strict=True) if o != n]
        print(f"{name:34} " + " ".join(f"{v:>{w}}" for v, w in zip(row, widths, strict=True)))
    print(f"{'all':34} " + " ".join(f"{v:>{w}}" for v, w in zip(totals, widths, strict=True)))
    if args.show:
        for name, now_question, turn in changed:
            answer = "I don't know." if now_question else "ok"
            print(f"{name}: {turn!r} -> {answer}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
