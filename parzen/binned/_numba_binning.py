"""Linear binning on the CPU (Numba): rows cut into chunks, one private grid per chunk, added.

The same shares as the float64 reference :func:`parzen.binned.grid.linear_bin` (Wand 1994,
section 2): a row at node position p = (x - low) / (high - low) * (m - 1) on each axis (in this order, so
that no rounding moves a point of [low, high] outside [0, m - 1]) gives
w * prod_a (1 - f_a or f_a) to the 2^d nodes of its cell, f = p - floor(p) (the last cell for a
point on the last node).  The rows are cut into contiguous chunks, ``prange`` runs the chunks
in parallel and each chunk adds its shares into its own copy of the grid, so no two threads
write the same memory (no atomics); the copies are added at the end.  The arithmetic is the
reference's, in float64, without ``fastmath`` (no reciprocal for the division): results agree
with the reference to rounding (the tests hold them to 1e-12 relative).

A chunk's grid costs prod(sizes) float64 values, so the number of chunks is bounded by
:data:`PRIVATE_GRID_BYTES` as well as by the rows (at least :data:`MIN_CHUNK_ROWS` each).
"""

from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

#: The per-chunk grids together take at most this much memory (a 64^4 grid is 128 MiB alone).
PRIVATE_GRID_BYTES = 1 << 28
#: Rows per chunk at least: fewer rows are not worth a grid of their own.
MIN_CHUNK_ROWS = 1 << 14


