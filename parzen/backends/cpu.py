"""The multicore SIMD CPU backend (Numba): the papers' "SSE implementation".

:class:`CpuBackend` computes the primitives of :class:`parzen.backends.KDEBackend` by jitted
loops that LLVM vectorises (AVX2: 4 float64 / 8 float32 lanes; exp from :mod:`._simd`) and
spreads them over all cores with ``prange`` (Andrzejewski et al., paper 000 in
docs/statistics.md, sections 5.2-5.5 and 6.1):

- the pairs i < j are cut into square tiles of the upper triangle, one task per tile, so the
  threads get equal work and a tile's rows and columns stay in cache;
- inside a tile every row's sum over j (at most one tile of terms) is accumulated in the
  working precision, lane by lane; rows and tiles are combined in float64, and the tiles'
  partial sums are added by NumPy's pairwise summation.  float32 results thereby stay within
  ~1e-6 relative of float64 (the tests hold them to 1e-5);
- data are centred in float64 before any cast, so float32 keeps the differences x_i - x_j
  accurate even for data far from the origin.

Numba compiles each loop on first use for each precision and caches the machine code on disk
(``cache=True``; the loops are module-level functions, see :mod:`._simd`), so later processes
start fast.  The sparse-grid operators are in :mod:`parzen.backends.sparse_grid_cpu`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
from numba import njit, prange

from ..binned._numba_binning import linear_bin_counts
from ..binned.grid import BinCounts, GridSpec, outside_box_error
from ..kernels import KERNELS, gauss_derivative_even_coefficients
from ._log_sums import log_of_kernel_sum, log_sum_exp_of_parts
from ._simd import PROFILE_CODES, compute_type, exp, like, profile
from .base import KDEBackend, binning_rows, hermite_arguments
from .reference import derivative_order

#: At most this many tiles along a side: bigger n gets bigger tiles (bounds the partial sums).
MAX_TILES_PER_SIDE = 512
#: Highest even order r of phi^(r) that pair_sum_1d evaluates (a degree-4 polynomial in u^2).
MAX_ORDER = 8
_SQRT_2PI = float(np.sqrt(2.0 * np.pi))


def _tiles(n: int, tile: int) -> tuple[np.ndarray, int]:
    """The (row start, column start) of every tile on or above the diagonal, and the tile side."""
    tile = max(tile, -(-n // MAX_TILES_PER_SIDE))
    starts = np.arange(0, n, tile)
    i0, j0 = np.meshgrid(starts, starts, indexing="ij")
    upper = i0 <= j0
    return np.ascontiguousarray(np.stack([i0[upper], j0[upper]], axis=1)), tile


def _centred(values: np.ndarray, ftype) -> np.ndarray:
    """Columns of ``values`` (n, d) minus their float64 mean, transposed to (d, n), in ftype."""
    values = np.asarray(values, dtype=np.float64)
    return np.ascontiguousarray((values - values.mean(axis=0)).T, dtype=ftype)


def _hermite_in_s(order: int) -> np.ndarray:
    """Coefficients c_0..c_4 of phi^(r) as a polynomial in s = u^2 (zero-padded to degree 4)."""
    if order % 2 or not 0 <= order <= MAX_ORDER:
        raise ValueError(
            f"the cpu backend sums phi^(r) for even r in 0..{MAX_ORDER} (the PLUGIN functionals), got r = {order}"
        )
    coef = np.zeros(MAX_ORDER // 2 + 1)
    coef[: order // 2 + 1] = gauss_derivative_even_coefficients(order)
    return coef


@njit(parallel=True, fastmath=True, cache=True)
def _hermite_pairs(x, tiles, tile, inv_g, c):
    """partial[t, k] = sum over tile t's pairs of P(s) exp(-s/2), s = ((x_i - x_j) inv_g[k])^2."""
    n = x.size
    half, zero = like(0.5, x), like(0.0, x)
    out = np.zeros((tiles.shape[0], inv_g.size))
    for t in prange(tiles.shape[0]):
        i0, j0 = tiles[t, 0], tiles[t, 1]
        i1, j1 = min(i0 + tile, n), min(j0 + tile, n)
        for k in range(inv_g.size):
            ig = inv_g[k]
            acc = 0.0
            for i in range(i0, i1):
                xi = x[i]
                row = zero
                for j in range(max(j0, i + 1), j1):
                    u = (xi - x[j]) * ig
                    s = u * u
                    p = (((c[4] * s + c[3]) * s + c[2]) * s + c[1]) * s + c[0]
                    row += p * exp(-half * s)
                acc += row
            out[t, k] = acc
    return out


