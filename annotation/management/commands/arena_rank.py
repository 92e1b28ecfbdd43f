"""``python manage.py arena_rank FILE``: re-rank public arena votes with evalsite's statistics."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
from django.core.management.base import BaseCommand, CommandError, CommandParser

from corpora.arena import NON_ANONYMOUS, arena_min_votes, arena_outcomes, arena_read
from corpora.records import DatasetError
from evalstats import ranking
from evalstats.style import StyleFit, bradley_terry_style

BT_NOTE = (
    "Bradley–Terry log-strengths (mean 0), Firth's penalised estimates; conversations "
    "(question_id) as items and judges as raters for the 95% CIs; 'tie' is half a win each "
    "way, 'tie (bothbad)' is left out of the fit (its share is neither_rate)."
)


class Command(BaseCommand):
    help = (
        "Read a public arena vote file (Chatbot Arena / LMArena battles: a JSON list or JSONL, "
        "one vote a record; docs/datasets.md, 'The arena format') and print evalsite's "
        "Bradley–Terry leaderboard of its anonymous votes, the votes per pair and how many "
        "non-anonymous votes (anony false) were left out; with --style, also the "
        "style-controlled leaderboard (reply length and Markdown as covariates)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", type=Path, help="The arena file (.json list or .jsonl).")
        parser.add_argument(
            "--style",
            action="store_true",
            help="Also rank with the replies' style (characters, headers, list items, bold, "
            "summed over each side's assistant messages) as covariates, and print their "
            "coefficients (evalstats.style).",
        )
        parser.add_argument(
            "--json", action="store_true", help="Print one JSON object instead of tables."
        )
        parser.add_argument(
            "--min-votes",
            type=int,
            default=0,
            metavar="N",
            help="Leave out models with fewer than N anonymous votes, and their votes "
            "(repeated until every model left has N; default 0: keep all).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["min_votes"] < 0:
            raise CommandError("--min-votes must be 0 or more.")
        path: Path = options["file"]
        try:
            records = arena_read(path)
        except DatasetError as exc:
            raise CommandError(f"Nothing was ranked. {exc}") from None
        outcomes = arena_outcomes(records)
        dropped = int(outcomes.attrs.get(NON_ANONYMOUS, 0))
        outcomes, left_out = arena_min_votes(outcomes, options["min_votes"])
        if outcomes.empty:
            raise CommandError(
                f"{path.name}: no votes to rank ({len(records)} read, {dropped} non-anonymous"
                f"{', the rest under --min-votes' if left_out else ''})."
            )
        result: dict[str, Any] = {
            "file": path.name,
            "votes_read": len(records),
            "non_anonymous_left_out": dropped,
            "models_left_out": left_out,
            "votes_ranked": len(outcomes),
            "rankings": ranking.bradley_terry_components(outcomes),
            "pairs": ranking.pair_table(outcomes),
        }
        if options["style"]:
            result["style"] = _style_fits(outcomes)
        if options["json"]:
            self.stdout.write(json.dumps(_jsonable(result), ensure_ascii=False, indent=2))
        else:
            self._print(result)

    def _print(self, result: dict[str, Any]) -> None:
        self.stdout.write(
            f"{result['file']}: {result['votes_read']} votes read; "
            f"{result['non_anonymous_left_out']} non-anonymous (anony false) left out; "
            f"{result['votes_ranked']} ranked."
        )
        if result["models_left_out"]:
            few = ", ".join(f"{m} ({n})" for m, n in sorted(result["models_left_out"].items()))
            self.stdout.write(f"Left out under --min-votes: {few}.")
        self._tables("Bradley–Terry", result["rankings"])
        self.stdout.write(BT_NOTE)
        for number, fit in enumerate(result.get("style", []), start=1):
            group = f" (group {number})" if len(result["style"]) > 1 else ""
            self._tables(f"Style-controlled Bradley–Terry{group}", [fit.table])
            self.stdout.write("\nStyle coefficients (log-odds per standard deviation):")
            coefficients = fit.coefficients
            self.stdout.write(coefficients.to_string(index=False) if len(coefficients) else "none")
            for note in fit.notes:
                self.stdout.write(f"Note: {note}")
        self.stdout.write("\nVotes per pair:")
        self.stdout.write(result["pairs"].to_string(index=False))

    def _tables(self, title: str, tables: list[pd.DataFrame]) -> None:
        for number, table in enumerate(tables, start=1):
            group = f", group {number} of {len(tables)}" if len(tables) > 1 else ""
            self.stdout.write(f"\n{title}{group}:")
            self.stdout.write(table.to_string(index=False))
        if len(tables) > 1:
            self.stdout.write(
                "The models form groups never compared with each other: each is ranked on "
                "its own, and strengths are not comparable across groups."
            )


def _style_fits(outcomes: pd.DataFrame) -> list[StyleFit]:
    """Return a style-controlled fit per component of the comparison graph (of two or more
    models), largest first: strengths are comparable only within one."""
    fits = []
    for models in ranking.comparison_components(outcomes):
        if len(models) < 2:
            continue
        inside = outcomes["a"].isin(models) & outcomes["b"].isin(models)
        try:
            fits.append(bradley_terry_style(outcomes[inside]))
        except ValueError as exc:
            raise CommandError(f"The style-controlled fit failed: {exc}") from None
    return fits


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Return the rows as JSON-ready dicts (NaN, infinity and NA as null)."""
    return json.loads(frame.to_json(orient="records", force_ascii=False))


def _jsonable(result: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in result.items() if k not in ("rankings", "pairs", "style")}
    out["rankings"] = [_records(t) for t in result["rankings"]]
    out["pairs"] = _records(result["pairs"])
    if "style" in result:
        out["style"] = [
            {"table": _records(f.table), "coefficients": _records(f.coefficients), "notes": f.notes}
            for f in result["style"]
        ]
    return out
