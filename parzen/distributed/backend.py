"""DaskBackend: the pair sums and KDE sums of :class:`parzen.backends.KDEBackend` as Dask tasks.

Every selector and :class:`parzen.KDE` take ``backend=DaskBackend()`` unchanged: the statistics
call the same primitives, and this backend cuts each into blocks (:mod:`parzen.distributed.blocks`)
that run on the workers, each with the worker's own backend (``local``: the cpu backend, or the
gpu backend on a GPU worker, so a cluster of one worker per GPU is the multi-GPU path).  The data
blocks are scattered to the workers once per call, or once per prepared computation
(``prepare_pair_sum_1d`` for PLUGIN's two stages, ``prepare_whitened_pair_sum_sq`` for LSCV_H's
optimiser loop), and every task reuses them; the partial sums come back as float64 and are
combined here.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..backends.base import KDEBackend, PairSums1D
from ..kernels import KERNELS
from .blocks import (
    MIN_BLOCK_ROWS,
    TASKS_PER_THREAD,
    Local,
    combine_triangle,
    kernel_sum_task,
    pair_sum_1d_task,
    pair_sum_sq_task,
    query_and_data_blocks,
    split_blocks,
    triangle_blocks,
    triangle_tasks,
)
from .client import dask_client
from .scatter import ScatteredBlocks


class DaskBackend(KDEBackend):
    """Pair sums and KDE sums computed by the workers of a Dask cluster.

    Parameters
    ----------
    client : distributed.Client, optional
        The client (default: the current one, looked up at each call).
    local : "auto", "numpy", "cpu", "gpu" or KDEBackend, default "auto"
        The backend each worker computes its blocks with (resolved on the worker: "auto" takes its
        GPU where it has one and a block is worth it, else the cpu backend).
    local_threads : int or None, default 1
        Numba threads per task of the cpu backend on the workers: 1 follows Dask's convention
        (the worker's threads are the parallelism; start workers with ``--nthreads`` = cores);
        None lets each task use every core of its machine.
    tasks_per_thread : int, default 6
        Tasks per worker thread that each sum is cut into (balance: no thread idles while another
        holds a large share).
    min_block_rows : int, default 1024
        Fewest rows per block (smaller blocks cost more in task overhead than they save).

    Raises
    ------
    ValueError
        For a ``tasks_per_thread``, ``min_block_rows`` or ``local_threads`` below 1.

    Notes
    -----
    Sums equal the local backend's to float64 round-off (docs/distributed.md).  The pairs between
    two blocks are the local backend's ``pair_sum_1d_between`` / ``pair_sum_sq_between`` (a
    rectangle of tiles on every backend), so each pair is summed once, in exactly one task.
    """

    name = "dask"
    dtypes = (np.dtype(np.float64), np.dtype(np.float32))

    def __init__(
        self, client=None, local="auto", *, local_threads: int | None = 1, tasks_per_thread: int = TASKS_PER_THREAD,
        min_block_rows: int = MIN_BLOCK_ROWS,
    ) -> None:
        checked = [("tasks_per_thread", tasks_per_thread), ("min_block_rows", min_block_rows)]
        for field, value in checked + ([] if local_threads is None else [("local_threads", local_threads)]):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"{field} must be a positive integer, got {value!r}")
        self.client = client
        self.local = local
        self.local_threads = None if local_threads is None else int(local_threads)
        self.tasks_per_thread = int(tasks_per_thread)
        self.min_block_rows = int(min_block_rows)

    def __repr__(self) -> str:
        return f"DaskBackend(client={self.client!r}, local={self.local!r})"

    def _local(self, dtype) -> Local:
        """How the workers compute: in this backend's default float64 unless told (the gpu
        backend's own default is float32)."""
        return Local(self.local, self.dtypes[0] if dtype is None else np.dtype(dtype), self.local_threads)

    def _threads(self, client) -> int:
        return max(1, sum(client.nthreads().values()))

    def _scatter_triangle(self, values: np.ndarray) -> ScatteredBlocks:
        """The row blocks of ``values`` (:func:`triangle_blocks` of them) scattered to the workers."""
        client = dask_client(self.client)
        count = triangle_blocks(len(values), self._threads(client), tasks_per_thread=self.tasks_per_thread, min_rows=self.min_block_rows)
        return ScatteredBlocks(client, [values[rows] for rows in split_blocks(len(values), count)])

    @staticmethod
    def _triangle_sum(blocks: ScatteredBlocks, task: Callable, *args) -> np.ndarray:
        """``task`` on every block and pair of blocks, added (:func:`combine_triangle`)."""
        count = len(blocks.blocks)

        def submit(futures: list) -> list:
            return [blocks.client.submit(task, [futures[k] for k in ks], *args, pure=False) for ks in triangle_tasks(count)]

        return combine_triangle(blocks.gather(submit))

    def pair_sum_1d(self, x: np.ndarray, kind: str, scales: np.ndarray, *, dtype=None) -> np.ndarray:
        """For each scale g: sum_{i<j} phi^(r)((x_i - x_j) / g), kind = "gauss_d<r>", by blocks of
        the pair triangle on the workers; see :meth:`parzen.backends.reference.NumpyBackend.pair_sum_1d`."""
        x = np.asarray(x, dtype=np.float64).ravel()
        blocks = self._scatter_triangle(x)
        return self._triangle_sum(blocks, pair_sum_1d_task, kind, _floats(scales), self._local(dtype))

    def prepare_pair_sum_1d(self, x: np.ndarray, *, dtype=None) -> PairSums1D:
        """:class:`PairSums1D` over x, its blocks scattered once for every stage (PLUGIN's two)."""
        x = np.asarray(x, dtype=np.float64).ravel()
        blocks = self._scatter_triangle(x)

        def pair_sum(kind: str, g) -> float:
            scales = np.array([float(g)])
            return float(self._triangle_sum(blocks, pair_sum_1d_task, kind, scales, self._local(dtype))[0])

        return PairSums1D(pair_sum)

    def pair_sum_sq(self, Y: np.ndarray, kind: str, params: np.ndarray, *, dtype=None) -> np.ndarray:
        """(len(h), 2): sum_{i<j} exp(-s / 4h^2) and exp(-s / 2h^2), s = |y_i - y_j|^2 (kind "lscv"),
        by blocks of the pair triangle; see :meth:`parzen.backends.reference.NumpyBackend.pair_sum_sq`."""
        _check_sq_kind(kind)
        blocks = self._scatter_triangle(_rows(Y))
        return self._triangle_sum(blocks, pair_sum_sq_task, None, kind, _floats(params), self._local(dtype))

    def prepare_whitened_pair_sum_sq(self, Z: np.ndarray, kind: str, *, dtype=None) -> Callable:
        """A function (M, params) -> pair_sum_sq(rows M^-1 z, kind, params); the blocks of Z are
        scattered once and whitened on the workers at each call (LSCV_H's optimiser loop)."""
        _check_sq_kind(kind)
        blocks = self._scatter_triangle(_rows(Z))

        def sums(M: np.ndarray, params) -> np.ndarray:
            M = np.asarray(M, dtype=np.float64)
            return self._triangle_sum(blocks, pair_sum_sq_task, M, kind, _floats(params), self._local(dtype))

        return sums

    def kernel_sum(self, Z: np.ndarray, Q: np.ndarray, kind: str, weights: np.ndarray | None = None, *, dtype=None) -> np.ndarray:
        """For each query q: sum_i w_i k(|q - z_i|^2), by (query block) x (data block) tasks, each
        query's parts added in float64; see :meth:`parzen.backends.reference.NumpyBackend.kernel_sum`."""
        parts = self._query_tasks(Z, Q, kind, weights, dtype, log=False)
        return np.concatenate([np.sum(np.stack(row), axis=0) for row in parts]) if parts else np.zeros(0)

    def log_kernel_sum(self, Z: np.ndarray, Q: np.ndarray, kind: str, weights: np.ndarray | None = None, *, dtype=None) -> np.ndarray:
        """For each query q: log sum_i w_i k(|q - z_i|^2), each data block's log-sum combined by
        log-sum-exp (-inf where every term is 0); see :meth:`parzen.backends.reference.NumpyBackend.log_kernel_sum`."""
        parts = self._query_tasks(Z, Q, kind, weights, dtype, log=True)
        return np.concatenate([np.logaddexp.reduce(np.stack(row), axis=0) for row in parts]) if parts else np.zeros(0)

    def _query_tasks(self, Z, Q, kind: str, weights, dtype, *, log: bool) -> list[list[np.ndarray]]:
        """Per query block, the sums over each data block (computed on the workers)."""
        if kind not in KERNELS:
            raise ValueError(f"unknown kernel {kind!r}; choose one of {', '.join(map(repr, KERNELS))}")
        Z, Q = _rows(Z), _rows(Q)
        if len(Q) == 0:
            return []
        w = None if weights is None else np.asarray(weights, dtype=np.float64)
        client = dask_client(self.client)
        query_count, data_count = query_and_data_blocks(
            len(Q), len(Z), self._threads(client), tasks_per_thread=self.tasks_per_thread, min_rows=self.min_block_rows
        )
        data = [(Z[rows], None if w is None else w[rows]) for rows in split_blocks(len(Z), data_count)]
        queries = [(Q[rows], None) for rows in split_blocks(len(Q), query_count)]
        blocks = ScatteredBlocks(client, data + queries)
        local = self._local(dtype)

        def submit(futures: list) -> list:
            return [
                client.submit(kernel_sum_task, block, query, kind, local, log, pure=False)
                for query in futures[data_count:]
                for block in futures[:data_count]
            ]

        sums = blocks.gather(submit)
        return [sums[k : k + data_count] for k in range(0, len(sums), data_count)]


def _rows(values) -> np.ndarray:
    """``values`` as float64 rows: (n,) is n rows of one column."""
    values = np.asarray(values, dtype=np.float64)
    return values[:, None] if values.ndim == 1 else values


def _floats(values) -> np.ndarray:
    return np.atleast_1d(np.asarray(values, dtype=np.float64))


def _check_sq_kind(kind: str) -> None:
    if kind != "lscv":
        raise ValueError(f"unknown pair_sum_sq kind {kind!r}; the dask backend knows 'lscv'")
