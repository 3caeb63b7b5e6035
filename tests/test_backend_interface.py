"""Backends as objects: the declared interfaces, resolution, and state owned by instances."""

import copy
import importlib
import inspect
import pkgutil
import sys

import numpy as np
import pytest

import parzen.backends
from parzen import backends
from parzen.backends import KDEBackend, SparseGridBackend, resolve_backend, resolve_sparse_grid_backend
from parzen.backends.reference import NumpyBackend
from parzen.backends.sparse_grid_reference import NumpySparseGrid

GPU = "gpu" in backends.available()


@pytest.mark.parametrize("name", backends.available())
def test_every_registered_backend_implements_the_interfaces(name):
    for cls, interface in ((backends.backend_class(name), KDEBackend),
                           (backends.sparse_grid_backend_class(name), SparseGridBackend)):
        assert issubclass(cls, interface) and not inspect.isabstract(cls)
        instance = cls()
        assert instance.name == name
        assert instance.dtypes and all(isinstance(t, np.dtype) for t in instance.dtypes)


def test_an_incomplete_backend_cannot_be_made():
    class NoLogSums(KDEBackend):
        name = "partial"
        dtypes = (np.dtype(np.float64),)

        def pair_sum_1d(self, x, kind, scales, *, dtype=None):
            return np.zeros(len(scales))

        def pair_sum_sq(self, Y, kind, params, *, dtype=None):
            return np.zeros((len(params), 2))

        def kernel_sum(self, Z, Q, kind, weights=None, *, dtype=None):
            return np.zeros(len(Q))

    class NoTranspose(SparseGridBackend):
        name = "partial"
        dtypes = (np.dtype(np.float64),)

        def mult(self, X, codes, offsets, v, *, modified, dtype=None):
            return np.zeros(int(offsets[-1]))

    with pytest.raises(TypeError, match="log_kernel_sum"):
        NoLogSums()
    with pytest.raises(TypeError, match="mult_transpose"):
        NoTranspose()


class CountingBackend(NumpyBackend):
    """The reference, counting the pair sums it is asked for."""

    def __init__(self, tile: int = 8) -> None:
        super().__init__(tile)
        self.calls = 0

    def pair_sum_1d(self, x, kind, scales, *, dtype=None):
        self.calls += 1
        return super().pair_sum_1d(x, kind, scales, dtype=dtype)

    def pair_sum_sq(self, Y, kind, params, *, dtype=None):
        self.calls += 1
        return super().pair_sum_sq(Y, kind, params, dtype=dtype)


def test_an_instance_is_resolved_to_itself_and_used_below_the_entry_points():
    from parzen import KDE
    from parzen.bandwidth import lscv_h, plugin

    be = CountingBackend()
    assert resolve_backend(be) is be
    assert resolve_backend(be, np.float64, work=1e15) is be  # "auto"'s work does not move it
    with pytest.raises(ValueError, match="computes in float64"):
        resolve_backend(be, np.float32)
    grid = NumpySparseGrid(block=64)
    assert resolve_sparse_grid_backend(grid, work=1e15) is grid
    x = np.random.default_rng(3).normal(size=(40, 2))
    # tiles of 8 sum in another order than the default's: equal to rounding
    assert plugin(x[:, 0], backend=be) == pytest.approx(plugin(x[:, 0], backend="numpy"), rel=1e-12)
    assert be.calls == 2  # PLUGIN's two stages, on the instance passed in
    assert lscv_h(x, backend=be) == pytest.approx(lscv_h(x, backend="numpy"), rel=1e-9)
    calls = be.calls
    assert calls > 2
    kde = KDE(bandwidth="lscv_h", backend=be).fit(x)
    np.testing.assert_allclose(kde.pdf(x[:5]), KDE(bandwidth="lscv_h", backend="numpy").fit(x).pdf(x[:5]), rtol=1e-9)
    assert be.calls > calls


def test_names_resolve_to_one_shared_instance():
    assert resolve_backend("numpy") is resolve_backend("numpy")
    assert resolve_sparse_grid_backend("numpy") is resolve_sparse_grid_backend("numpy")
    with pytest.raises(ValueError, match="unknown backend"):
        resolve_sparse_grid_backend("cuda")


_MUTABLE = (dict, list, set, bytearray, np.ndarray)


def _imported(name, value) -> bool:
    """Whether ``value`` is a module global of the same name outside parzen.backends (imported:
    e.g. the kernel registry ``parzen.kernels.KERNELS``)."""
    return any(getattr(m, name, None) is value for k, m in list(sys.modules.items())
               if m is not None and not k.startswith("parzen.backends"))


def test_no_backend_module_holds_mutable_state():
    """Module globals of parzen.backends are constants: no dict, list, set or array that code
    could change between calls (state belongs to backend instances)."""
    names = ["parzen.backends"] + [f"parzen.backends.{m.name}" for m in pkgutil.iter_modules(parzen.backends.__path__)]
    checked = 0
    for module_name in names:
        try:
            module = importlib.import_module(module_name)
        except ImportError:  # a backend this machine cannot run
            continue
        checked += 1
        held = {k: type(v).__name__ for k, v in vars(module).items()
                if not k.startswith("__") and isinstance(v, _MUTABLE) and not _imported(k, v)}
        tensors = {k for k, v in vars(module).items() if type(v).__name__ == "Tensor"}
        assert not held and not tensors, f"{module_name} holds mutable globals {held or tensors}"
    assert checked >= 6


