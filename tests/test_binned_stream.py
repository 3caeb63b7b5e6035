"""Fast and streamed linear binning: every backend and every stream equals the float64 reference.

Tolerance: counts within 1e-12 relative of the largest count (float64 on every path; only the
order of the additions differs), 2e-6 for the gpu backend's float32 positions.
"""

import numpy as np
import pytest

from parzen.backends import available, resolve_backend
from parzen.binned import GridSpec, linear_bin

RTOL = 1e-12


def _assert_same_counts(got, want, rtol=RTOL):
    assert got.spec == want.spec
    scale = np.abs(want.counts).max()
    np.testing.assert_allclose(got.counts, want.counts, rtol=0, atol=rtol * scale)
    assert got.total == pytest.approx(want.total, rel=rtol)


def _data(d, n=3000, seed=0):
    """Weighted rows whose box is the grid's, with rows on its corners, faces and inner nodes."""
    rng = np.random.default_rng(seed + d)
    X = rng.standard_normal((n, d)) * np.arange(1, d + 1)
    spec = GridSpec.covering(X.min(axis=0), X.max(axis=0), [13, 9, 7, 6][:d])
    nodes = np.stack([spec.nodes(a)[rng.integers(0, spec.sizes[a], 50)] for a in range(d)], axis=1)
    corners = np.array([spec.lows, spec.highs])
    X = np.concatenate([X, nodes, corners])
    return X, rng.uniform(0.0, 3.0, len(X)), spec


BACKENDS = [pytest.param(name, marks=pytest.mark.skipif(name not in available(), reason=f"no {name} backend"))
            for name in ("cpu", "gpu")]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("d", [1, 2, 3, 4])
def test_backend_binning_equals_the_reference(backend, d):
    X, w, spec = _data(d)
    want = linear_bin(X, spec, w, backend="numpy")
    _assert_same_counts(linear_bin(X, spec, w, backend=backend), want)
    _assert_same_counts(resolve_backend(backend).linear_bin(X, spec), linear_bin(X, spec, backend="numpy"))


@pytest.mark.skipif("gpu" not in available(), reason="no gpu backend")
@pytest.mark.parametrize("d", [1, 2])
def test_gpu_float32_binning_is_close_and_keeps_face_points(d):
    X, w, spec = _data(d)
    got = resolve_backend("gpu").linear_bin(X, spec, w, dtype=np.float32)
    _assert_same_counts(got, linear_bin(X, spec, w, backend="numpy"), rtol=2e-6)


def test_torch_binning_in_chunks_equals_one_pass(monkeypatch):
    torch = pytest.importorskip("torch")
    from parzen.binned import _torch_binning

    X, w, spec = _data(2)
    monkeypatch.setattr(_torch_binning, "CHUNK_ROWS", 700)
    counts, outside = _torch_binning.linear_bin_counts(
        X, w, spec.lows, spec.spacing, spec.sizes, torch=torch, device=torch.device("cpu"), dtype=torch.float64
    )
    assert outside == -1
    want = linear_bin(X, spec, w, backend="numpy").counts
    np.testing.assert_allclose(counts, want, rtol=0, atol=RTOL * want.max())


def test_numba_binning_in_many_chunks_equals_one_pass(monkeypatch):
    pytest.importorskip("numba")
    from parzen.binned import _numba_binning

    X, w, spec = _data(3, n=20_000)
    monkeypatch.setattr(_numba_binning, "MIN_CHUNK_ROWS", 1000)
    assert len(_numba_binning.chunk_starts(len(X), int(np.prod(spec.sizes)))) > 2
    _assert_same_counts(linear_bin(X, spec, w, backend="cpu"), linear_bin(X, spec, w, backend="numpy"))


@pytest.mark.parametrize("backend", ["numpy", *BACKENDS])
@pytest.mark.parametrize("bad", [np.nan, 5.0, -1e-9])
def test_rows_outside_the_box_are_refused_by_every_backend(backend, bad):
    spec = GridSpec((0.0, 0.0), (1.0, 1.0), (5, 5))
    X = np.full((40_000, 2), 0.5)
    X[30_123, 1] = bad
    with pytest.raises(ValueError, match="row 30123 .* outside the grid's box"):
        linear_bin(X, spec, backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_backend_binning_checks_shapes(backend):
    spec = GridSpec((0.0,), (1.0,), (5,))
    with pytest.raises(ValueError, match="1 column"):
        linear_bin(np.zeros((3, 2)), spec, backend=backend)
    with pytest.raises(ValueError, match="one value per row"):
        linear_bin(np.zeros(3), spec, np.ones(4), backend=backend)
