"""De-identification, old against new, in one run: hits per kind on the labelled leak list,
and listed names (regex alternation against Aho–Corasick automaton) on real dialogue text.

- Leak list (``tests/annotation/data/leaks.jsonl``, made up): each line's text and the spans
  that must be replaced, of which kind; lines without spans are look-alikes (dates that are
  no birthday, "go.You", IBANs with a wrong checksum, digit runs). Per kind: recall (labelled
  spans replaced with that kind, exactly) and precision (replacements of that kind that are
  labelled spans).
- Names: the utterances of EmotionLines (Friends) and MELD in ``../shared/data`` (or
  ``--data``), every speaker name of those files as the names list. The old module's regex and
  the new automaton must give identical hits; both are timed over the same texts, and the
  whole de-identification of the same dialogues old and new.

The old module is ``annotation/deidentify.py`` at ``--old`` (a git revision; default the last
commit with the hand-made patterns), loaded from ``git show``. Run from the repository root:
``.venv/bin/python bench/deidentify.py``. No database.
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from annotation import deidentify as new  # noqa: E402

LEAKS = ROOT / "tests" / "annotation" / "data" / "leaks.jsonl"
OLD = "e4e3e9ff3583df43e8b13cd4129066099b61bbad"  # the hand-made patterns, a regex for names


def old_module(revision: str) -> ModuleType:
    """Load ``annotation/deidentify.py`` as it was at ``revision``."""
    source = subprocess.run(
        ["git", "show", f"{revision}:annotation/deidentify.py"],
        cwd=ROOT, check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    path = Path(tempfile.mkdtemp()) / "deidentify_old.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("deidentify_old", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def leak_scores(module: ModuleType) -> dict[str, tuple[int, int, int]]:
    """Return per kind (labelled, found, replaced): labelled spans, those replaced exactly
    with their kind, and all replacements of that kind."""
    labelled: Counter[str] = Counter()
    found: Counter[str] = Counter()
    replaced: Counter[str] = Counter()
    for line in LEAKS.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        _, _, done = module.Deidentifier().dialogue([row["text"]])
        got = {(r.kind, r.original) for r in done}
        want = {(kind, span) for kind, span in row["leaks"]}
        labelled.update(kind for kind, _ in want)
        found.update(kind for kind, _ in want & got)
        replaced.update(kind for kind, _ in got)
    kinds = sorted(labelled | replaced)
    return {k: (labelled[k], found[k], replaced[k]) for k in kinds}


def dialogues(data: Path) -> list[list[tuple[str, str]]]:
    """Return EmotionLines' and MELD's dialogues as (speaker, text) lists."""
    out: list[list[tuple[str, str]]] = []
    for path in sorted((data / "emotionlines_friends").glob("*.json")):
        for d in json.loads(path.read_text(encoding="utf-8")):
            out.append([(u["speaker"], u["utterance"]) for u in d])
    for path in sorted((data / "meld").glob("*.csv")):
        by_dialogue: dict[str, list[tuple[str, str]]] = {}
        with path.open(encoding="utf-8") as f:
            for row in csv.DictReader(f):
                by_dialogue.setdefault(row["Dialogue_ID"], []).append(
                    (row["Speaker"], row["Utterance"])
                )
        out += by_dialogue.values()
    return out


def timed(run: object) -> tuple[float, object]:
    """Return seconds and result of ``run()``."""
    start = time.perf_counter()
    result = run()  # type: ignore[operator]
    return time.perf_counter() - start, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--old", default=OLD, help="git revision of the old module")
    args = parser.parse_args()
    old = old_module(args.old)

    print(f"Leak list: {LEAKS.relative_to(ROOT)}")
    print(f"{'kind':8} {'spans':>5}  {'old recall':>10} {'precision':>9}  {'new recall':>10} "
          f"{'precision':>9}")  # fmt: skip
    scores = {"old": leak_scores(old), "new": leak_scores(new)}
    for kind in sorted(scores["old"].keys() | scores["new"].keys()):
        cells = []
        for version in ("old", "new"):
            labelled, found, replaced = scores[version].get(kind, (0, 0, 0))
            total = max(labelled, scores["old"].get(kind, (0,))[0])
            recall = f"{found}/{total}" if total else "-"
            precision = f"{found}/{replaced}" if replaced else "-"
            cells.append(f"{recall:>10} {precision:>9}")
        total = max(scores["old"].get(kind, (0,))[0], scores["new"].get(kind, (0,))[0])
        print(f"{kind:8} {total:>5}  " + "  ".join(cells))

    if not (args.data / "emotionlines_friends").is_dir():
        print(f"\nNo {args.data}: names not measured.")
        return
    talks = dialogues(args.data)
    texts = [text for talk in talks for _, text in talk]
    names = {speaker: "person" for talk in talks for speaker, _ in talk if speaker.strip()}
    print(f"\nNames: {len(names)} speaker names, {len(texts)} utterances, {len(talks)} dialogues")
    pattern = old._names_pattern(names)
    finder = new._Names(names)
    t_regex, regex_hits = timed(lambda: [[m.span() for m in pattern.finditer(t)] for t in texts])
    t_ac, ac_hits = timed(lambda: [list(new._Names.matches(t, [finder])) for t in texts])
    same = sum(a == b for a, b in zip(regex_hits, ac_hits, strict=True))  # type: ignore[call-overload]
    hits = sum(map(len, regex_hits))  # type: ignore[call-overload]
    print(f"identical hits: {same}/{len(texts)} utterances ({hits} names)")
    print(f"regex {t_regex:.3f} s, automaton {t_ac:.3f} s: {t_regex / t_ac:.0f}x")

    runs = {}
    for label, module in (("old", old), ("new", new)):
        deidentifier = module.Deidentifier(names=names)
        runs[label] = timed(
            lambda d=deidentifier: [
                d.dialogue([t for _, t in talk], [s for s, _ in talk]) for talk in talks
            ]  # fmt: skip
        )
    kinds = {
        label: Counter(r.kind for _, _, done in result for r in done)  # type: ignore[attr-defined]
        for label, (_, result) in runs.items()
    }
    print(f"whole de-identification: old {runs['old'][0]:.2f} s, new {runs['new'][0]:.2f} s")
    print(f"replacements old: {dict(sorted(kinds['old'].items()))}")
    print(f"replacements new: {dict(sorted(kinds['new'].items()))}")


if __name__ == "__main__":
    main()
