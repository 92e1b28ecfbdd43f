"""Report figures a paper can use, for every protocol: a title, n on every bar or cell, the
intervals' method named, text that reads on its background (WCAG ≥ 4.5:1), an alt text that
states the finding with the report's own numbers, SVG and PNG written the same each time."""

import json
import re
import warnings
from html import unescape

import numpy as np
import pandas as pd
import pytest
from django.contrib.auth.models import User
from django.urls import reverse
from django.utils.html import escape
from matplotlib.image import AxesImage
from matplotlib.text import Text

from annotation.protocols import registry
from annotation.simulation import crowd_make, crowd_run
from dashboard import services
from dashboard.models import Job
from evalstats import figures
from evalstats.figures import contrast_ratio, error_bars, figure_write, text_colour
from evalstats.options import report_options_set
from evalstats.reports import report_write
from judges.report import judge_report
from tests.factories import CampaignFactory, ItemFactory

SEED = 7


def test_error_bars_are_the_distances_to_the_interval_ends():
    lengths = error_bars(np.array([0.5, 2.0]), np.array([0.25, 1.0]), np.array([1.0, 2.5]))
    np.testing.assert_allclose(lengths, [[0.25, 1.0], [0.5, 0.5]])


def test_error_bars_clip_floating_point_noise_and_draw_nothing_for_missing_ends():
    ulp = np.finfo(float).eps
    lengths = error_bars(
        np.array([0.0, -4 * ulp, 1.0]),
        np.array([ulp, -2 * ulp, np.nan]),
        np.array([0.0, -5 * ulp, np.nan]),
    )
    assert (lengths >= 0).all()
    np.testing.assert_array_equal(lengths[:, 2], [0.0, 0.0])


def test_contrast_ratio_is_wcag_s():
    assert contrast_ratio("#000000", "#ffffff") == pytest.approx(21.0)
    assert contrast_ratio("#777777", "#ffffff") == pytest.approx(4.48, abs=0.01)
    assert contrast_ratio("#123456", "#123456") == pytest.approx(1.0)


@pytest.mark.parametrize("background", ["#08306b", "#67001f", "#f7f7f7", "#777777", "#0072B2"])
def test_text_colour_reads_on_any_background(background):
    assert contrast_ratio(text_colour(background), background) >= figures.MIN_CONTRAST