@njit(parallel=True, fastmath=True, cache=True)
def _hermite_tensor_pairs(Yt, w, tiles, tile, alphas, order):
    """partial[t, m] = sum over tile t's pairs i < j of w_i w_j exp(-|u|^2/2) prod_k He_{alphas[m, k]}(u_k),
    u = y_i - y_j: per row i, a block of columns at a time, each loop over the block vectorised."""
    d, n = Yt.shape
    half, zero = like(0.5, Yt), like(0.0, Yt)
    out = np.zeros((tiles.shape[0], alphas.shape[0]))
    for t in prange(tiles.shape[0]):
        i0, j0 = tiles[t, 0], tiles[t, 1]
        i1, j1 = min(i0 + tile, n), min(j0 + tile, n)
        he = np.empty((d, order + 1, tile), dtype=Yt.dtype)
        base = np.empty(tile, dtype=Yt.dtype)
        term = np.empty(tile, dtype=Yt.dtype)
        for i in range(i0, i1):
            start = max(j0, i + 1)
            length = j1 - start
            if length <= 0:
                continue
            base[:length] = zero
            for k in range(d):
                yk = Yt[k, i]
                for jj in range(length):
                    u = yk - Yt[k, start + jj]
                    he[k, 0, jj] = like(1.0, Yt)
                    if order >= 1:
                        he[k, 1, jj] = u
                    base[jj] += u * u
                for m in range(1, order):
                    mm = like(float(m), Yt)
                    for jj in range(length):
                        he[k, m + 1, jj] = he[k, 1, jj] * he[k, m, jj] - mm * he[k, m - 1, jj]
            wi = w[i]
            for jj in range(length):
                base[jj] = wi * w[start + jj] * exp(-half * base[jj])
            for a in range(alphas.shape[0]):
                term[:length] = base[:length]
                for k in range(d):
                    ak = alphas[a, k]
                    if ak:
                        for jj in range(length):
                            term[jj] *= he[k, ak, jj]
                row = zero
                for jj in range(length):
                    row += term[jj]
                out[t, a] += row
    return out


@njit(inline="always", fastmath=True, cache=True)
def _squared_distances(s, At, a, Bt, start, length):
    """s[:length] = |A[a] - B[start + jj]|^2 for jj < length; At, Bt are (d, n) column data."""
    s[:length] = like(0.0, s)
    for c in range(At.shape[0]):
        ac = At[c, a]
        for jj in range(length):
            diff = ac - Bt[c, start + jj]
            s[jj] += diff * diff


@njit(fastmath=True, cache=True)
def _add_exp_sums(out, t, a, s, length, zero):
    """out[t, k] += (sum_jj exp(-a_k s_jj), sum_jj exp(-2 a_k s_jj)) over the first ``length`` of s."""
    for k in range(a.size):
        ak = a[k]
        r1 = zero
        r2 = zero
        for jj in range(length):
            e = exp(-ak * s[jj])
            r1 += e
            r2 += e * e
        out[t, k, 0] += r1
        out[t, k, 1] += r2


@njit(parallel=True, fastmath=True, cache=True)
def _lscv_pairs(Yt, tiles, tile, a):
    """partial[t, k] = (sum exp(-a_k s), sum exp(-2 a_k s)) over tile t's pairs, s = |y_i - y_j|^2."""
    n = Yt.shape[1]
    zero = like(0.0, Yt)
    out = np.zeros((tiles.shape[0], a.size, 2))
    for t in prange(tiles.shape[0]):
        i0, j0 = tiles[t, 0], tiles[t, 1]
        i1, j1 = min(i0 + tile, n), min(j0 + tile, n)
        s = np.empty(tile, dtype=Yt.dtype)
        for i in range(i0, i1):
            start = max(j0, i + 1)
            length = j1 - start
            if length <= 0:
                continue
            _squared_distances(s, Yt, i, Yt, start, length)
            _add_exp_sums(out, t, a, s, length, zero)
    return out


