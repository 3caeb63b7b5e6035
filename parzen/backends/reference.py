"""The float64 NumPy reference backend: the definition of correct.

:class:`NumpyBackend` computes in float64 only (``resolve_backend`` rejects anything else); its
methods accept ``dtype`` for the common interface.

Every pair sum is streamed over tiles of the upper triangle i < j (never an n x n array);
within a tile NumPy's pairwise summation keeps the float64 error small.  These are the sums
R_fun, RR_fun and RR_fun^v of Andrzejewski et al. (paper 000 in docs/statistics.md),
section 5.1; docs/algorithms.md, "The pair sums".  The sparse-grid operators are in
:mod:`parzen.backends.sparse_grid_reference`.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from ..kernels import gauss_derivative, get_kernel
from .base import KDEBackend

#: Pairs held in memory per tile by default (a 1024 x 1024 block: 8 MiB of float64).
TILE = 1024


def upper_tiles(n: int, tile: int) -> Iterator[tuple[slice, slice, bool]]:
    """Row and column slices covering the pairs i < j, tile by tile.

    The third item is True for tiles on the diagonal, where only the strict
    upper triangle of the tile counts.
    """
    for i0 in range(0, n, tile):
        rows = slice(i0, min(i0 + tile, n))
        for j0 in range(i0, n, tile):
            yield rows, slice(j0, min(j0 + tile, n)), i0 == j0


def squared_distances(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """|a_i - b_j|^2 for the rows of A (p, d) and B (q, d), by direct differences.

    Takes column-major views (d, p) and (d, q); differences (not the Gram trick) keep
    full relative accuracy for close pairs.
    """
    s = np.zeros((A.shape[1], B.shape[1]))
    for a, b in zip(A, B):
        diff = a[:, None] - b[None, :]
        s += diff * diff
    return s


def _pair_values(block: np.ndarray, diagonal: bool) -> np.ndarray:
    """Flatten a tile of pair values, keeping only i < j on a diagonal tile."""
    if diagonal:
        return block[np.triu_indices(block.shape[0], 1)]
    return block.ravel()


def derivative_order(kind: str) -> int:
    """The order r of a pair_sum_1d kind "gauss_d<r>"."""
    if kind.startswith("gauss_d") and kind[7:].isdigit():
        return int(kind[7:])
    raise ValueError(f"unknown pair_sum_1d kind {kind!r}; expected 'gauss_d<order>', e.g. 'gauss_d4'")


class NumpyBackend(KDEBackend):
    """The float64 reference: tiles of the pair triangle summed by NumPy.

    Parameters
    ----------
    tile : int, default 1024
        Side of the square tiles (rows x columns of pairs held at once).
    """

    name = "numpy"
    dtypes = (np.dtype(np.float64),)

    def __init__(self, tile: int = TILE) -> None:
        if tile < 1:
            raise ValueError(f"tile must be a positive number of rows, got {tile!r}")
        self.tile = int(tile)

    def __repr__(self) -> str:
        return f"NumpyBackend(tile={self.tile})"

    def pair_sum_1d(self, x: np.ndarray, kind: str, scales: np.ndarray, *, dtype=None) -> np.ndarray:
        """For each scale g: sum_{i<j} phi^(r)((x_i - x_j) / g), kind = "gauss_d<r>".

        These are the double sums of the PLUGIN functionals Psi_r (paper 000 in
        docs/statistics.md, eqs. 16, 18; docs/departures.md, item 1, for the diagonal term, which the caller adds).
        """
        order = derivative_order(kind)
        x = np.asarray(x, dtype=np.float64).ravel()
        scales = np.atleast_1d(np.asarray(scales, dtype=np.float64))
        out = np.zeros(scales.size)
        for rows, cols, diagonal in upper_tiles(x.size, self.tile):
            diff = _pair_values(x[rows, None] - x[None, cols], diagonal)
            for k, g in enumerate(scales):
                out[k] += gauss_derivative(order, diff / g).sum()
        return out

    def pair_sum_sq(self, Y: np.ndarray, kind: str, params: np.ndarray, *, dtype=None) -> np.ndarray:
        """Sums over i < j of functions of the squared distance s = |y_i - y_j|^2.

        kind "lscv": params are scales h; returns an array (len(h), 2) holding
        sum exp(-s / (4 h^2)) and sum exp(-s / (2 h^2)), the two Gaussian sums of the
        LSCV criteria (paper 000 in docs/statistics.md, eqs. 32, 43 after whitening:
        docs/departures.md, item 7).
        """
        if kind != "lscv":
            raise ValueError(f"unknown pair_sum_sq kind {kind!r}; the reference knows 'lscv'")
        Y = np.asarray(Y, dtype=np.float64)
        Yt = np.ascontiguousarray(Y.reshape(len(Y), -1).T)
        h = np.atleast_1d(np.asarray(params, dtype=np.float64))
        a = 1.0 / (4.0 * h * h)
        out = np.zeros((h.size, 2))
        for rows, cols, diagonal in upper_tiles(Yt.shape[1], self.tile):
            s = _pair_values(squared_distances(Yt[:, rows], Yt[:, cols]), diagonal)
            for k in range(h.size):
                e = np.exp(-a[k] * s)
                out[k, 0] += e.sum()
                out[k, 1] += (e * e).sum()
        return out

    def pair_sum_1d_between(self, x: np.ndarray, y: np.ndarray, kind: str, scales: np.ndarray, *, dtype=None) -> np.ndarray:
        """For each scale g: sum_i sum_j phi^(r)((x_i - y_j) / g), tile by tile of the rectangle;
        see :meth:`parzen.backends.KDEBackend.pair_sum_1d_between`."""
        order = derivative_order(kind)
        x, y = np.asarray(x, dtype=np.float64).ravel(), np.asarray(y, dtype=np.float64).ravel()
        scales = np.atleast_1d(np.asarray(scales, dtype=np.float64))
        out = np.zeros(scales.size)
        for i0 in range(0, x.size, self.tile):
            for j0 in range(0, y.size, self.tile):
                diff = (x[i0 : i0 + self.tile, None] - y[None, j0 : j0 + self.tile]).ravel()
                for k, g in enumerate(scales):
                    out[k] += gauss_derivative(order, diff / g).sum()
        return out

    def pair_sum_sq_between(self, X: np.ndarray, Y: np.ndarray, kind: str, params: np.ndarray, *, dtype=None) -> np.ndarray:
        """(len(h), 2): sum exp(-s / 4h^2) and exp(-s / 2h^2) over every (x_i, y_j), tile by tile;
        see :meth:`parzen.backends.KDEBackend.pair_sum_sq_between`."""
        if kind != "lscv":
            raise ValueError(f"unknown pair_sum_sq kind {kind!r}; the reference knows 'lscv'")
        X, Y = np.asarray(X, dtype=np.float64), np.asarray(Y, dtype=np.float64)
        Xt = np.ascontiguousarray((X[:, None] if X.ndim == 1 else X).T)
        Yt = np.ascontiguousarray((Y[:, None] if Y.ndim == 1 else Y).T)
        h = np.atleast_1d(np.asarray(params, dtype=np.float64))
        a = 1.0 / (4.0 * h * h)
        out = np.zeros((h.size, 2))
        for i0 in range(0, Xt.shape[1], self.tile):
            for j0 in range(0, Yt.shape[1], self.tile):
                s = squared_distances(Xt[:, i0 : i0 + self.tile], Yt[:, j0 : j0 + self.tile])
                for k in range(h.size):
                    e = np.exp(-a[k] * s)
                    out[k, 0] += e.sum()
                    out[k, 1] += (e * e).sum()
        return out

    def kernel_sum(
        self, Z: np.ndarray, Q: np.ndarray, kind: str, weights: np.ndarray | None = None, *, dtype=None
    ) -> np.ndarray:
        """For each query q: sum_i w_i k(|q - z_i|^2), k the profile of kernel ``kind``.

        Z and Q are already whitened and scaled (the caller applies the constants);
        this is the KDE sum of paper 000 (docs/statistics.md), eq. 6, and paper 001.
        """
        profile = get_kernel(kind).profile
        Zt = np.ascontiguousarray(np.asarray(Z, dtype=np.float64).T)
        Qt = np.ascontiguousarray(np.asarray(Q, dtype=np.float64).T)
        w = None if weights is None else np.asarray(weights, dtype=np.float64)
        out = np.zeros(Qt.shape[1])
        for q0 in range(0, Qt.shape[1], self.tile):
            for z0 in range(0, Zt.shape[1], self.tile):
                k = profile(squared_distances(Qt[:, q0 : q0 + self.tile], Zt[:, z0 : z0 + self.tile]))
                out[q0 : q0 + self.tile] += k.sum(axis=1) if w is None else k @ w[z0 : z0 + self.tile]
        return out

    def log_kernel_sum(
        self, Z: np.ndarray, Q: np.ndarray, kind: str, weights: np.ndarray | None = None, *, dtype=None
    ) -> np.ndarray:
        """For each query q: log sum_i w_i k(|q - z_i|^2), by log-sum-exp over tiles of data.

        With e_i = log w_i + log k(s_i) (:meth:`parzen.kernels.Kernel.log_profile`), each query keeps
        the largest exponent m seen so far and t = sum exp(e_i - m); a tile with a larger maximum m'
        rescales t by exp(m - m').  The result m + log t is accurate where the sum itself underflows
        (the Gaussian far from every point: -7550 at 50 sd from 1000 N(0, 1) points, where the
        sum is 1e-3279).  It is -inf only where every term is 0: outside a compactly supported
        kernel's reach, where the density is truly 0, or where every weight is 0.
        """
        log_profile = get_kernel(kind).log_profile
        Zt = np.ascontiguousarray(np.asarray(Z, dtype=np.float64).T)
        Qt = np.ascontiguousarray(np.asarray(Q, dtype=np.float64).T)
        with np.errstate(divide="ignore"):
            log_w = np.zeros(Zt.shape[1]) if weights is None else np.log(np.asarray(weights, dtype=np.float64))
        top = np.full(Qt.shape[1], -np.inf)
        total = np.zeros(Qt.shape[1])
        for q0 in range(0, Qt.shape[1], self.tile):
            queries = slice(q0, q0 + self.tile)
            for z0 in range(0, Zt.shape[1], self.tile):
                e = log_profile(squared_distances(Qt[:, queries], Zt[:, z0 : z0 + self.tile])) + log_w[z0 : z0 + self.tile]
                new_top = np.maximum(top[queries], e.max(axis=1))
                shift = np.where(np.isfinite(new_top), new_top, 0.0)  # -inf: every term so far is 0
                total[queries] = total[queries] * np.exp(top[queries] - shift) + np.exp(e - shift[:, None]).sum(axis=1)
                top[queries] = new_top
        with np.errstate(divide="ignore"):
            return top + np.log(total)
