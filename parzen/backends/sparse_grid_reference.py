"""The float64 NumPy sparse-grid operators: the definition of correct for the other backends'.

B v and B^T alpha (paper 004 in docs/statistics.md, eq. 2 and algorithm 1) are
streamed over blocks of data points, each block's (points x subspaces) basis values held at once.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from .sparse_grid_base import SparseGridBackend

#: Point-subspace values held in memory per block by default.
BLOCK = 1 << 20


def sparse_grid_basis(X: np.ndarray, codes: np.ndarray, offsets: np.ndarray, modified: bool):
    """For points X (m, d) in [0, 1]^d: the (m, S) values and coefficient indices of the one
    non-zero basis function of each subspace (codes and offsets of ``parzen.sparsegrid.grid``).

    Hat: phi = 1 - |2^c x - i| with i = 2 floor(x 2^{c-1}) + 1 (paper 004 in docs/statistics.md,
    eq. 1); level 0 (c <= 0): 1 - |x + c|; modified hats (``modified``): 1 on level 1, 2 - 2^c x for i = 1 and
    2^c x - i + 1 for i = 2^c - 1 on levels c > 1 (Pflueger 2010, section 3.3).
    """
    values = np.ones((X.shape[0], codes.shape[0]))
    local = np.zeros((X.shape[0], codes.shape[0]), dtype=np.int64)
    for k in range(codes.shape[1]):
        c = codes[:, k]
        x = X[:, k : k + 1]
        hat = c >= 1
        half = np.where(hat, np.ldexp(1.0, np.maximum(c - 1, 0)), 1.0)  # 2^{c-1}: functions per level
        j = np.where(hat, np.minimum(np.floor(x * half), half - 1), 0.0)
        i = 2.0 * j + 1.0
        t = 2.0 * half * x - i  # 2^c x - i
        phi = np.where(hat, 1.0 - np.abs(t), 1.0 - np.abs(x + c))
        if modified:
            phi = np.where(hat & (c == 1), 1.0, phi)
            phi = np.where(hat & (c > 1) & (i == 1.0), 1.0 - t, phi)
            phi = np.where(hat & (c > 1) & (i == 2.0 * half - 1.0), 1.0 + t, phi)
        values *= phi
        local = local * half.astype(np.int64) + j.astype(np.int64)
    return values, local + offsets[:-1]


def _blocks(X: np.ndarray, codes: np.ndarray, block: int) -> Iterator[slice]:
    """Row slices of X holding at most ``block`` point-subspace values each."""
    rows = max(1, block // max(1, codes.shape[0]))
    return (slice(start, start + rows) for start in range(0, X.shape[0], rows))


class NumpySparseGrid(SparseGridBackend):
    """The float64 reference operators.

    Parameters
    ----------
    block : int, default 2^20
        Point-subspace basis values held in memory at once.
    """

    name = "numpy"
    dtypes = (np.dtype(np.float64),)

    def __init__(self, block: int = BLOCK) -> None:
        self.block = int(block)

    def mult_transpose(
        self, X: np.ndarray, codes: np.ndarray, offsets: np.ndarray, alpha: np.ndarray, *, modified: bool, dtype=None
    ) -> np.ndarray:
        """v = B^T alpha: v_j = sum_g alpha_g phi_g(x_j), the sparse-grid function at every point
        (paper 004, algorithm 1, multTranspose), one subspace term per point and subspace."""
        X = np.asarray(X, dtype=np.float64)
        alpha = np.asarray(alpha, dtype=np.float64)
        out = np.empty(X.shape[0])
        for rows in _blocks(X, codes, self.block):
            values, index = sparse_grid_basis(X[rows], codes, offsets, modified)
            out[rows] = (values * alpha[index]).sum(axis=1)
        return out

    def mult(
        self, X: np.ndarray, codes: np.ndarray, offsets: np.ndarray, v: np.ndarray, *, modified: bool, dtype=None
    ) -> np.ndarray:
        """u = B v: u_g = sum_j phi_g(x_j) v_j for every grid point g (paper 004, algorithm 1, mult)."""
        X = np.asarray(X, dtype=np.float64)
        v = np.asarray(v, dtype=np.float64)
        out = np.zeros(int(offsets[-1]))
        for rows in _blocks(X, codes, self.block):
            values, index = sparse_grid_basis(X[rows], codes, offsets, modified)
            out += np.bincount(index.ravel(), weights=(values * v[rows, None]).ravel(), minlength=out.size)
        return out
