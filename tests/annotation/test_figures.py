"""Error bars of the report figures: lengths matplotlib accepts for every interval."""

import numpy as np

from annotation.figures import error_bars


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
