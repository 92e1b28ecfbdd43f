"""Short ASCII labels coded as integers: the same positions, codes and alpha as the package."""

import krippendorff
import numpy as np
import pytest

from evalstats.agreement import krippendorff_alpha
from evalstats.agreement.coding import _ASCII_CHUNK, _present_labels


def text_array(names: list[str], shape: tuple[int, int], seed: int = 0) -> np.ndarray:
    """A raters x items array of ``names`` drawn at random, "nan" (missing) on 60% of cells."""
    rng = np.random.default_rng(seed)
    pool = np.array(names + ["nan"])
    weights = np.r_[np.full(len(names), 0.4 / len(names)), 0.6]
    return pool[rng.choice(len(pool), size=shape, p=weights)]


@pytest.mark.parametrize(
    "names",
    [
        ["a", "b", "both", "neither"],
        ["neutral", "joy", "sadness", "fear", "anger", "surprise", "disgust"],
        ["", "n", "na", "nanx", "nan\0x", "x"],  # "nan" with a character after a NUL: present
        ["abcdefgh", "abcdefgi"],  # 8 characters: the widest array coded as integers
    ],
)
@pytest.mark.parametrize("kind", ["U", "S"])
def test_present_labels_are_those_the_package_reads_and_codes_follow_first_appearance(names, kind):
    text = text_array(names, (5, (_ASCII_CHUNK // 5) + 977))  # several chunks, a ragged last
    if kind == "S":
        text = np.char.encode(text)
    flat = text.ravel()
    where, codes, distinct = _present_labels(flat)
    assert np.array_equal(where, np.flatnonzero(flat != ("nan" if kind == "U" else b"nan")))
    # pd.factorize's order: the labels as they first appear, each code its label's index.
    first = list(dict.fromkeys(flat[where].tolist()))
    assert np.asarray(distinct).tolist() == first
    assert np.array_equal(np.asarray(distinct)[codes], flat[where])


@pytest.mark.parametrize("names", [["a", "b", "both", "neither"], ["joy", "fear", "anger"]])
def test_alpha_on_short_ascii_labels_is_the_packages(names):
    text = text_array(names, (6, 3000), seed=4)
    ours = krippendorff_alpha(text, "nominal")
    theirs = krippendorff.alpha(reliability_data=text, level_of_measurement="nominal")
    assert ours == pytest.approx(theirs, abs=1e-12)


def test_non_ascii_labels_in_a_later_chunk_take_the_general_path():
    text = text_array(["a", "b"], (2, _ASCII_CHUNK + 10), seed=2).astype("<U2")
    text[1, -1] = "é"
    flat = text.ravel()
    where, codes, distinct = _present_labels(flat)
    assert np.array_equal(where, np.flatnonzero(flat != "nan"))
    assert np.array_equal(np.asarray(distinct)[codes], flat[where])
