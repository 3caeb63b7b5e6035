"""DaskBackend: pair sums and KDE sums by blocks on Dask workers equal the numpy reference."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("distributed")

from parzen import KDE
from parzen.backends import available, resolve_backend
from parzen.backends.reference import NumpyBackend
from parzen.bandwidth import lscv_H, lscv_h, plugin
from parzen.bandwidth.lscv import lscv_H_objective, lscv_h_objective
from parzen.distributed import DaskBackend
from parzen.distributed.blocks import Local, query_and_data_blocks, split_blocks, triangle_blocks, triangle_tasks

RTOL = 1e-12
REFERENCE = NumpyBackend()


def relative(got, want) -> float:
    got, want = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    return float(np.max(np.abs(got - want)) / np.max(np.abs(want)))


def test_blocks_cover_the_triangle_with_tasks_for_every_thread():
    assert triangle_blocks(10**6, 2) == 5  # 15 tasks >= 6 per thread
    assert triangle_blocks(10**6, 64) == 28  # 406 tasks >= 384
    assert triangle_blocks(3_000, 64) == 2  # blocks of at least 1024 rows
    assert triangle_blocks(10, 4) == 1
    assert split_blocks(10, 3) == [slice(0, 3), slice(3, 7), slice(7, 10)]
    assert triangle_tasks(3) == [(0,), (1,), (2,), (0, 1), (0, 2), (1, 2)]
    assert query_and_data_blocks(10, 10**6, 2) == (1, 12)  # few queries: the data are split
    assert query_and_data_blocks(10**6, 10**6, 2) == (12, 1)


@pytest.mark.parametrize("min_block_rows", [1, 150, 400, 10_000])  # K = 5, 5, 2, 1 blocks of 1000 rows
def test_pair_sums_equal_the_reference_for_any_number_of_blocks(threads, min_block_rows):
    rng = np.random.default_rng(1)
    x = np.r_[rng.normal(size=700), rng.normal(4.0, 0.3, size=300)]
    Y = rng.normal(size=(1_000, 3))
    be = DaskBackend(threads, "cpu", min_block_rows=min_block_rows)
    scales = np.array([0.05, 0.3, 1.0])
    for kind in ("gauss_d0", "gauss_d4", "gauss_d6"):
        assert relative(be.pair_sum_1d(x, kind, scales), REFERENCE.pair_sum_1d(x, kind, scales)) < RTOL
        prepared = be.prepare_pair_sum_1d(x)
        assert relative(prepared.sum(kind, 0.3), REFERENCE.pair_sum_1d(x, kind, [0.3])[0]) < RTOL
    h = np.array([0.1, 0.5, 2.0])
    assert relative(be.pair_sum_sq(Y, "lscv", h), REFERENCE.pair_sum_sq(Y, "lscv", h)) < RTOL
    M = np.array([[1.0, 0.0, 0.0], [0.3, 2.0, 0.0], [-0.2, 0.1, 0.5]])
    whitened = np.linalg.solve(M, Y.T).T
    sums = be.prepare_whitened_pair_sum_sq(Y, "lscv")
    assert relative(sums(M, h), REFERENCE.pair_sum_sq(whitened, "lscv", h)) < RTOL
    assert relative(sums(np.eye(3), h), REFERENCE.pair_sum_sq(Y, "lscv", h)) < RTOL


def test_kde_sums_equal_the_reference(threads):
    rng = np.random.default_rng(2)
    Z, Q, w = rng.normal(size=(1_500, 2)), rng.normal(size=(700, 2)) * 3, rng.uniform(0, 1, 1_500)
    w[:10] = 0.0
    be = DaskBackend(threads, "cpu", min_block_rows=200)
    for kind in ("gaussian", "epanechnikov"):
        for weights in (None, w):
            assert relative(be.kernel_sum(Z, Q, kind, weights), REFERENCE.kernel_sum(Z, Q, kind, weights)) < RTOL
            got, want = be.log_kernel_sum(Z, Q, kind, weights), REFERENCE.log_kernel_sum(Z, Q, kind, weights)
            np.testing.assert_array_equal(np.isinf(got), np.isinf(want))  # -inf outside the kernel's reach
            finite = np.isfinite(want)
            np.testing.assert_allclose(got[finite], want[finite], rtol=RTOL)
    far = np.array([[60.0, 0.0]])  # every Gaussian term underflows; log-sum-exp still finite
    np.testing.assert_allclose(be.log_kernel_sum(Z, far, "gaussian"), REFERENCE.log_kernel_sum(Z, far, "gaussian"), rtol=RTOL)
    assert be.kernel_sum(Z, Q[:0], "gaussian").shape == (0,)


def test_selectors_and_kde_with_the_dask_backend_equal_numpy_on_two_processes(processes):
    rng = np.random.default_rng(3)
    x = np.r_[rng.normal(size=2_000), rng.normal(3.0, 0.5, size=1_000)]
    X = rng.multivariate_normal([0.0, 1.0], [[1.0, 0.6], [0.6, 2.0]], size=1_500)
    be = DaskBackend(processes, "cpu", min_block_rows=256)
    assert relative(plugin(x, backend=be, method="exact"), plugin(x, backend="numpy", method="exact")) < RTOL
    h = np.linspace(0.2, 1.5, 40)
    assert relative(lscv_h_objective(X, h, backend=be), lscv_h_objective(X, h, backend="numpy")) < RTOL
    # the minimiser's refinement turns round-off in g(h) into ~1e-11 in its argmin
    assert relative(lscv_h(X, backend=be, method="exact"), lscv_h(X, backend="numpy", method="exact")) < 1e-10
    for H in ([[0.3, 0.1], [0.1, 0.5]], [[0.05, 0.0], [0.0, 0.2]]):
        assert relative(lscv_H_objective(X, np.array(H), backend=be), lscv_H_objective(X, np.array(H), backend="numpy")) < RTOL
    Q = rng.normal(size=(400, 2)) * 2
    kde = KDE(bandwidth=np.array([[0.2, 0.05], [0.05, 0.3]]), backend=be).fit(X)
    ref = KDE(bandwidth=np.array([[0.2, 0.05], [0.05, 0.3]]), backend="numpy").fit(X)
    assert relative(kde.pdf(Q), ref.pdf(Q)) < RTOL
    np.testing.assert_allclose(kde.score_samples(Q), ref.score_samples(Q), rtol=RTOL)


def test_the_backend_resolves_as_an_instance_and_checks_its_arguments(threads):
    be = DaskBackend(threads)
    assert resolve_backend(be) is be and resolve_backend(be, "float32") is be
    with pytest.raises(ValueError, match="tasks_per_thread must be a positive integer"):
        DaskBackend(tasks_per_thread=0)
    with pytest.raises(ValueError, match="unknown pair_sum_sq kind"):
        be.pair_sum_sq(np.zeros((3, 2)), "nope", [1.0])
    with pytest.raises(ValueError, match="unknown kernel"):
        be.kernel_sum(np.zeros((3, 2)), np.zeros((1, 2)), "nope")


def test_without_a_client_the_error_says_how_to_start_one():
    with pytest.raises(ValueError, match="start one"):
        DaskBackend().pair_sum_1d(np.arange(5.0), "gauss_d4", [1.0])


def test_a_task_limits_numba_threads_in_its_thread_and_restores_them():
    numba = pytest.importorskip("numba")
    before = numba.get_num_threads()
    with Local("cpu", None, 1).resolved(1e6) as be:
        assert be.name == "cpu" and numba.get_num_threads() == 1
    assert numba.get_num_threads() == before
    with Local("numpy", None, None).resolved(1e6) as be:
        assert be.name == "numpy" and numba.get_num_threads() == before
    with pytest.raises(ValueError, match="local_threads must be a positive integer"):
        DaskBackend(local_threads=0)


def test_lscv_H_whole_optimisation_with_the_dask_backend_equals_numpy(threads):
    X = np.random.default_rng(8).multivariate_normal([0.0, 1.0], [[1.0, 0.6], [0.6, 2.0]], size=400)
    assert relative(lscv_H(X, backend=DaskBackend(threads, "cpu", min_block_rows=200)), lscv_H(X, backend="numpy")) < 1e-10


@pytest.mark.skipif("gpu" not in available(), reason="the gpu backend is not available")
def test_workers_on_the_gpu_backend_equal_the_reference():
    """A GPU worker, one thread as dask-cuda's (under Triton's interpreter, which is not
    thread-safe, where there is no GPU): the multi-GPU path."""
    from distributed import Client, LocalCluster

    rng = np.random.default_rng(9)
    x, Y = rng.normal(size=600), rng.normal(size=(600, 2))
    with (
        LocalCluster(processes=False, n_workers=1, threads_per_worker=1, dashboard_address=":0") as cluster,
        Client(cluster, set_as_default=False) as client,
    ):
        be = DaskBackend(client, "gpu", min_block_rows=300)  # 2 blocks: inside both, and between
        assert relative(be.pair_sum_1d(x, "gauss_d4", [0.4], dtype="float64"), REFERENCE.pair_sum_1d(x, "gauss_d4", [0.4])) < RTOL
        assert relative(be.pair_sum_sq(Y, "lscv", [0.5], dtype="float64"), REFERENCE.pair_sum_sq(Y, "lscv", [0.5])) < RTOL
