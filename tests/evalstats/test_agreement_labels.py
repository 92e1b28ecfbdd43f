"""Krippendorff's alpha on string labels: coded once, the same numbers as on their codes."""

import krippendorff
import numpy as np
import pandas as pd
import pytest

from evalstats.agreement import (
    coincidence_matrix,
    krippendorff_alpha,
    krippendorff_alpha_ci,
    percent_agreement,
)

LABELS = np.array(["anger", "fear", "joy", "neutral", "sadness", "surprise"])


def labelled(n_items: int = 400, n_raters: int = 5, seed: int = 0) -> np.ndarray:
    """Raters x items codes (float, NaN missing): 60% copy the item's true label."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, len(LABELS), n_items)
    noise = rng.integers(0, len(LABELS), (n_raters, n_items))
    codes = np.where(rng.random((n_raters, n_items)) < 0.6, truth, noise).astype(float)
    codes[rng.random((n_raters, n_items)) < 0.2] = np.nan
    codes[:, :3] = np.nan  # items nobody judged
    codes[1:, 3] = np.nan  # an item with one label: unpairable
    return codes


def as_labels(codes: np.ndarray, missing: object = None) -> np.ndarray:
    out = np.empty(codes.shape, dtype=object)
    present = ~np.isnan(codes)
    out[present] = LABELS[codes[present].astype(int)]
    out[~present] = missing
    return out


@pytest.mark.parametrize("missing", [None, np.nan])
def test_alpha_on_labels_is_alpha_on_their_codes_and_the_packages(missing):
    codes = labelled()
    labels = as_labels(codes, missing)
    ours = krippendorff_alpha(labels, "nominal")
    assert ours == pytest.approx(krippendorff_alpha(codes, "nominal"), abs=1e-12)
    package = krippendorff.alpha(
        reliability_data=as_labels(codes, "nan").astype(str), level_of_measurement="nominal"
    )
    assert ours == pytest.approx(package, abs=1e-12)


def test_long_frame_of_labels_gives_the_arrays_alpha_interval_and_agreement():
    codes = labelled(seed=3)
    raters, items = np.nonzero(~np.isnan(codes))
    long = pd.DataFrame(
        {"item": items, "rater": raters, "value": LABELS[codes[raters, items].astype(int)]}
    )
    labels = as_labels(codes)
    assert krippendorff_alpha(long) == pytest.approx(krippendorff_alpha(labels), abs=1e-12)
    assert percent_agreement(long) == pytest.approx(percent_agreement(codes), abs=1e-12)
    ours = krippendorff_alpha_ci(long, n_boot=300, seed=1)
    reference = krippendorff_alpha_ci(long.assign(value=codes[raters, items]), n_boot=300, seed=1)
    assert tuple(ours) == pytest.approx(tuple(reference), abs=1e-12)


def test_labels_seen_only_on_unpairable_items_are_left_out_of_the_coincidences():
    labels = np.array([["joy", "joy", "fear", None], ["joy", "sadness", "fear", "anger"]], object)
    labels[1, 3] = None  # "anger" is then nobody's: item 3 has no label at all
    labels[0, 3] = "anger"  # one label on item 3: unpairable
    matrix = coincidence_matrix(labels)
    assert list(matrix.index) == ["fear", "joy", "sadness"]
    assert matrix.to_numpy().sum() == 6


def test_ordinal_alpha_on_numbers_stored_as_objects_uses_their_order():
    codes = labelled(seed=5)
    numbers = np.where(np.isnan(codes), None, codes + 1).astype(object)
    assert krippendorff_alpha(numbers, "ordinal") == pytest.approx(
        krippendorff_alpha(codes, "ordinal"), abs=1e-12
    )


@pytest.mark.parametrize(
    "names",
    [
        LABELS,
        np.array(["a", "b", "both", "neither"]),
        np.array(["nanny", "nano", "na", "n"]),  # "nan" as a prefix is a label, not missing
        None,
    ],
)
def test_numpy_string_arrays_take_nan_as_missing_like_the_package(names):
    codes = labelled(seed=7)
    if names is None:  # long or non-ASCII labels take the general path
        names = np.array(["a-label-longer-than-8", "fröhlich", "c", "d", "e", "f"])
    names = names[: int(np.nanmax(codes)) + 1] if len(names) > np.nanmax(codes) else names
    codes = np.where(codes < len(names), codes, np.nan)
    text = np.full(codes.shape, "nan", dtype=names.dtype)
    present = ~np.isnan(codes)
    text[present] = names[codes[present].astype(int)]
    ours = krippendorff_alpha(text)
    assert ours == pytest.approx(krippendorff_alpha(codes), abs=1e-12)
    assert ours == pytest.approx(
        krippendorff.alpha(reliability_data=text, level_of_measurement="nominal"), abs=1e-12
    )
    assert krippendorff_alpha(np.char.encode(text)) == pytest.approx(ours, abs=1e-12)
    assert "nan" not in list(coincidence_matrix(text).index)