def chunk_starts(n: int, grid_nodes: int) -> np.ndarray:
    """The first row of each chunk and n at the end: (chunks + 1,) int64.

    Parameters
    ----------
    n : int
        Rows.
    grid_nodes : int
        prod(sizes), the values in one private grid.

    Returns
    -------
    numpy.ndarray
        Boundaries of at most max(1, min(threads, n / MIN_CHUNK_ROWS, grids that fit in
        PRIVATE_GRID_BYTES)) chunks of equal size.
    """
    by_memory = PRIVATE_GRID_BYTES // (8 * grid_nodes)
    chunks = max(1, min(numba.get_num_threads(), n // MIN_CHUNK_ROWS, by_memory))
    return np.linspace(0, n, chunks + 1).astype(np.int64)


@njit(cache=True)
def _cell(p, m):
    """The first node of the cell holding position p on an axis of m nodes, and the fraction."""
    k = min(np.int64(np.floor(p)), m - 2)
    return k, p - k


@njit(parallel=True, cache=True, nogil=True)
def _bin_1d(x, w, weighted, low, width, m, starts):
    chunks = starts.size - 1
    grids = np.zeros((chunks, m))
    bad = np.full(chunks, -1, dtype=np.int64)
    for c in prange(chunks):
        g = grids[c]
        for i in range(starts[c], starts[c + 1]):
            p = (x[i] - low) / width * (m - 1)
            if not (p >= 0.0 and p <= m - 1):
                bad[c] = i
                break
            k, f = _cell(p, m)
            wi = w[i] if weighted else 1.0
            g[k] += (1.0 - f) * wi
            g[k + 1] += f * wi
    return grids, bad


@njit(parallel=True, cache=True, nogil=True)
def _bin_2d(X, w, weighted, lows, widths, sizes, starts):
    chunks = starts.size - 1
    m0, m1 = sizes[0], sizes[1]
    grids = np.zeros((chunks, m0, m1))
    bad = np.full(chunks, -1, dtype=np.int64)
    for c in prange(chunks):
        g = grids[c]
        for i in range(starts[c], starts[c + 1]):
            p0 = (X[i, 0] - lows[0]) / widths[0] * (m0 - 1)
            p1 = (X[i, 1] - lows[1]) / widths[1] * (m1 - 1)
            if not (p0 >= 0.0 and p0 <= m0 - 1 and p1 >= 0.0 and p1 <= m1 - 1):
                bad[c] = i
                break
            k0, f0 = _cell(p0, m0)
            k1, f1 = _cell(p1, m1)
            wi = w[i] if weighted else 1.0
            g[k0, k1] += (1.0 - f0) * (1.0 - f1) * wi
            g[k0, k1 + 1] += (1.0 - f0) * f1 * wi
            g[k0 + 1, k1] += f0 * (1.0 - f1) * wi
            g[k0 + 1, k1 + 1] += f0 * f1 * wi
    return grids, bad


@njit(parallel=True, cache=True, nogil=True)
def _bin_nd(X, w, weighted, lows, widths, sizes, starts):
    """Any d: the grid flattened in C order, the 2^d corners enumerated by the bits of an int.

    Every loop reads w[i] only when ``weighted`` (else each row weighs 1 and w is a placeholder).
    """
    chunks = starts.size - 1
    d = sizes.size
    nodes = 1
    for a in range(d):
        nodes *= sizes[a]
    strides = np.ones(d, dtype=np.int64)
    for a in range(d - 2, -1, -1):
        strides[a] = strides[a + 1] * sizes[a + 1]
    grids = np.zeros((chunks, nodes))
    bad = np.full(chunks, -1, dtype=np.int64)
    for c in prange(chunks):
        g = grids[c]
        first = np.empty(d, dtype=np.int64)
        frac = np.empty(d)
        for i in range(starts[c], starts[c + 1]):
            inside = True
            for a in range(d):
                p = (X[i, a] - lows[a]) / widths[a] * (sizes[a] - 1)
                if not (p >= 0.0 and p <= sizes[a] - 1):
                    inside = False
                    break
                first[a], frac[a] = _cell(p, sizes[a])
            if not inside:
                bad[c] = i
                break
            wi = w[i] if weighted else 1.0
            for corner in range(1 << d):
                share = 1.0
                node = 0
                for a in range(d):
                    if (corner >> (d - 1 - a)) & 1:
                        share *= frac[a]
                        node += (first[a] + 1) * strides[a]
                    else:
                        share *= 1.0 - frac[a]
                        node += first[a] * strides[a]
                g[node] += share * wi
    return grids, bad


def linear_bin_counts(values: np.ndarray, weights: np.ndarray | None, lows, highs, sizes) -> tuple[np.ndarray, int]:
    """Linear-binning counts of the rows of ``values`` by the chunked parallel loops.

    Parameters
    ----------
    values : numpy.ndarray
        (n, d) float64 rows, d = 1..4.
    weights : numpy.ndarray or None
        (n,) float64 weights; None: 1 per row (no array of ones is made).
    lows, highs : array_like of shape (d,)
        The grid's first and last node per axis (``GridSpec.lows``, ``GridSpec.highs``).
    sizes : tuple of int
        Nodes per axis.

    Returns
    -------
    counts : numpy.ndarray
        float64 array of shape ``sizes``.
    outside : int
        The first row found outside the grid's box (a row of the earliest chunk holding one;
        NaN rows included), or -1 when every row is inside; the counts are then incomplete.
    """
    n, d = values.shape
    nodes = int(np.prod(sizes))
    starts = chunk_starts(n, nodes)
    lows = np.asarray(lows, dtype=np.float64)
    widths = np.asarray(highs, dtype=np.float64) - lows
    sizes_arr = np.asarray(sizes, dtype=np.int64)
    weighted = weights is not None
    w = weights if weights is not None else np.ones(1)
    if d == 1:
        grids, bad = _bin_1d(np.ascontiguousarray(values[:, 0]), w, weighted, lows[0], widths[0], sizes_arr[0], starts)
    elif d == 2:
        grids, bad = _bin_2d(values, w, weighted, lows, widths, sizes_arr, starts)
    else:
        grids, bad = _bin_nd(values, w, weighted, lows, widths, sizes_arr, starts)
    found = bad[bad >= 0]
    return grids.sum(axis=0).reshape(sizes), int(found[0]) if found.size else -1