def _rectangle_tiles(n: int, m: int, tile: int) -> tuple[np.ndarray, int]:
    """The (row start, column start) of every tile of an n x m rectangle of pairs, and the side."""
    tile = max(tile, -(-max(n, m) // MAX_TILES_PER_SIDE))
    i0, j0 = np.meshgrid(np.arange(0, n, tile), np.arange(0, m, tile), indexing="ij")
    return np.ascontiguousarray(np.stack([i0.ravel(), j0.ravel()], axis=1)), tile


@njit(parallel=True, fastmath=True, cache=True)
def _hermite_between(x, y, tiles, tile, inv_g, c):
    """partial[t, k] = sum over tile t of the x-by-y rectangle of P(s) exp(-s/2), s = ((x_i - y_j) inv_g[k])^2."""
    half, zero = like(0.5, x), like(0.0, x)
    out = np.zeros((tiles.shape[0], inv_g.size))
    for t in prange(tiles.shape[0]):
        i0, j0 = tiles[t, 0], tiles[t, 1]
        i1, j1 = min(i0 + tile, x.size), min(j0 + tile, y.size)
        for k in range(inv_g.size):
            ig = inv_g[k]
            acc = 0.0
            for i in range(i0, i1):
                xi = x[i]
                row = zero
                for j in range(j0, j1):
                    u = (xi - y[j]) * ig
                    s = u * u
                    p = (((c[4] * s + c[3]) * s + c[2]) * s + c[1]) * s + c[0]
                    row += p * exp(-half * s)
                acc += row
            out[t, k] = acc
    return out


@njit(parallel=True, fastmath=True, cache=True)
def _lscv_between(Xt, Yt, tiles, tile, a):
    """partial[t, k] = (sum exp(-a_k s), sum exp(-2 a_k s)) over tile t of the X-by-Y rectangle, s = |x_i - y_j|^2."""
    n, m = Xt.shape[1], Yt.shape[1]
    zero = like(0.0, Xt)
    out = np.zeros((tiles.shape[0], a.size, 2))
    for t in prange(tiles.shape[0]):
        i0, j0 = tiles[t, 0], tiles[t, 1]
        i1, length = min(i0 + tile, n), min(j0 + tile, m) - j0
        s = np.empty(tile, dtype=Xt.dtype)
        for i in range(i0, i1):
            _squared_distances(s, Xt, i, Yt, j0, length)
            _add_exp_sums(out, t, a, s, length, zero)
    return out


@njit(fastmath=True, cache=True)
def _profile_sum(KIND, s, w, b, length):
    row = like(0.0, s)
    for jj in range(length):
        row += w[b + jj] * profile(KIND, s[jj])
    return row


@njit(fastmath=True, cache=True)
def _weighted_profile_sum(kind, s, w, b, length):
    """sum_jj w[b + jj] k(s[jj]): one branch per kernel, each a loop with a constant kernel,
    so that the branch sits outside the loop and the loop vectorises."""
    if kind == 0:
        return _profile_sum(0, s, w, b, length)
    if kind == 1:
        return _profile_sum(1, s, w, b, length)
    if kind == 2:
        return _profile_sum(2, s, w, b, length)
    if kind == 3:
        return _profile_sum(3, s, w, b, length)
    if kind == 4:
        return _profile_sum(4, s, w, b, length)
    return _profile_sum(5, s, w, b, length)


@njit(parallel=True, fastmath=True, cache=True)
def _kernel_sums(Zt, Qt, w, kind, chunks, qblock, zblock):
    """partial[c, q] = sum over data chunk c of w_i k(|q - z_i|^2), k = profile number ``kind``."""
    n = Zt.shape[1]
    nq = Qt.shape[1]
    chunk = -(-n // chunks)
    nqb = -(-nq // qblock)
    out = np.zeros((chunks, nq))
    for task in prange(nqb * chunks):
        qb, c = task // chunks, task % chunks
        q0, q1 = qb * qblock, min(qb * qblock + qblock, nq)
        z0, z1 = c * chunk, min(c * chunk + chunk, n)
        s = np.empty(zblock, dtype=Zt.dtype)
        for b in range(z0, z1, zblock):
            length = min(zblock, z1 - b)
            for q in range(q0, q1):
                _squared_distances(s, Qt, q, Zt, b, length)
                out[c, q] += _weighted_profile_sum(kind, s, w, b, length)
    return out


@njit(fastmath=True, cache=True)
def _exponents(s, log_w, b, length):
    """s[jj] <- e = log w - s / 2 (the Gaussian's log terms) for jj < length; returns their maximum."""
    half = like(0.5, s)
    for jj in range(length):
        s[jj] = log_w[b + jj] - half * s[jj]
    largest = s[0]
    for jj in range(1, length):
        largest = max(largest, s[jj])
    return largest


@njit(fastmath=True, cache=True)
def _shifted_exp_sum(e, top, length):
    """sum_jj exp(e[jj] - top) (every e <= top: no overflow)."""
    row = like(0.0, e)
    for jj in range(length):
        row += exp(e[jj] - top)
    return row


@njit(parallel=True, fastmath=True, cache=True)
def _gaussian_log_sums(Zt, Qt, log_w, chunks, qblock, zblock):
    """(top, total)[c, q] over data chunk c: top the largest e_i = log w_i - |q - z_i|^2 / 2, total
    sum exp(e_i - top), by a running maximum over blocks (total 0 for an empty chunk).

    Every exponent is finite (the caller leaves out zero weights), as fastmath requires.
    """
    n = Zt.shape[1]
    nq = Qt.shape[1]
    chunk = -(-n // chunks)
    nqb = -(-nq // qblock)
    top = np.zeros((chunks, nq))
    total = np.zeros((chunks, nq))
    for task in prange(nqb * chunks):
        qb, c = task // chunks, task % chunks
        q0, q1 = qb * qblock, min(qb * qblock + qblock, nq)
        z0, z1 = c * chunk, min(c * chunk + chunk, n)
        e = np.empty(zblock, dtype=Zt.dtype)
        for q in range(q0, q1):
            m = 0.0
            t = 0.0
            for b in range(z0, z1, zblock):
                length = min(zblock, z1 - b)
                _squared_distances(e, Qt, q, Zt, b, length)
                block_top = float(_exponents(e, log_w, b, length))
                if b == z0:
                    m = block_top
                elif block_top > m:
                    t *= np.exp(m - block_top)
                    m = block_top
                t += _shifted_exp_sum(e, like(m, e), length)
            top[c, q] = m
            total[c, q] = t
    return top, total


def _points(Z: np.ndarray, Q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Data (n, d) and queries (m, d) as float64 (an empty Q has Z's d columns)."""
    Z = np.asarray(Z, dtype=np.float64)
    Z = Z.reshape(len(Z), -1)
    return Z, np.asarray(Q, dtype=np.float64).reshape(-1, Z.shape[1])


def _centred_pair(Z: np.ndarray, Q: np.ndarray, ftype) -> tuple[np.ndarray, np.ndarray]:
    """(d, n) data and (d, m) queries minus the data's float64 mean, in ftype."""
    centre = Z.mean(axis=0)
    return np.ascontiguousarray((Z - centre).T, dtype=ftype), np.ascontiguousarray((Q - centre).T, dtype=ftype)


@dataclass(frozen=True)
class CpuTiles:
    """Block sizes of the CPU backend.

    Parameters
    ----------
    tile_1d, tile_sq : int
        Tile sides (rows x columns per task) of the 1-D and the d-dimensional pair sums; at most
        ``MAX_TILES_PER_SIDE`` tiles along a side (bigger n gets bigger tiles).
    query_block, data_block : int
        Query points per task of the KDE sums, and data points per cache block.
    """

    tile_1d: int = 1024
    tile_sq: int = 256
    query_block: int = 64
    data_block: int = 512

    def __post_init__(self) -> None:
        for field, value in vars(self).items():
            if not (isinstance(value, int) and value >= 1):
                raise ValueError(f"CpuTiles.{field} must be a positive integer, got {value!r}")


class CpuBackend(KDEBackend):
    """The Numba backend: tiles of the pair triangle spread over all cores, SIMD inside.

    Parameters
    ----------
    tiles : CpuTiles, optional
        Block sizes (default: :class:`CpuTiles`' defaults).
    """

    name = "cpu"
    dtypes = (np.dtype(np.float64), np.dtype(np.float32))

    def __init__(self, tiles: CpuTiles | None = None) -> None:
        self.tiles = CpuTiles() if tiles is None else tiles

    def __repr__(self) -> str:
        return f"CpuBackend({self.tiles!r})"

    def linear_bin(self, X, spec: GridSpec, weights=None, *, dtype=None) -> BinCounts:
        """Linear binning by chunks of rows in parallel, each into its own grid, added at the end
        (:mod:`parzen.binned._numba_binning`); float64 whatever ``dtype``, equal to the
        reference to rounding.

        See :meth:`parzen.backends.KDEBackend.linear_bin` for the parameters.
        """
        values, w = binning_rows(X, spec, weights)
        counts, outside = linear_bin_counts(values, w, spec.lows, spec.highs, spec.sizes)
        if outside >= 0:
            raise outside_box_error(values, outside, spec)
        return BinCounts(spec, counts)

    def pair_sum_1d(self, x: np.ndarray, kind: str, scales: np.ndarray, *, dtype=None) -> np.ndarray:
        """For each scale g: sum_{i<j} phi^(r)((x_i - x_j) / g), kind = "gauss_d<r>" (r even, <= 8).

        Paper 000 (docs/statistics.md), eqs. 16 and 18; see :meth:`parzen.backends.reference.NumpyBackend.pair_sum_1d`.
        """
        order = derivative_order(kind)
        ftype = compute_type(dtype)
        xc = _centred(np.asarray(x, dtype=np.float64).reshape(-1, 1), ftype)[0]
        scales = np.atleast_1d(np.asarray(scales, dtype=np.float64))
        tiles, tile = _tiles(xc.size, self.tiles.tile_1d)
        partial = _hermite_pairs(xc, tiles, tile, (1.0 / scales).astype(ftype), _hermite_in_s(order).astype(ftype))
        return partial.sum(axis=0) / _SQRT_2PI

    def pair_sum_sq(self, Y: np.ndarray, kind: str, params: np.ndarray, *, dtype=None) -> np.ndarray:
        """(len(h), 2): sum_{i<j} exp(-s / 4h^2) and exp(-s / 2h^2), s = |y_i - y_j|^2 (kind "lscv").

        All scales h in one pass over the pairs: each pair's s is computed once (docs/departures.md, item 7);
        see :meth:`parzen.backends.reference.NumpyBackend.pair_sum_sq`.
        """
        if kind != "lscv":
            raise ValueError(f"unknown pair_sum_sq kind {kind!r}; the cpu backend knows 'lscv'")
        ftype = compute_type(dtype)
        Yt = _centred(np.asarray(Y, dtype=np.float64).reshape(len(Y), -1), ftype)
        h = np.atleast_1d(np.asarray(params, dtype=np.float64))
        tiles, tile = _tiles(Yt.shape[1], self.tiles.tile_sq)
        return _lscv_pairs(Yt, tiles, tile, (1.0 / (4.0 * h * h)).astype(ftype)).sum(axis=0)

    def pair_sum_hermite(self, Y: np.ndarray, alphas: np.ndarray, weights: np.ndarray | None = None, *, dtype=None) -> np.ndarray:
        """For each multi-index alpha: sum_{i<j} w_i w_j exp(-|u|^2/2) prod_k He_{alpha_k}(u_k), u = y_i - y_j.

        Tiles of the pair triangle spread over the cores; per row, the Hermite values of a block of
        columns are computed once by their recurrence and shared by every alpha; rows and tiles
        combined in float64.  See :meth:`parzen.backends.KDEBackend.pair_sum_hermite`.
        """
        Y, alphas = hermite_arguments(Y, alphas)
        ftype = compute_type(dtype)
        Yt = _centred(Y, ftype)
        w: np.ndarray = np.ones(len(Y), dtype=ftype) if weights is None else np.asarray(weights, dtype=ftype)
        tiles, tile = _tiles(Yt.shape[1], self.tiles.tile_sq)
        return _hermite_tensor_pairs(Yt, w, tiles, tile, alphas, int(alphas.max(initial=0))).sum(axis=0)

    def pair_sum_1d_between(self, x: np.ndarray, y: np.ndarray, kind: str, scales: np.ndarray, *, dtype=None) -> np.ndarray:
        """For each scale g: sum_i sum_j phi^(r)((x_i - y_j) / g) (r even, <= 8), tiles of the
        rectangle spread over the cores, both blocks centred on their common mean in float64;
        see :meth:`parzen.backends.KDEBackend.pair_sum_1d_between`."""
        order = derivative_order(kind)
        ftype = compute_type(dtype)
        x, y = np.asarray(x, dtype=np.float64).ravel(), np.asarray(y, dtype=np.float64).ravel()
        scales = np.atleast_1d(np.asarray(scales, dtype=np.float64))
        if not (x.size and y.size):
            return np.zeros(scales.size)
        centre = np.concatenate([x, y]).mean()
        tiles, tile = _rectangle_tiles(x.size, y.size, self.tiles.tile_1d)
        partial = _hermite_between(
            (x - centre).astype(ftype), (y - centre).astype(ftype), tiles, tile, (1.0 / scales).astype(ftype),
            _hermite_in_s(order).astype(ftype),
        )
        return partial.sum(axis=0) / _SQRT_2PI

    def pair_sum_sq_between(self, X: np.ndarray, Y: np.ndarray, kind: str, params: np.ndarray, *, dtype=None) -> np.ndarray:
        """(len(h), 2): sum exp(-s / 4h^2) and exp(-s / 2h^2) over every (x_i, y_j), tiles of the
        rectangle spread over the cores; see :meth:`parzen.backends.KDEBackend.pair_sum_sq_between`."""
        if kind != "lscv":
            raise ValueError(f"unknown pair_sum_sq kind {kind!r}; the cpu backend knows 'lscv'")
        ftype = compute_type(dtype)
        h = np.atleast_1d(np.asarray(params, dtype=np.float64))
        if not (len(X) and len(Y)):
            return np.zeros((h.size, 2))
        X, Y = _points(X, Y)
        Xt, Yt = _centred_pair(X, Y, ftype)
        tiles, tile = _rectangle_tiles(Xt.shape[1], Yt.shape[1], self.tiles.tile_sq)
        return _lscv_between(Xt, Yt, tiles, tile, (1.0 / (4.0 * h * h)).astype(ftype)).sum(axis=0)

    def kernel_sum(
        self, Z: np.ndarray, Q: np.ndarray, kind: str, weights: np.ndarray | None = None, *, dtype=None
    ) -> np.ndarray:
        """For each query q: sum_i w_i k(|q - z_i|^2), k the profile of kernel ``kind``.

        Tasks are (block of queries) x (chunk of data) so that a few queries over many data points
        still use every core; see :meth:`parzen.backends.reference.NumpyBackend.kernel_sum`.
        """
        if kind not in KERNELS:
            raise ValueError(f"unknown kernel {kind!r}; choose one of {', '.join(map(repr, KERNELS))}")
        ftype = compute_type(dtype)
        Z, Q = _points(Z, Q)
        if Q.shape[0] == 0:
            return np.zeros(0)
        Zt, Qt = _centred_pair(Z, Q, ftype)
        w: np.ndarray = np.ones(Z.shape[0], dtype=ftype) if weights is None else np.asarray(weights, dtype=ftype)
        chunks = self._data_chunks(Z.shape[0], Q.shape[0])
        return _kernel_sums(Zt, Qt, w, PROFILE_CODES[kind], chunks, self.tiles.query_block, self.tiles.data_block).sum(axis=0)

    def log_kernel_sum(
        self, Z: np.ndarray, Q: np.ndarray, kind: str, weights: np.ndarray | None = None, *, dtype=None
    ) -> np.ndarray:
        """For each query q: log sum_i w_i k(|q - z_i|^2), k the profile of kernel ``kind``.

        Gaussian: log-sum-exp of e_i = log w_i - s_i / 2, each task keeping a running maximum over
        its blocks of data, the tasks' parts combined in float64
        (:func:`parzen.backends._log_sums.log_sum_exp_of_parts`); finite wherever a weight is positive.
        Compactly supported kernels: the log of :meth:`kernel_sum` (see
        :func:`parzen.backends._log_sums.log_of_kernel_sum`).  See :meth:`parzen.backends.reference.NumpyBackend.log_kernel_sum`.
        """
        if kind not in KERNELS:
            raise ValueError(f"unknown kernel {kind!r}; choose one of {', '.join(map(repr, KERNELS))}")
        if kind != "gaussian":
            return log_of_kernel_sum(self.kernel_sum, Z, Q, kind, weights, dtype=dtype)
        ftype = compute_type(dtype)
        Z, Q = _points(Z, Q)
        if weights is not None:  # zero weights add no term; the others have finite logs
            weights = np.asarray(weights, dtype=np.float64)
            Z, weights = Z[weights > 0], weights[weights > 0]
        if Q.shape[0] == 0 or Z.shape[0] == 0:
            return np.full(Q.shape[0], -np.inf)
        Zt, Qt = _centred_pair(Z, Q, ftype)
        log_w = np.zeros(Z.shape[0], dtype=ftype) if weights is None else np.log(weights).astype(ftype)
        chunks = self._data_chunks(Z.shape[0], Q.shape[0])
        top, total = _gaussian_log_sums(Zt, Qt, log_w, chunks, self.tiles.query_block, self.tiles.data_block)
        return log_sum_exp_of_parts(top, total)

    def _data_chunks(self, n: int, m: int) -> int:
        """Chunks of data per block of queries: at least 4 tasks per thread, chunks of >= data_block points."""
        query_blocks = -(-m // self.tiles.query_block)
        wanted = -(-4 * numba.get_num_threads() // query_blocks)
        return int(max(1, min(wanted, -(-n // self.tiles.data_block))))
