"""Linear binning: totals and first moments kept, chunks add up to one pass, clear errors."""

import numpy as np
import pytest

from parzen.binned import BinCounts, GridSpec, linear_bin


def _spec(X, m):
    X = np.atleast_2d(np.asarray(X).T).T
    return GridSpec.covering(X.min(axis=0), X.max(axis=0), m)


@pytest.mark.parametrize("d", [1, 2, 3, 4])
def test_total_and_first_moments_are_kept(d):
    rng = np.random.default_rng(d)
    X = rng.standard_normal((500, d)) * np.arange(1, d + 1)
    w = rng.uniform(0.1, 2.0, 500)
    spec = _spec(X, 9)
    binned = linear_bin(X, spec, w)
    assert binned.total == pytest.approx(w.sum(), rel=1e-13)
    for a in range(d):
        along = binned.counts.sum(axis=tuple(b for b in range(d) if b != a))
        assert along @ spec.nodes(a) == pytest.approx(w @ X[:, a], rel=1e-12)


def test_one_dimensional_shares_by_hand():
    spec = GridSpec((0.0,), (2.0,), (3,))  # nodes 0, 1, 2
    binned = linear_bin([0.25, 2.0], spec)
    np.testing.assert_allclose(binned.counts, [0.75, 0.25, 1.0])


@pytest.mark.parametrize("d", [1, 2, 4])
def test_chunks_add_up_to_one_pass(d):
    rng = np.random.default_rng(10 + d)
    X = rng.standard_normal((1000, d))
    w = rng.uniform(0, 1, 1000)
    spec = _spec(X, 17)
    whole = linear_bin(X, spec, w)
    parts = [linear_bin(X[i : i + 300], spec, w[i : i + 300]) for i in range(0, 1000, 300)]
    merged = parts[0] + parts[1] + parts[2] + parts[3]
    np.testing.assert_allclose(merged.counts, whole.counts, rtol=1e-12, atol=1e-12)


def test_adding_counts_on_different_grids_is_refused():
    a = linear_bin([0.5], GridSpec((0.0,), (1.0,), (5,)))
    b = linear_bin([0.5], GridSpec((0.0,), (1.0,), (6,)))
    with pytest.raises(ValueError, match="different grids"):
        a + b
    assert isinstance(a + a, BinCounts)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (((0.0,), (1.0,), (1,)), "at least 2 nodes"),
        (((1.0,), (0.0,), (5,)), "low < high"),
        (((0.0,) * 5, (1.0,) * 5, (3,) * 5), "at most 4 dimensions"),
        (((0.0,), (1.0, 2.0), (3,)), "one low, high and size per axis"),
    ],
)
def test_bad_grids_are_refused(args, message):
    with pytest.raises(ValueError, match=message):
        GridSpec(*args)


def test_points_outside_the_grid_are_named():
    with pytest.raises(ValueError, match="row 1 .* outside the grid"):
        linear_bin([0.5, 1.5], GridSpec((0.0,), (1.0,), (4,)))
    with pytest.raises(ValueError, match="2 column"):
        linear_bin(np.zeros((3, 3)), GridSpec((0.0, 0.0), (1.0, 1.0), (4, 4)))


def test_a_constant_axis_gets_a_valid_grid():
    spec = GridSpec.covering([3.0, 0.0], [3.0, 1.0], 5)
    binned = linear_bin(np.array([[3.0, 0.2], [3.0, 0.9]]), spec)
    assert binned.total == pytest.approx(2.0)


@pytest.mark.parametrize("backend", ["numpy", "cpu", "gpu"])
def test_a_point_on_the_last_node_is_inside_whatever_the_rounding(backend):
    if backend == "gpu":
        pytest.importorskip("torch", reason="the gpu backend needs the gpu extra")
    # (high - low) / spacing rounds above m - 1 here: positions must not
    spec = GridSpec((0.03125,), (3.46875,), (200,))
    binned = linear_bin([0.03125, 1.0, 3.46875], spec, backend=backend)
    assert binned.total == pytest.approx(3.0, rel=1e-14)
    assert binned.counts[-1] == pytest.approx(1.0, rel=1e-14)