@pytest.mark.skipif(not GPU, reason="the gpu backend is not available")
def test_gpu_tiles_are_checked():
    from parzen.backends.gpu import GpuTiles

    with pytest.raises(ValueError, match="tile_1d must be a power of two"):
        GpuTiles(tile_1d=12)
    with pytest.raises(ValueError, match="chunk_rows must be a positive integer"):
        GpuTiles(chunk_rows=0)


@pytest.mark.skipif(not GPU, reason="the gpu backend is not available")
def test_gpu_backend_owns_its_state_and_close_releases_it():
    """Two GPU backends with different tiles: each keeps its own buffers and constants, both
    agree with the float64 reference, and close() empties one without touching the other."""
    from parzen.backends.gpu import GpuBackend, GpuTiles

    reference = NumpyBackend()
    rng = np.random.default_rng(16)
    x, Z, Q = rng.normal(size=45), rng.normal(size=(45, 3)), rng.normal(size=(9, 3))
    M = np.tril(rng.normal(size=(3, 3)) * 0.2) + np.eye(3)
    h = np.array([0.5, 1.0, 2.0])
    Y = np.linalg.solve(M, (Z - Z.mean(axis=0)).T).T
    small = GpuBackend(GpuTiles(tile_1d=8, tile_sq=8, query_block=4, data_block=8, chunk_rows=64, scales_per_pass=2))
    with GpuBackend(GpuTiles(tile_1d=32, tile_sq=32, tile_gram=32, query_block=32, data_block=32)) as other:
        for be in (small, other):
            got = be.prepare_pair_sum_1d(x, dtype=np.float64).evaluate(lambda s, g: (s("gauss_d4", g),), 0.4)
            np.testing.assert_allclose(got, reference.pair_sum_1d(x, "gauss_d4", np.array([0.4])), rtol=1e-10)
            np.testing.assert_allclose(be.prepare_whitened_pair_sum_sq(Z, "lscv", dtype=np.float64)(M, h),
                                       reference.pair_sum_sq(Y, "lscv", h), rtol=1e-10)
            np.testing.assert_allclose(be.kernel_sum(Z, Q, "gaussian", dtype=np.float64),
                                       reference.kernel_sum(Z, Q, "gaussian"), rtol=1e-10)
            np.testing.assert_allclose(be.log_kernel_sum(Z, Q + 30.0, "gaussian", dtype=np.float64),
                                       reference.log_kernel_sum(Z, Q + 30.0, "gaussian"), rtol=1e-10)
            assert be._whitened and be._hermite
        assert next(iter(small._whitened.values())) is not next(iter(other._whitened.values()))
        small.close()
        assert not small._whitened and not small._hermite and not small._graphs
        assert other._whitened and other._hermite  # the other instance keeps its own
    assert not other._whitened and not other._hermite and not other._graphs  # closed on leaving the block
    other.prepare_whitened_pair_sum_sq(Z, "lscv")
    twin = copy.deepcopy(other)  # a copy (scikit-learn's clone) carries the tiles, not the device state
    assert twin.tiles == other.tiles and not twin._whitened
    # a closed backend builds what it needs again
    np.testing.assert_allclose(small.pair_sum_sq(Y, "lscv", h, dtype=np.float64), reference.pair_sum_sq(Y, "lscv", h),
                               rtol=1e-10)


@pytest.mark.parametrize("name", ["numpy", *(["gpu"] if GPU else [])])
def test_a_fitted_kde_prepares_its_sums_once_until_it_is_fitted_again(name, monkeypatch):
    """``pdf`` asks the backend for its prepared kernel sums at the first evaluation and keeps
    them (on the GPU: the rows in device memory) until the next ``fit``; copies and pickles
    leave them out and prepare again."""
    import pickle

    from parzen import KDE

    be = backends.backend_class(name)()
    prepared = []

    def counting(method):
        original = getattr(be, method)

        def prepare(Z, kind, weights=None, *, dtype=None):
            prepared.append((method, Z.shape))
            return original(Z, kind, weights, dtype=dtype)
        return prepare

    for method in ("prepare_kernel_sum", "prepare_log_kernel_sum"):
        monkeypatch.setattr(be, method, counting(method))
    rng = np.random.default_rng(12)
    X, Q = rng.normal(size=(60, 7)), rng.normal(size=(25, 7))
    H = 0.5 * np.eye(7) + 0.1
    kde = KDE(bandwidth=H, backend=be, method="exact").fit(X)
    first = kde.pdf(Q)
    np.testing.assert_array_equal(kde.pdf(Q[::-1]), first[::-1])
    logs = kde.score_samples(Q)
    np.testing.assert_array_equal(kde.score_samples(Q[::-1]), logs[::-1])
    assert prepared == [("prepare_kernel_sum", (60, 7)), ("prepare_log_kernel_sum", (60, 7))]
    expected = KDE(bandwidth=H, backend="numpy", method="exact").fit(X)
    np.testing.assert_allclose(first, expected.pdf(Q), rtol=1e-5)
    np.testing.assert_allclose(logs, expected.score_samples(Q), rtol=1e-5)
    kde.fit(X[:30])
    np.testing.assert_allclose(kde.pdf(Q), KDE(bandwidth=H, backend="numpy", method="exact").fit(X[:30]).pdf(Q), rtol=1e-5)
    assert prepared[2:] == [("prepare_kernel_sum", (30, 7))]
    monkeypatch.undo()  # the counting function does not pickle
    first = kde.pdf(Q)
    for twin in (copy.deepcopy(kde), pickle.loads(pickle.dumps(kde))):
        assert "_prepared_sums" not in twin.__dict__
        np.testing.assert_array_equal(twin.pdf(Q), first)