def test_an_interval_past_the_scale_s_end_keeps_the_figure_laid_out(tmp_path):
    # A crossed t interval on 4 ratings may reach far past the 1–5 scale: its "n=" label
    # must stay at the scale's end, or the layout shrinks the plot to nothing.
    table = pd.DataFrame(
        {"aspect": ["Empathy", "Fluency"], "model": "model-a", "mean": [3.0, 4.0]}
        | {"ci_low": [-40.0, 3.5], "ci_high": [46.0, 4.5], "n": [4, 4]}
    )
    drawn = figures.bar_figure(
        table,
        group="aspect",
        bar="model",
        value="mean",
        n="n",
        title="Ratings",
        alt="Ratings.",
        ylabel="mean",
        interval=("ci_low", "ci_high"),
        ylim=(1, 5),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "constrained_layout not applied …"
        figure_write(drawn, tmp_path / "ratings")
    assert drawn.figure.axes[0].get_position().height > 0.5


# --- one report per protocol, from seeded synthetic judgments ---------------------------------


def _likert():
    rng = np.random.default_rng(SEED)
    protocol = registry.get("likert")
    parameters = protocol.clean_parameters({"reference_model": "GenericBot"})
    items, rows = [], []
    for model, centre in {"GenericBot": 2.0, "Retrieval": 3.2, "Generative": 3.9}.items():
        for e in range(12):
            items.append({"item": f"{model}-{e}", "payload": {"model": model}})
            for r in range(3):
                for aspect in parameters["aspects"]:
                    value = int(np.clip(round(rng.normal(centre, 0.8)), 1, 5))
                    rows.append(
                        {"item": f"{model}-{e}", "rater": f"w{(e + r) % 5}"}
                        | {"question": aspect["key"], "value": value}
                    )
    return protocol.report(parameters, pd.DataFrame(items), pd.DataFrame(rows))


def _pairs(protocol_name, questions):
    rng = np.random.default_rng(SEED)
    protocol = registry.get(protocol_name)
    parameters = protocol.clean_parameters({})
    keys = questions(parameters)
    quality = {"GenericBot": -1.2, "Retrieval": 0.3, "Generative": 0.9}
    models = list(quality)
    items, rows = [], []
    for i, a in enumerate(models):
        for b in models[i + 1 :]:
            for e in range(8):
                key = f"{a}~{b}-{e}"
                items.append({"item": key, "payload": {"model_a": a, "model_b": b}})
                for r in range(2):
                    for question in keys:
                        won = rng.random() < 1 / (1 + np.exp(quality[b] - quality[a]))
                        rows.append(
                            {"item": key, "rater": f"w{(e + r) % 4}", "question": question}
                            | {"value": "first" if won else "second"}
                            | {"presentation": {"order": ["a", "b"]}}
                        )
    return protocol.report(parameters, pd.DataFrame(items), pd.DataFrame(rows))


def _pairwise():
    return _pairs("pairwise", lambda p: ["choice"])


def _acute():
    return _pairs("acute", lambda p: [q["key"] for q in p["questions"]])


def _arena():
    """Votes of a small arena: conversations of 1-2 exchanges among three models."""
    rng = np.random.default_rng(SEED)
    protocol = registry.get("arena")
    parameters = protocol.clean_parameters({"models": ["GenericBot", "Retrieval", "Generative"]})
    quality = {"GenericBot": -1.2, "Retrieval": 0.3, "Generative": 0.9}
    models = list(quality)
    items, rows = [], []
    for c in range(60):
        a, b = rng.choice(models, size=2, replace=False)
        for turn in (1, 2)[: 1 + c % 2]:
            style = {k: int(rng.integers(0, 9)) for k in ("chars", "headers", "lists", "bold")}
            key = f"arena-{c}/{turn}"
            payload = {"model_a": a, "model_b": b, "example": f"arena-{c}", "turn": turn}
            items.append({"item": key, "payload": payload | {"style_a": style, "style_b": style}})
            won = rng.random() < 1 / (1 + np.exp(quality[b] - quality[a]))
            value = ("a" if won else "b") if rng.random() < 0.8 else "tie"
            rows.append({"item": key, "rater": f"w{c % 7}", "question": "winner", "value": value})
    return protocol.report(parameters, pd.DataFrame(items), pd.DataFrame(rows))


def _ssa(protocol_name):
    rng = np.random.default_rng(SEED)
    protocol = registry.get(protocol_name)
    interactive = protocol_name == "ssa_interactive"
    parameters = protocol.clean_parameters({"models": ["GenericBot"]} if interactive else {})
    items, rows = [], []
    for model, p in {"GenericBot": 0.4, "Meena": 0.85}.items():
        for e in range(30):
            key = f"{model}-{e}"
            chat = f"{model}-chat{e // 6}"
            items.append({"item": key, "payload": {"model": model, "example": chat}})
            for r in range(1 if interactive else 3):
                rater = f"{chat}-worker" if interactive else f"w{(e + r) % 5}"
                sensible = rng.random() < p
                specific = sensible and rng.random() < p
                for question, yes in (("sensible", sensible), ("specific", specific)):
                    rows.append(
                        {"item": key, "rater": rater, "question": question}
                        | {"value": "yes" if yes else "no"}
                    )
    return protocol.report(parameters, pd.DataFrame(items), pd.DataFrame(rows))


def _labels(protocol_name):
    rng = np.random.default_rng(SEED)
    protocol = registry.get(protocol_name)
    given = {"labels": ["cat", "dog", "bird"], "question": "Which?"}
    parameters = protocol.clean_parameters(given if protocol_name == "categorical" else {})
    labels = list(parameters["labels"])
    shares = np.linspace(len(labels), 1, len(labels))
    shares /= shares.sum()
    items, rows = [], []
    for d in range(16):
        if protocol_name == "emotionlines":
            source = ("Friends", "EmotionPush")[d % 2]
            payload = {"utterances": [{"speaker": "AB"[i % 2], "text": "x"} for i in range(4)]}
            questions = [f"u{i}" for i in range(4)]
            items.append({"item": f"d{d}", "payload": payload | {"source": source}})
        else:
            questions = ["label"]
            items.append({"item": f"d{d}", "payload": {"turns": ["a", "b", "c"], "text": "x"}})
        for question in questions:
            truth = rng.choice(labels, p=shares)
            for r in range(5):
                value = truth if rng.random() < 0.75 else rng.choice(labels)
                rows.append(
                    {"item": f"d{d}", "rater": f"r{r}", "question": question} | {"value": value}
                )
    return protocol.report(parameters, pd.DataFrame(items), pd.DataFrame(rows))


def _empathetic_chat():
    rng = np.random.default_rng(SEED)
    protocol = registry.get("empathetic_chat")
    parameters = protocol.clean_parameters({})
    report = protocol.report(parameters, pd.DataFrame(columns=["item", "payload"]), pd.DataFrame())
    dialogues = pd.DataFrame(
        [
            {
                "dialogue": f"c{d}",
                "status": "partial" if d % 7 == 0 else "complete",
                "flagged": d % 7 == 0,
                "flags": [],
                "emotion": parameters["emotions"][int(rng.integers(0, 12))],
                "situation": d // 2,
                "model": "",
                "opened_by": "",
                "utterances": 3 if d % 7 == 0 else int(rng.integers(4, 9)),
                "words": 40,
                "pastes": 0,
                "ratings": None,
            }
            for d in range(40)
        ]
    )
    protocol.report_dialogues(parameters, report, dialogues)
    return report


def _judges():
    rng = np.random.default_rng(SEED)
    crowd, judged = [], []
    for i in range(20):
        truth = int(rng.integers(1, 6))
        for r in range(3):
            label = int(np.clip(truth + rng.integers(-1, 2), 1, 5))
            crowd.append({"item": f"i{i}", "rater": f"w{r}", "question": "fluency", "label": label})
        for judge, noise in (("careful-llm", 0), ("sloppy-llm", 2)):
            label = int(np.clip(truth + rng.integers(-noise, noise + 1), 1, 5))
            judged.append(
                {"item": f"i{i}", "rater": judge, "question": "fluency", "label": label}
                | {"judge": judge, "shown": None, "order": None}
            )
    models = {f"i{i}": (f"m{i % 3}",) for i in range(20)}
    built = judge_report(pd.DataFrame(crowd), pd.DataFrame(judged), models, n_boot=50)
    return built


BUILDERS = {
    "likert": _likert,
    "pairwise": _pairwise,
    "acute": _acute,
    "arena": _arena,
    "ssa": lambda: _ssa("ssa"),
    "ssa_interactive": lambda: _ssa("ssa_interactive"),
    "emotionlines": lambda: _labels("emotionlines"),
    "emocontext": lambda: _labels("emocontext"),
    "categorical": lambda: _labels("categorical"),
    "empathetic_chat": _empathetic_chat,
}


def _built(name):
    with report_options_set(n_boot=50, seed=SEED):
        return BUILDERS[name]() if name in BUILDERS else _judges()


def _all_figures(name):
    return list(_built(name).figures.items())


def test_every_protocol_has_a_figure_builder_here():
    assert set(BUILDERS) == {protocol.name for protocol in registry.all()}


def _backgrounds(figure):
    """Yield every drawn text with the colour behind it: its heatmap cell, or the paper."""
    for ax in figure.axes:
        images = [i for i in ax.get_images() if isinstance(i, AxesImage)]
        for text in ax.texts:
            background = figures.PAPER
            if images and text.get_text():
                x, y = text.get_position()
                cell = images[0].get_array()[int(round(y)), int(round(x))]
                if not np.ma.is_masked(cell) and np.isfinite(cell):
                    background = images[0].to_rgba(cell)
            yield text, background
    for text in figure.findobj(Text):
        if text.get_text() and not any(text in ax.texts for ax in figure.axes):
            yield text, figures.PAPER


PROTOCOLS = [*sorted(BUILDERS), "judges"]


@pytest.mark.parametrize("name", PROTOCOLS)
def test_every_text_reads_on_its_background(name):
    for figure_name, drawn in _all_figures(name):
        for text, background in _backgrounds(drawn.figure):
            ratio = contrast_ratio(text.get_color(), background)
            assert ratio >= figures.MIN_CONTRAST, (figure_name, text.get_text(), ratio)


def test_the_heatmap_cells_show_their_n_in_black_or_white_by_contrast():
    report = _built("pairwise")
    heatmap = report.figures["ratio_heatmap"].figure
    cells = [(t, bg) for t, bg in _backgrounds(heatmap) if "n=" in t.get_text()]
    pairs = report.tables["pairs"]
    assert len(cells) == 2 * len(pairs)  # each pair twice: row over column and back
    assert {re.search(r"n=(\d+)", t.get_text())[1] for t, _ in cells} == {
        str(n) for n in pairs["n"]
    }
    colours = {t.get_color() for t, bg in cells}
    assert colours <= {figures.INK, figures.PAPER} and len(colours) == 2  # dark and pale cells


@pytest.mark.parametrize("name", PROTOCOLS)
def test_svg_and_png_carry_the_title_n_and_interval_and_repeat_byte_for_byte(name, tmp_path):
    again = dict(_all_figures(name))  # the same report built anew: fresh figures
    for figure_name, drawn in _all_figures(name):
        paths = figure_write(drawn, tmp_path / figure_name)
        assert [p.name for p in paths] == [f"{figure_name}.svg", f"{figure_name}.png"]
        svg = paths[0].read_text(encoding="utf-8")
        assert unescape(re.search(r"<title>(.*?)</title>", svg)[1]) == drawn.title
        assert unescape(re.search(r"<dc:description>(.*?)</", svg, re.S)[1]) == drawn.alt
        texts = [unescape(t) for t in re.findall(r"<text[^>]*>([^<]*)</text>", svg)]
        assert any(re.search(r"\bn=\d+", t) for t in texts), figure_name
        assert any(re.search(r"\d+% CI|no interval", t) for t in texts), figure_name
        assert paths[1].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        repeated = figure_write(again[figure_name], tmp_path / "again")
        assert [p.read_bytes() for p in repeated] == [p.read_bytes() for p in paths]


def test_likert_alt_names_each_aspect_s_highest_and_lowest_model_with_its_numbers():
    report = _built("likert")
    alt = report.figures["likert"].alt
    for aspect, part in report.tables["scores"].groupby("aspect"):
        top, bottom = part.loc[part["mean"].idxmax()], part.loc[part["mean"].idxmin()]
        said = (
            f"{top.model} scores highest on {aspect} ({top['mean']:.2f}, 95% CI "
            f"{top.ci_low:.2f}–{top.ci_high:.2f}, n={top.n} ratings) and {bottom.model} lowest "
            f"({bottom['mean']:.2f}, 95% CI {bottom.ci_low:.2f}–{bottom.ci_high:.2f}, "
            f"n={bottom.n} ratings)."
        )
        assert said in alt


@pytest.mark.parametrize("name, unit", [("ssa", "responses"), ("ssa_interactive", "bot turns")])
def test_ssa_alt_names_the_highest_and_lowest_ssa(name, unit):
    report = _built(name)
    scores = report.tables["scores"].set_index("model")
    alt = report.figures["ssa"].alt
    top, bottom = scores["ssa"].idxmax(), scores["ssa"].idxmin()
    assert f"{top} scores highest on SSA ({scores.loc[top, 'ssa']:.1f}%" in alt
    assert f"{bottom} lowest ({scores.loc[bottom, 'ssa']:.1f}%" in alt
    assert f"n={scores.loc[top, 'responses']} {unit}" in alt
    if name == "ssa_interactive":  # 30 turns in chats of 6: 5 conversations per bot
        assert "Conversations per bot: GenericBot 5, Meena 5." in alt


def test_pairwise_alts_name_the_most_one_sided_pair_and_the_ranking_s_ends():
    report = _built("pairwise")
    rates = report.tables["win_rates"]
    row = rates.loc[(rates["win_rate"] - 0.5).abs().idxmax()]
    winner, loser = (row.model_a, row.model_b) if row.win_rate > 0.5 else (row.model_b, row.model_a)
    share = max(row.win_rate, 1 - row.win_rate) * 100
    said = f"{winner} is chosen over {loser} in {share:.0f}% of their {row.decisive} decisive"
    assert said in report.figures["ratio_heatmap"].alt
    bt = report.tables["bradley_terry"]
    alt = report.figures["bradley_terry"].alt
    assert f"{bt.model.iloc[0]} ranks first ({figures.number(bt.strength.iloc[0])}" in alt
    assert f"{bt.model.iloc[-1]} last ({figures.number(bt.strength.iloc[-1])}" in alt


def test_acute_alt_names_each_question_s_most_one_sided_pair():
    report = _built("acute")
    alt = report.figures["win_rates"].alt
    for question, part in report.tables["win_rates"].groupby("question"):
        row = part.loc[(part["win_rate"] - 0.5).abs().idxmax()]
        winner = row.model_a if row.win_rate > 0.5 else row.model_b
        share = max(row.win_rate, 1 - row.win_rate) * 100
        assert f"pair on {question}: {winner} is chosen over" in alt
        assert f"in {share:.0f}% of their {row.n} judgments (95% CI " in alt


@pytest.mark.parametrize("name", ["emotionlines", "emocontext", "categorical"])
def test_label_alt_names_the_most_and_least_common_label_and_the_agreement(name):
    report = _built(name)
    distribution = report.tables["distribution"].iloc[-1]
    labels = [c for c in report.tables["distribution"].columns if c not in ("source", "method")]
    labels = [c for c in labels if c not in ("dialogues", "utterances", "items", "tied")]
    labels = [c for c in labels if c != "unlabeled"]
    shares = distribution[labels].astype(float)
    alt = report.figures["distribution"].alt
    assert f"Most common: {shares.idxmax()} ({shares.max():.1f}%" in alt
    assert f"least common: {shares.idxmin()} ({shares.min():.1f}%" in alt
    kappa = report.tables["agreement"]
    value = kappa["kappa"] if "kappa" in kappa else kappa["value"]
    assert f"Fleiss' κ {figures.number(value.iloc[-1 if name == 'emotionlines' else 0])}" in alt


def test_ed_collection_alt_names_the_commonest_emotion_and_the_lengths():
    report = _built("empathetic_chat")
    labels = report.tables["labels"].set_index("emotion")["situations"]
    alt = report.figures["collection"].alt
    assert alt.startswith("40 conversations (34 complete, 6 partial) over 20 situations.")
    assert f"Most common emotion: {labels.idxmax()} ({labels.max()} situations" in alt
    assert f"{(labels == 0).sum()} of {len(labels)} emotions have none" in alt
    assert "Conversations have 3–8 utterances" in alt


def test_ed_collection_figure_of_emotions_outside_the_study_s_list_says_so():
    protocol = registry.get("empathetic_chat")
    parameters = protocol.clean_parameters({})
    report = protocol.report(parameters, pd.DataFrame(columns=["item", "payload"]), pd.DataFrame())
    dialogues = pd.DataFrame(
        [
            {"dialogue": "c1", "status": "complete", "flagged": False, "flags": []}
            | {"emotion": "bored", "situation": 1, "model": "", "opened_by": ""}
            | {"utterances": 6, "words": 30, "pastes": 0, "ratings": None}
        ]
    )
    protocol.report_dialogues(parameters, report, dialogues)
    alt = report.figures["collection"].alt
    assert "over 0 situations. No situation has one of the study's emotions." in alt


def test_judge_alt_names_where_a_judge_agrees_with_the_majority_most_and_least():
    report = _built("judges")
    table = report.tables["agreement"]
    best = table.loc[table["kappa_majority"].idxmax()]
    worst = table.loc[table["kappa_majority"].idxmin()]
    alt = report.figures["agreement"].alt
    assert f"{best.judge} on fluency agrees with the crowd's majority most" in alt
    assert f"({figures.number(best.kappa_majority)}, 95% CI" in alt
    assert f"{worst.judge} on fluency least ({figures.number(worst.kappa_majority)}" in alt


def test_report_write_puts_each_figure_s_title_and_alt_text_beside_it(tmp_path):
    report = _built("acute")
    written = report_write(report, tmp_path, stem="study")
    index = json.loads((tmp_path / "study_figures.json").read_text(encoding="utf-8"))
    assert index == {
        "win_rates": {
            "png": "study_win_rates.png",
            "svg": "study_win_rates.svg",
            "title": report.figures["win_rates"].title,
            "alt": report.figures["win_rates"].alt,
        }
    }
    assert {p.name for p in written} >= {"study_win_rates.png", "study_win_rates.svg"}


@pytest.mark.django_db
def test_the_dashboard_shows_each_figure_with_its_alt_text(client):
    researcher = User.objects.create_user("ada", password="pw-ada-123", is_staff=True)
    campaign = CampaignFactory(owner=researcher, items_per_assignment=2)
    ItemFactory.create_batch(4, campaign=campaign)
    crowd_run(campaign=campaign, workers=crowd_make(good=3, noisy=0, spammer=0), seed=3)
    job = services.job_start(campaign=campaign, kind=Job.Kind.REPORT, options={})
    services.job_run(job.pk)
    job.refresh_from_db()
    client.force_login(researcher)
    page = client.get(reverse("dashboard:campaign", args=[campaign.slug])).content.decode()
    figure = job.result["figures"]["likert"]
    assert figure["alt"].startswith("Bar chart of the mean 1–5 rating")
    assert f'alt="{escape(figure["alt"])}" data-figure="likert"' in page
    assert f"{escape(figure['title'])} ·" in page
