"""The multicore sparse-grid operators (Numba): B v and B^T alpha.

For each data point the operators visit the one non-zero basis function of every subspace (its
index computed from the point; paper 004 in docs/statistics.md, algorithm 1); B v
gives each task its own grid-sized float64 accumulator, added up after.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

from ._simd import compute_type
from .sparse_grid_base import SparseGridBackend


@njit(inline="always")
def _subspace_term(X, j, codes, s, modified):
    """Value (in X's type) and local index of subspace s's non-zero basis function at point j
    (see :func:`parzen.backends.sparse_grid_reference.sparse_grid_basis`)."""
    real = X.dtype.type
    one = real(1.0)
    value = one
    local = 0
    for k in range(codes.shape[1]):
        c = codes[s, k]
        if modified and c == 1:
            continue  # the modified level-1 function is the constant 1
        x = X[j, k]
        if c >= 1:
            half = 1 << (c - 1)
            digit = min(int(x * real(half)), half - 1)
            t = x * real(2 * half) - real(2 * digit + 1)
            phi = one - abs(t)
            if modified:
                if digit == 0:
                    phi = one - t
                elif digit == half - 1:
                    phi = one + t
            local = local * half + digit
        else:
            phi = one - abs(x + real(c))
        value *= phi
    return value, local


@njit(parallel=True, fastmath=True, cache=True)
def _sparse_grid_mult_transpose(X, codes, offsets, alpha, modified):
    out = np.empty(X.shape[0])
    for j in prange(X.shape[0]):
        total = 0.0
        for s in range(codes.shape[0]):
            value, local = _subspace_term(X, j, codes, s, modified)
            total += value * alpha[offsets[s] + local]
        out[j] = total
    return out


@njit(parallel=True, fastmath=True, cache=True)
def _sparse_grid_mult(X, codes, offsets, v, modified, tasks):
    m = X.shape[0]
    per_task = -(-m // tasks)
    partial = np.zeros((tasks, offsets[-1]))
    for task in prange(tasks):
        for j in range(task * per_task, min(m, task * per_task + per_task)):
            weight = v[j]
            for s in range(codes.shape[0]):
                value, local = _subspace_term(X, j, codes, s, modified)
                partial[task, offsets[s] + local] += value * weight
    return partial


def _sparse_grid_arguments(X, codes, offsets, dtype):
    ftype = compute_type(dtype)
    return (
        np.ascontiguousarray(X, dtype=ftype),
        np.ascontiguousarray(codes, dtype=np.int64),
        np.ascontiguousarray(offsets, dtype=np.int64),
    )


class CpuSparseGrid(SparseGridBackend):
    """The Numba operators: one task per block of points, basis values in ``dtype``, sums in float64."""

    name = "cpu"
    dtypes = (np.dtype(np.float64), np.dtype(np.float32))

    def mult_transpose(
        self, X: np.ndarray, codes: np.ndarray, offsets: np.ndarray, alpha: np.ndarray, *, modified: bool, dtype=None
    ) -> np.ndarray:
        """v = B^T alpha at every point (paper 004, multTranspose); basis values in ``dtype``, sums in
        float64.  See :meth:`parzen.backends.sparse_grid_reference.NumpySparseGrid.mult_transpose`."""
        X, codes, offsets = _sparse_grid_arguments(X, codes, offsets, dtype)
        return _sparse_grid_mult_transpose(X, codes, offsets, np.asarray(alpha, dtype=np.float64), bool(modified))

    def mult(
        self, X: np.ndarray, codes: np.ndarray, offsets: np.ndarray, v: np.ndarray, *, modified: bool, dtype=None
    ) -> np.ndarray:
        """u = B v over the grid (paper 004, mult); one float64 accumulator per task, added after.
        See :meth:`parzen.backends.sparse_grid_reference.NumpySparseGrid.mult`."""
        X, codes, offsets = _sparse_grid_arguments(X, codes, offsets, dtype)
        tasks = int(max(1, min(4 * numba.get_num_threads(), X.shape[0] // 256)))
        partial = _sparse_grid_mult(X, codes, offsets, np.asarray(v, dtype=np.float64), bool(modified), tasks)
        return partial.sum(axis=0)
