"""A/B's report figures: the A:B ratio heatmap (as ED's Figure 5) and the Bradley–Terry ranking."""

from __future__ import annotations

import numpy as np
import pandas as pd

from evalstats import figures, uncertainty
from evalstats.options import report_options


def heatmap_figure(
    matrix: pd.DataFrame, pairs: pd.DataFrame, win_rates: pd.DataFrame
) -> figures.ReportFigure:
    """Draw the A:B ratio heatmap (row over column, log colour scale) as ED's Figure 5, each
    cell with its ratio and the pair's n in black or white by contrast with its colour; the
    alt text names the most one-sided pair with its win rate's interval."""
    k = len(matrix)
    fig = figures.figure_new(3.0 + 0.95 * k, 2.4 + 0.8 * k)
    ax = fig.subplots()
    values = matrix.to_numpy(dtype=float)
    counts = pd.DataFrame(np.nan, index=matrix.index, columns=matrix.columns)
    for row in pairs.itertuples():
        counts.loc[row.model_a, row.model_b] = counts.loc[row.model_b, row.model_a] = row.n
    finite = np.where(np.isfinite(values) & (values > 0), values, np.nan)
    shown = np.log2(finite)
    limit = max(1.0, float(np.nanmax(np.abs(shown))) if np.isfinite(shown).any() else 1.0)
    # ∞ and 0 (one side never won) draw as the scale's ends; no decisive judgment as blank.
    shown[np.isposinf(values)], shown[values == 0] = limit, -limit
    image = ax.imshow(shown, cmap="RdBu", vmin=-limit, vmax=limit)
    for i in range(k):
        for j in range(k):
            v, n = values[i, j], counts.iat[i, j]
            if np.isnan(v) and np.isnan(n):
                continue
            ratio = "–" if np.isnan(v) else ("∞" if np.isinf(v) else f"{v:.2f}")
            level = shown[i, j]
            cell = figures.PAPER if np.isnan(level) else image.cmap(image.norm(level))
            ax.text(
                j,
                i,
                f"{ratio}\nn={int(n)}",
                ha="center",
                va="center",
                fontsize=8,
                color=figures.text_colour(cell),
            )
    ax.set_xticks(range(k), matrix.columns, rotation=45, ha="right")
    ax.set_yticks(range(k), matrix.index)
    ax.set_xlabel("compared with")
    ax.set_ylabel("chosen model")
    fig.colorbar(image, ax=ax, label="log₂ ratio (row : column)")
    return figures.figure_finish(
        fig,
        title="A/B preferences: times the row model was chosen over the column model",
        alt=f"Heatmap of A:B ratios between {k} models. "
        + figures.one_sided_text(win_rates, n="decisive", judgments="decisive judgments"),
        note="Cell: wins of the row model : wins of the column model ('both' and 'neither' "
        "count for neither side); n: the pair's judgments. Intervals: each pair's win rate "
        f"with its {figures.ci_name()} ({figures.methods(win_rates['ci_method'])}) is in "
        "the win_rates table; the Bradley–Terry figure gives the ranking's.",
    )


def ranking_figure(rankings: list[pd.DataFrame]) -> figures.ReportFigure:
    """Draw Bradley–Terry log-strengths with their intervals and n, best at the top: one
    panel per component of the comparison graph, each on its own scale (they are not
    comparable); the alt text names each group's first and last model."""
    heights = [max(1, len(t)) for t in rankings] or [1]
    fig = figures.figure_new(6.0, 1.8 + 0.45 * sum(heights) + 0.5 * (len(heights) - 1))
    axes = fig.subplots(len(heights), 1, squeeze=False, height_ratios=heights)[:, 0]
    sentences = []
    for number, (ax, table) in enumerate(zip(axes, rankings, strict=False), start=1):
        figures.interval_rows(
            ax,
            [f"{r.model} (n={r.n})" for r in table.itertuples()],
            table["strength"].to_numpy(dtype=float),
            table["ci_low"].to_numpy(dtype=float),
            table["ci_high"].to_numpy(dtype=float),
        )
        ax.axvline(0, color=figures.INK, linewidth=0.5, linestyle=":")
        sentence = figures.extremes_text(
            table,
            name="model",
            value="strength",
            low="ci_low",
            high="ci_high",
            n="n",
            n_unit="judgments",
            words=("ranks first", "last"),
        )
        if len(rankings) > 1:
            ax.set_title(f"Group {number} (not comparable with the other groups)", fontsize=9)
            sentence = f"Group {number}: {sentence}"
        sentences.append(sentence)
    axes[-1].set_xlabel(f"Bradley–Terry log-strength ({figures.ci_name()})")
    method = (
        "Wald, widened by the design effect of items and workers"
        if report_options().method == "design"
        else uncertainty.INDEPENDENT
    )
    return figures.figure_finish(
        fig,
        title="Bradley–Terry ranking of the models",
        alt="Ranking of the models by Bradley–Terry log-strength (mean 0, higher is better). "
        + " ".join(sentences),
        note=f"Error bars: {figures.ci_name()}, {method}. n: the model's judgments.",
    )
