"""Binned 1-D pair sums and binned PLUGIN against the exact float64 computation."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parzen import datasets
from parzen.backends import resolve_backend
from parzen.bandwidth import plugin, plugin_stages
from parzen.bandwidth.plugin import AUTO_EXACT_MAX_N
from parzen.binned import GridSpec, linear_bin
from parzen.binned.pair_sums import BinnedPairSums1D, counts_autocorrelation
from parzen.binned.plugin import MAX_GRID_SIZE
from parzen.kernels import gauss_derivative_at_zero

TOLERANCES = (1e-3, 1e-4, 1e-5)


def _samples():
    rng = np.random.default_rng(17)
    n = 3000
    out = {
        "normal": rng.standard_normal(n),
        "bimodal": np.r_[rng.normal(-2.0, 0.5, n // 2), rng.normal(2.0, 0.5, n - n // 2)],
        "skewed": rng.lognormal(0.0, 1.0, n),
    }
    for name in ("faithful", "quakes", "tempb"):
        frame = datasets.load(name)
        for column in frame.columns:
            out[f"{name}.{column}"] = frame[column].to_numpy(np.float64)
    return out


SAMPLES = _samples()


@pytest.mark.parametrize("tolerance", TOLERANCES)
@pytest.mark.parametrize("scale", ["sd", "minim"])
@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_binned_plugin_within_tolerance_of_exact(name, scale, tolerance):
    x = SAMPLES[name]
    exact = plugin_stages(x, scale=scale, method="exact", backend="cpu")
    binned = plugin_stages(x, scale=scale, method="binned", tolerance=tolerance)
    assert exact.method == "exact" and exact.grid_size is None
    assert binned.method == "binned" and binned.grid_size >= 64
    assert abs(binned.h / exact.h - 1.0) <= tolerance
    # the stages before the pair sums: the same numbers (on a GPU, where "auto" bins there, sigma is
    # the device's float64 sum over the streamed rows: equal to rounding)
    assert binned.sigma == pytest.approx(exact.sigma, rel=1e-14) and binned.g1 == pytest.approx(exact.g1, rel=1e-14)


@pytest.mark.parametrize("order", [0, 2, 4, 6, 8])
@pytest.mark.parametrize("scale", [0.05, 0.2, 1.0])
def test_binned_pair_sums_match_exact(order, scale):
    x = SAMPLES["bimodal"][:1500]
    exact_sum = resolve_backend("numpy").prepare_pair_sum_1d(x).sum
    n = x.size
    sums = BinnedPairSums1D(linear_bin(x, GridSpec.covering(x.min(), x.max(), 4001)))
    exact = 2.0 * exact_sum(f"gauss_d{order}", scale) + n * gauss_derivative_at_zero(order)
    binned = 2.0 * float(sums.pair_sum(order, scale)) + n * gauss_derivative_at_zero(order)
    error = abs(binned / exact - 1.0)
    # the leading-term estimate (t(1-t) at its largest) covers the realised error, which falls as delta^2
    assert error <= float(sums.relative_binning_error(order, scale))
    assert error <= 0.25 * (sums.delta / scale) ** 2 * 50
    vector = sums.pair_sum(order, np.array([scale, 2 * scale]))
    assert vector[0] == float(sums.pair_sum(order, scale)) and vector.shape == (2,)


def test_binning_error_falls_as_delta_squared():
    x = SAMPLES["normal"]
    exact = 2.0 * resolve_backend("numpy").prepare_pair_sum_1d(x).sum("gauss_d4", 0.1) + x.size * 3 / np.sqrt(2 * np.pi)
    sizes = np.array([251, 501, 1001, 2001, 4001])
    errors = []
    for size in sizes:
        sums = BinnedPairSums1D(linear_bin(x, GridSpec.covering(x.min(), x.max(), size)))
        errors.append(abs(float(sums.double_sum(4, 0.1)) / exact - 1.0))
    slope = np.polyfit(np.log(sizes - 1), np.log(errors), 1)[0]  # error ~ delta^2 ~ (M - 1)^-2
    assert -2.3 < slope < -1.7


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.floats(-1e3, 1e3, allow_nan=False), min_size=2, max_size=200),
    st.integers(2, 300),
)
def test_binning_of_the_binned_plugin_matches_the_reference(values, size):
    x = np.asarray(values)
    spec = GridSpec.covering(x.min(), x.max(), size)
    np.testing.assert_allclose(linear_bin(x, spec).counts, linear_bin(x, spec, backend="numpy").counts, rtol=1e-12, atol=1e-12)


def test_binning_keeps_points_on_the_last_node():
    x = np.array([3.46875, 0.03125])  # (high - low) / delta rounds above M - 1 on this grid
    counts = linear_bin(x, GridSpec.covering(x.min(), x.max(), 200)).counts
    assert counts[0] == 1.0 and counts[-1] == pytest.approx(1.0, abs=1e-12) and counts.sum() == pytest.approx(2.0)


def test_binning_rejects_points_outside_and_other_dimensions():
    with pytest.raises(ValueError, match="outside the grid"):
        linear_bin(np.array([0.0, 2.0]), GridSpec((0.0,), (1.0,), (5,)))
    with pytest.raises(ValueError, match="2 column"):
        linear_bin(np.zeros(3), GridSpec((0.0, 0.0), (1.0, 1.0), (5, 5)))


def test_autocorrelation_matches_direct_sums():
    c = np.random.default_rng(5).random(37)
    direct = np.array([np.dot(c[: c.size - lag], c[lag:]) for lag in range(c.size)])
    np.testing.assert_allclose(counts_autocorrelation(c), direct, rtol=1e-12, atol=1e-12)


def test_grid_size_override_is_honoured():
    x = SAMPLES["normal"]
    stages = plugin_stages(x, method="binned", grid_size=401)
    assert stages.grid_size == 401 and stages.method == "binned"
    assert stages.h != plugin_stages(x, method="binned", grid_size=4001).h


def test_auto_is_exact_for_small_and_binned_for_large_samples():
    x = SAMPLES["normal"]
    small = x[: AUTO_EXACT_MAX_N["numpy"]]
    assert plugin_stages(small, backend="numpy").method == "exact"
    big = plugin_stages(x, backend="numpy")
    assert big.method == "binned" and big.grid_size is not None


@pytest.mark.parametrize("tolerance", [0, -1e-4, 0.5, "x", None, np.nan])
def test_bad_tolerance_raises(tolerance):
    with pytest.raises(ValueError, match="tolerance"):
        plugin(SAMPLES["normal"], method="binned", tolerance=tolerance)


@pytest.mark.parametrize("grid_size", [1, 0, -5, 2.5, MAX_GRID_SIZE + 1, "401", True])
def test_bad_grid_size_raises(grid_size):
    with pytest.raises(ValueError, match="grid_size"):
        plugin(SAMPLES["normal"], method="binned", grid_size=grid_size)


def test_unknown_method_raises():
    with pytest.raises(ValueError, match="method"):
        plugin(SAMPLES["normal"], method="fft")


def test_capped_grid_warns():
    # a long tail stretches the range: the tolerance asks for more nodes than the cap
    x = np.r_[np.random.default_rng(1).standard_normal(2000), 1e9]
    with pytest.warns(UserWarning, match="capped"):
        stages = plugin_stages(x, method="binned", tolerance=1e-5, scale="minim")
    assert stages.grid_size == MAX_GRID_SIZE
