"""Cells a spreadsheet would run as formulas are neutralised, exactly reversibly; numbers and
other texts are left alone."""

import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

from evalstats.spreadsheets import cell_safe, cell_unsafe, frame_safe


def test_formula_starts_get_a_quote_and_nothing_else_does():
    for text in ("=1+1", "+1", "-1", "@A1", "\tx", "\rx", "'=x", "''-x"):
        assert cell_safe(text) == "'" + text
    for value in ("x=1", "'x", "", "1-2", -1, -0.5, 3, None):
        assert cell_safe(value) == value


@given(st.text(alphabet=st.sampled_from("=+-@'\t\rab1 "), max_size=8))
def test_reading_back_gives_the_text_written(text):
    assert cell_unsafe(cell_safe(text)) == text
    assert cell_unsafe(text) == text or cell_safe(cell_unsafe(text)) == text


def test_a_frame_has_its_text_cells_made_safe_and_its_numbers_kept():
    frame = pd.DataFrame({"text": ["=cmd|' /C calc'!A0", "fine"], "score": [-1.5, 2.0]})
    safe = frame_safe(frame)
    assert safe["text"].tolist() == ["'=cmd|' /C calc'!A0", "fine"]
    assert safe["score"].tolist() == [-1.5, 2.0]
    assert frame["text"][0].startswith("=")  # the caller's frame is not changed
