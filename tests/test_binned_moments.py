"""The one-pass moments of a column (parzen.binned._numba_moments) against NumPy's two passes."""

import numpy as np
import pytest

from parzen.binned._numba_moments import column_moments
from parzen.binned.source import Chunk, Moments


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("case", ["normal", "far_from_zero", "outlier_first", "tiny", "odd_length"])
def test_column_moments_equal_two_pass_numpy(case, weighted):
    rng = np.random.default_rng(5)
    x = {
        "normal": rng.normal(3.0, 2.0, size=10_000),
        "far_from_zero": 1e8 + rng.normal(size=10_000),
        # the shift (the mean of the first rows) lies far from the mean: the second pass is taken
        "outlier_first": np.concatenate([np.full(64, 1e6), rng.normal(size=100_000)]),
        "tiny": np.array([2.5]),
        "odd_length": rng.uniform(-1, 1, size=4099),
    }[case]
    w = rng.uniform(0.0, 2.0, size=x.size) if weighted else np.ones(x.size)
    total, low, high, mean, scatter = column_moments(x, w if weighted else np.ones(1), weighted)
    expected_mean = np.average(x, weights=w)
    assert total == pytest.approx(w.sum(), rel=1e-13)
    assert (low, high) == (x.min(), x.max())
    assert mean == pytest.approx(expected_mean, rel=1e-13, abs=1e-13 * np.abs(x).max())
    assert scatter == pytest.approx(float(w @ (x - expected_mean) ** 2), rel=1e-11, abs=1e-300)


def test_zero_total_weight_gives_zero_mean_and_scatter():
    total, low, high, mean, scatter = column_moments(np.array([1.0, 4.0]), np.zeros(2), True)
    assert (total, low, high, mean, scatter) == (0.0, 1.0, 4.0, 0.0, 0.0)


def test_one_column_moments_add_up_to_the_whole():
    x = np.random.default_rng(8).normal(-40.0, 3.0, size=(30_001, 1))
    parts = [Moments.of(Chunk(x[i:i + 7000])) for i in range(0, len(x), 7000)]
    whole = sum(parts[1:], parts[0])
    assert whole.rows == len(x)
    assert whole.mean[0] == pytest.approx(x.mean(), rel=1e-13)
    assert whole.covariance[0, 0] == pytest.approx(np.var(x, ddof=1), rel=1e-12)
