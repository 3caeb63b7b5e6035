"""How the pair triangle and the KDE sums are cut into tasks, and the work each task does.

The pairs i < j of n rows cut into K blocks of rows A_1..A_K (about n / K rows each) are the
pairs inside each block (task (k,): the backend's ``pair_sum_1d`` / ``pair_sum_sq`` of A_k) and
the pairs between two blocks (task (k, l), k < l: ``pair_sum_1d_between`` /
``pair_sum_sq_between`` of A_k and A_l, every pair of the rectangle A_k x A_l).  Each pair lies in
exactly one task, so the sum over all pairs is the sum of the tasks' sums; each task streams its
pairs in the backend's tiles, never an n x n array.  The KDE sums are additive over the data:
tasks are (block of queries) x (block of data), and a query's sums over the data blocks are added
(``kernel_sum``) or log-added (``log_kernel_sum``).

The functions below named ``*_task`` run on the workers; each resolves the worker's own backend
(:class:`Local`: "auto" takes the worker's GPU where it has one and the work is worth it) and,
following Dask's convention that parallelism comes from the worker's threads (it starts workers
with OMP_NUM_THREADS=1), limits the cpu backend's Numba threads to one per task by default.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import pairwise
from typing import Any, TypeVar

import numpy as np
from scipy import linalg

from ..backends import KDEBackend, resolve_backend

#: Tasks per worker thread that the triangle is cut into (so that no thread idles while
#: another holds a large share of the work).
TASKS_PER_THREAD = 6
#: Smallest rows per block: below it a task's Dask overhead (about 1 ms) outweighs its pairs.
MIN_BLOCK_ROWS = 1024

T = TypeVar("T")


def triangle_blocks(n: int, threads: int, *, tasks_per_thread: int = TASKS_PER_THREAD, min_rows: int = MIN_BLOCK_ROWS) -> int:
    """The number K of row blocks: the fewest whose K (K + 1) / 2 tasks give each thread
    ``tasks_per_thread``, with blocks of at least ``min_rows`` rows (and K >= 1).

    Parameters
    ----------
    n : int
        Rows.
    threads : int
        Worker threads of the cluster.
    tasks_per_thread, min_rows : int
        See :data:`TASKS_PER_THREAD`, :data:`MIN_BLOCK_ROWS`.

    Returns
    -------
    int
    """
    target = max(1, tasks_per_thread * threads)
    wanted = math.ceil((math.sqrt(1.0 + 8.0 * target) - 1.0) / 2.0)
    return int(max(1, min(wanted, n // max(1, min_rows))))


def split_blocks(n: int, count: int) -> list[slice]:
    """``count`` consecutive row ranges covering 0..n, sizes differing by at most one."""
    edges = np.linspace(0, n, count + 1).round().astype(int)
    return [slice(int(a), int(b)) for a, b in pairwise(edges)]


def triangle_tasks(count: int) -> list[tuple[int, ...]]:
    """The tasks over ``count`` blocks: (k,) for the diagonal blocks, then (k, l) for k < l."""
    return [(k,) for k in range(count)] + [(k, l) for k in range(count) for l in range(k + 1, count)]


def combine_triangle(partials: list[np.ndarray]) -> np.ndarray:
    """The sum over all pairs i < j: the tasks' partial sums (in :func:`triangle_tasks`' order)
    added in float64.

    Parameters
    ----------
    partials : list of numpy.ndarray
        The tasks' sums.

    Returns
    -------
    numpy.ndarray
    """
    return np.stack(partials).sum(axis=0)


@dataclass(frozen=True)
class Local:
    """How a worker computes its blocks: its backend, compute type and Numba threads.

    Parameters
    ----------
    backend : "auto", "numpy", "cpu", "gpu" or KDEBackend
        Resolved on the worker (:func:`parzen.backends.resolve_backend`, with the block's work).
    dtype : None or dtype
        The compute type.
    threads : int or None
        Numba threads of one task (the cpu backend's parallel loops); None leaves Numba's
        default (every core of the worker's machine).
    """

    backend: Any = "auto"
    dtype: Any = None
    threads: int | None = 1

    @contextmanager
    def resolved(self, work: float) -> Iterator[KDEBackend]:
        """The backend for a block of ``work`` kernel evaluations, with Numba's threads limited
        in this (worker) thread while it computes (numba.set_num_threads is per thread)."""
        backend = resolve_backend(self.backend, self.dtype, work=work)
        with numba_threads(self.threads):
            yield backend


@contextmanager
def numba_threads(threads: int | None) -> Iterator[None]:
    """Numba's parallel loops limited to ``threads`` in this (worker) thread for the block
    (``numba.set_num_threads`` is per thread; the previous limit is restored after).

    Dask's convention is that a worker's threads are its parallelism, so a task computes on one
    thread: without the limit each task's Numba loops would take every core of the machine, and
    two single-threaded workers would each run on both cores.

    Parameters
    ----------
    threads : int or None
        The limit (None: leave Numba's, every core of the machine).

    Yields
    ------
    None
    """
    numba = sys.modules.get("numba")  # imported by the code that uses it (the cpu backend, binning)
    if threads is None or numba is None:
        yield
        return
    previous = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        yield
    finally:
        numba.set_num_threads(previous)


def on_one_thread(function: Callable[..., T], *args: Any) -> T:
    """``function(*args)`` with Numba on one thread (:func:`numba_threads`): a partition's task
    (Numba is imported first, so that the limit holds for the worker's first task too)."""
    import numba  # noqa: F401  (partitions are summarised by Numba code: binning, moments)

    with numba_threads(1):
        return function(*args)


def pair_sum_1d_task(blocks: list, kind: str, scales: np.ndarray, local: Local) -> np.ndarray:
    """The 1-D pair sum inside one block, or between two (on a worker, its local backend)."""
    if len(blocks) == 1:
        with local.resolved(0.5 * blocks[0].size ** 2 * len(scales)) as be:
            return np.asarray(be.pair_sum_1d(blocks[0], kind, scales, dtype=local.dtype), dtype=np.float64)
    x, y = blocks
    with local.resolved(float(x.size) * y.size * len(scales)) as be:
        return np.asarray(be.pair_sum_1d_between(x, y, kind, scales, dtype=local.dtype), dtype=np.float64)


def pair_sum_sq_task(blocks: list, M: np.ndarray | None, kind: str, params: np.ndarray, local: Local) -> np.ndarray:
    """The d-dimensional pair sums inside one block of rows z, or between two, whitened
    y = M^-1 z when M is given (on a worker, its local backend)."""
    rows = [Z if M is None else linalg.solve_triangular(M, Z.T, lower=True).T for Z in blocks]
    if len(rows) == 1:
        with local.resolved(0.5 * len(rows[0]) ** 2 * len(params)) as be:
            return np.asarray(be.pair_sum_sq(rows[0], kind, params, dtype=local.dtype), dtype=np.float64)
    X, Y = rows
    with local.resolved(float(len(X)) * len(Y) * len(params)) as be:
        return np.asarray(be.pair_sum_sq_between(X, Y, kind, params, dtype=local.dtype), dtype=np.float64)


def kernel_sum_task(block: tuple, query: tuple, kind: str, local: Local, log: bool) -> np.ndarray:
    """The local backend's ``kernel_sum`` (or ``log_kernel_sum``) of one block of queries
    ``(Q, None)`` over one block of data ``(Z, weights)`` (on a worker)."""
    (Z, weights), (Q, _) = block, query
    with local.resolved(float(len(Z)) * len(Q)) as be:
        method = be.log_kernel_sum if log else be.kernel_sum
        return np.asarray(method(Z, Q, kind, weights, dtype=local.dtype), dtype=np.float64)


def query_and_data_blocks(m: int, n: int, threads: int, *, tasks_per_thread: int = TASKS_PER_THREAD, min_rows: int = MIN_BLOCK_ROWS) -> tuple[int, int]:
    """(query blocks, data blocks) for a KDE sum of m queries over n points.

    Queries are split first (their results need no combining); the data are split as well when
    there are too few query blocks to give each thread ``tasks_per_thread`` tasks.

    Returns
    -------
    tuple of int
        Both at least 1; blocks hold at least ``min_rows`` rows where the sizes allow.
    """
    target = max(1, tasks_per_thread * threads)
    query_blocks = max(1, min(target, m // max(1, min_rows)))
    data_blocks = max(1, min(-(-target // query_blocks), n // max(1, min_rows)))
    return query_blocks, data_blocks
