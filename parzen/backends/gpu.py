"""The GPU backend: Triton kernels (:mod:`._triton_kernels`) on PyTorch device memory.

:class:`GpuBackend` computes the primitives of :class:`parzen.backends.KDEBackend` as the
"GPU implementation" of Andrzejewski et al. (paper 000 in docs/statistics.md, sections 5.4-6.2)
and the GPU KDE of Michailidis & Margaritis (paper 001 there) do:

- the pair sums over i < j cover the upper triangle with square tiles; each pair's squared
  distance is computed once, in registers, and reused for every scale (docs/departures.md, item 7);
- arithmetic in float32 by default (``dtype=np.float64`` on request), each program's partial
  sum converted to float64 and the partials added in float64 on the device;
- data larger than one chunk (``GpuTiles.chunk_rows`` rows) are streamed: the pair sums of two
  chunks are an independent rectangle of the triangle, so only two chunks are on the device
  at a time and the sum over chunk pairs is exact;
- data are centred in float64 before any cast.

Without a CUDA GPU the module imports only under ``TRITON_INTERPRET=1``, where Triton runs the
same kernels on the CPU (slowly; CI uses that for correctness).  Install with
``pip install 'parzen[gpu]'`` (PyTorch and Triton).

The module holds the launch code (the Triton kernels are stateless); everything that lives
across calls (the CUDA graphs of repeated chains, the device buffers of whitened data, the
constants of each Hermite sum) belongs to a :class:`GpuBackend` instance and goes with
:meth:`GpuBackend.close`.  The sparse-grid operators are in :mod:`parzen.backends.sparse_grid_gpu`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from .._validate import power_of_two
from ..binned.grid import BinCounts, GridSpec, outside_box_error
from ..kernels import gauss_derivative_even_coefficients
from . import _gram_operands as operands
from . import _triton_kernels as kernels
from ._cuda import DEVICE, INTERPRETED, torch, torch_dtype, triton
from ._gpu_stream import chunk_rows, device_chunks
from ._log_sums import log_of_kernel_sum, log_sum_exp_of_parts
from ._triton_binning import NO_BAD_ROW, linear_bin_kernel
from .base import ColumnSummary, KDEBackend, PairSums1D, check_kernel, hermite_arguments
from .reference import derivative_order

#: Host arrays from this size on go to the device through page-locked memory (see _to_device).
PINNED_BYTES = 1 << 20
#: Data of at most this many rows replay their repeated device work as CUDA graphs; beyond it the
#: kernels' time dwarfs the host's (some 20 us per PyTorch operation on the H100 host).
GRAPH_MAX_ROWS = 1 << 15
#: Programs the many-scale LSCV sum asks for at least (more column groups per row block when n
#: is small).  H100, n = 1024, d = 16, tile 16: 150 h in 0.22 ms with 640 programs, 0.15 ms with
#: 1280; 15 h in 0.23 ms with 64, 0.09 ms with 512 or 1024 (host rows to host sums).
MIN_PROGRAMS = 1024
#: Warps per program; LSCV sums of one scale (LSCV_H) ran faster with fewer (H100: g(H) for
#: n = 16384, d = 16 took 0.75 ms with 4 warps, 1.7 ms with 8).
NUM_WARPS, SINGLE_SCALE_WARPS, HERMITE_WARPS = 8, 4, 4
#: float32 exponentials as one ``ex2.approx.ftz`` instruction (not under the interpreter).
FAST_EXP2 = not INTERPRETED
#: The Gram-form Gaussian KDE sums' launch by the padded coordinate count: (dot precision,
#: warps, pipeline stages).  "ieee" (float32 multiply-adds) for 16 coordinates, "tf32x3" (three
#: TF32 tensor-core products of the operands' high and low parts) from 32 on.  H100, n = 2^20,
#: m = 131072 (benchmarks/results/gpu_kde_multivariate_sweep.md): d = 16 ieee 128 ms, tf32x3
#: 137 ms; d = 32 ieee 285 ms, tf32x3 205 ms; one TF32 product (79 and 121 ms) errs by 1e-1.
GRAM_LAUNCH = MappingProxyType({16: ("ieee", 4, 3)})
GRAM_WIDE_LAUNCH = ("tf32x3", 8, 3)
#: The former Gram-form log-sum-exp's launch (queries beyond the tensor-core operands' reach, and
#: data the tensor-core form does not cover): float32 multiply-adds, whose errors (2.4e-5 of the
#: density at n = 2^20, d = 16) the log carries as absolute errors; with "tf32x3" at d = 17 a
#: test's log densities near the data missed the reference by more than 1e-5.
GRAM_LOG_LAUNCH = ("ieee", 4, 3)
#: The tensor-core Gram form of the float32 Gaussian KDE sums (``gaussian_gram_tc_sum_kernel`` on
#: the float16 operands of :mod:`parzen.backends._gram_operands`; weights of any sign, up to 64
#: coordinate rows, data within the operands' reach): by coordinate rows, the launch (query
#: block, data block, warps, pipeline stages).  H100, n = 2^20, m = 131072, d = 16: 128 x 64 with 8
#: warps 65.6 ms, 4 stages 67.1, 256 x 64 with 16 warps 79.6, with 8 warps 81.3; d = 32: 256 x 64
#: with 16 warps 112 ms, 128 x 64 with 8 warps 127 (benchmarks/results/gpu_kde_multivariate.md);
#: d = 64: 128 x 64 with 8 warps and 2 stages 267 ms, 64 x 64 with 4 warps 340 ms, with 8 warps 806
#: ms, 256 x 64 out of shared memory; the former tf32x3 kernel 445 ms, erring 1.6e-5 against 1.6e-6;
#: the compact operands of small d (benchmarks/gpu_gram_tc_sweep.py, equal weights, 128 x 64): 8 warps
#: 41.2, 49.8, 57.3, 66.7, 75.9 ms at d = 2, 4, 8, 16, 24, 4 warps 42.6, 50.5, 49.3, 72.8, 92.0 (with
#: weights loaded, 64 x 64 and 256 x 64 blocks were slower at d = 2-8).
GRAM_TC_LAUNCH = MappingProxyType(
    {4: (128, 64, 8, 3), 8: (128, 64, 4, 3), 16: (128, 64, 8, 3), 24: (128, 64, 8, 3), 32: (256, 64, 16, 3), 64: (128, 64, 8, 2)}
)
#: How far (scaled units, where the kernel is 2^-|q - z|^2) beyond the data's largest norm the
#: tensor-core operands reach: a query farther out has every term below 2^-256, 0 in float32.
QUERY_REACH = 16.0
#: 2^-t is exactly 0 in float32 and float64 beyond this t; P(t) is clamped there.
T_ZERO = 2000.0
_LOG2E = 1.0 / math.log(2.0)
_NUMPY_TYPE = MappingProxyType({torch.float32: np.float32, torch.float64: np.float64})
_MAX_ORDER = 8
#: The most copies of a grid that the binning programs add into (program p into copy p mod copies).
MAX_REPLICAS = 512
#: CUDA graphs of PairSums1D chains kept per backend, and sets of whitened-data buffers.
_GRAPHS_KEPT, _WHITENED_KEPT = 8, 4


def _power_of_two(value) -> bool:
    return isinstance(value, int) and value >= 1 and value & (value - 1) == 0


@dataclass(frozen=True)
class GpuTiles:
    """Tile and block sizes of the GPU backend (the defaults are the tuned ones; under the Triton
    interpreter smaller tiles, so that its Python-speed kernels stay quick).

    Parameters
    ----------
    tile_1d, tile_sq : int
        Tile sides (rows = columns) of the 1-D pair sums and of the many-scale LSCV sums.
        LSCV over many scales (H100, 150 h, d = 16, tile / warps / groups / scales per pass):
        16 / 8 / 1 / 16 took 0.093, 8.8 and 138 ms at n = 1024, 16384 and 65536; the former
        32 / 8 / 64 / 8 took 0.50, 22 and 220 ms (small tiles: more programs to hide latency).
        PLUGIN (both stages, repeated calls) with 1-D tiles of 64 against 32: n = 2^20 402
        against 469 ms, n = 32768 0.89-1.00 against 0.94-0.95 ms (two runs).
    tile_hermite : int
        Tile side of the Hermite-product pair sums (``pair_sum_hermite``: the multivariate plug-in
        and SCV functionals).
    tile_gram : int
        Tile side of the one-scale LSCV kernel (the Gram form; H100, g(H) at n = 16384, d = 16:
        64 with 4 warps 0.22 ms, 32 0.28 ms, 128 0.26 ms with 8 warps).
    query_block, data_block : int
        Queries x data points per block of the KDE sums.
    gram_query_block, gram_data_block : int
        Queries x data points per block of the Gram-form Gaussian KDE sums (float32, d >=
        ``gram_min_dim``), whose squared distances come from one matrix product per block.
    tc_min_dim : int
        The fewest coordinates for which float32 Gaussian KDE sums take the tensor-core Gram form
        (:mod:`parzen.backends._gram_operands`; its columns shrink with d, 32 at d = 2).
    gram_min_dim : int
        The fewest coordinates for which float32 Gaussian KDE sums take the former Gram form (the
        products padded to 16 coordinates cost more than the direct differences below it; H100,
        n = 2^20, m = 131072: direct 46, 75, 214 ms at d = 2, 4, 8, Gram 129 ms for each).
    whiten_block : int
        Points per program of the whitening kernel (LSCV_H's y = M^-1 z).
    chunk_rows : int
        Rows of data held on the device at once; bigger data are streamed chunk pair by chunk pair.
    resident_bytes : int
        The most device memory that the data of a prepared KDE sum (:meth:`GpuBackend.prepare_kernel_sum`,
        which a fitted ``KDE`` keeps) may hold between calls; larger data are sent at each call.
    stream_bytes : int
        Bytes of one array's chunk when host rows are streamed through the device in one pass
        (linear binning, column summaries; :mod:`parzen.backends._gpu_stream`).
    bin_block : int
        Rows per program of the linear-binning kernel.
    replica_bytes : int
        The most memory the copies of the grid that the binning programs add into may take
        (one copy per program up to :data:`MAX_REPLICAS`; fewer for large grids).
    scales_per_pass : int
        Scales of one LSCV pass over a tile: each needs 2 accumulator tiles in registers.
    groups_1d, groups_sq, groups_gram : int
        Column groups per row block: bounds the partial sums.  H100, PLUGIN's psi6 sum at
        n = 32768: 16 groups 0.66 ms, 256 groups 0.90 ms (4 warps); LSCV over many scales: one
        program per row block and scale batch was fastest (above).

    Raises
    ------
    ValueError
        If a tile, block or scale count is not a power of two, or a count is below 1.
    """

    tile_1d: int = 16 if INTERPRETED else 64
    tile_sq: int = 16
    tile_gram: int = 16 if INTERPRETED else 64
    tile_hermite: int = 16 if INTERPRETED else 32
    query_block: int = 16 if INTERPRETED else 64
    data_block: int = 16 if INTERPRETED else 64
    gram_query_block: int = 16 if INTERPRETED else 128
    gram_data_block: int = 16 if INTERPRETED else 64
    tc_min_dim: int = 2
    gram_min_dim: int = 6
    whiten_block: int = 16 if INTERPRETED else 128
    chunk_rows: int = 1 << 24
    resident_bytes: int = 1 << 32
    stream_bytes: int = 1 << 26
    bin_block: int = 128 if INTERPRETED else 1024
    replica_bytes: int = 1 << 26
    scales_per_pass: int = 16
    groups_1d: int = 16
    groups_sq: int = 1
    groups_gram: int = 32

    def __post_init__(self) -> None:
        for field, value in vars(self).items():
            counts = field.startswith("groups") or field in (
                "chunk_rows", "resident_bytes", "stream_bytes", "replica_bytes", "gram_min_dim", "tc_min_dim"
            )
            if not (isinstance(value, int) and value >= 1 if counts else _power_of_two(value)):
                kind = "a positive integer" if counts else "a power of two"
                raise ValueError(f"GpuTiles.{field} must be {kind}, got {value!r}")


def _fast(fdtype) -> bool:
    return FAST_EXP2 and fdtype == torch.float32


def _chunks(n: int, chunk_rows: int) -> list[slice]:
    return [slice(start, min(start + chunk_rows, n)) for start in range(0, n, chunk_rows)]


def _chunk_pairs(n: int, chunk_rows: int) -> Iterator[tuple[slice, slice, bool]]:
    """The chunk pairs (a, b), a <= b, whose pairs i < j make up the whole triangle."""
    chunks = _chunks(n, chunk_rows)
    for a, rows in enumerate(chunks):
        for cols in chunks[a:]:
            yield rows, cols, rows == cols


def _to_device(values: np.ndarray, fdtype) -> torch.Tensor:
    """``values`` as a device tensor of type ``fdtype``, cast on the host.  Arrays of
    :data:`PINNED_BYTES` or more are copied from page-locked memory (PyTorch's caching host
    allocator), so the copy neither stages through the driver nor makes the host wait (H100
    host: a pageable 512 kB copy took 0.28 ms); below that, pinning (70 us) costs more."""
    host = torch.from_numpy(np.ascontiguousarray(values, dtype=_NUMPY_TYPE[fdtype]))
    if INTERPRETED:
        return host.clone()
    if host.nbytes < PINNED_BYTES:
        return host.to(DEVICE)
    return host.pin_memory().to(DEVICE, non_blocking=True)


def _to_host(values: torch.Tensor) -> np.ndarray:
    """A device tensor as a NumPy array (one wait), through page-locked memory from
    :data:`PINNED_BYTES` on, as :func:`_to_device`."""
    if INTERPRETED or values.nbytes < PINNED_BYTES:
        return values.cpu().numpy()
    host = torch.empty(values.shape, dtype=values.dtype, pin_memory=True)
    host.copy_(values, non_blocking=True)
    torch.cuda.current_stream(DEVICE).synchronize()
    return host.numpy()


def _padded(values: np.ndarray, tile: int, edge: float, step: float, fdtype, dims: int | None = None) -> torch.Tensor:
    """(dims, n_padded) device tensor: ``values`` (n, d) plus rows placed far from every point.

    Pad k has first coordinate ``edge + (k + 1) step`` and 0 elsewhere; ``step`` is chosen
    by the caller so that any pair with a pad has a term of exactly 0, and ``edge`` lies
    beyond all data (below it, with a negative step, for the columns of a rectangle).
    Coordinates d..dims-1 (``dims`` >= d, default d) are 0: they change no distance.
    """
    n, d = values.shape
    n_padded = triton.cdiv(max(n, 1), tile) * tile
    out = np.zeros((dims or d, n_padded))
    out[:d, :n] = values.T
    out[0, n:] = edge + step * np.arange(1, n_padded - n + 1)
    return _to_device(out, fdtype)


def _pair_sums(
    values: np.ndarray, launch, spacing: float, tile: int, chunk_rows: int, fdtype, dims: int | None = None
) -> torch.Tensor:
    """Sum of ``launch(rows, cols, triangle)`` over every chunk pair (``chunk_rows`` rows each),
    on the device.

    ``values`` (n, d) is centred; ``spacing`` is the pad step that zeroes pad terms; ``dims``
    as in :func:`_padded`.
    """
    top, bottom = float(values[:, 0].max()), float(values[:, 0].min())
    total = None
    for rows, cols, triangle in _chunk_pairs(values.shape[0], chunk_rows):
        row_tensor = _padded(values[rows], tile, top + spacing, spacing, fdtype, dims)
        col_tensor = row_tensor if triangle else _padded(values[cols], tile, bottom - spacing, -spacing, fdtype, dims)
        partial = launch(row_tensor, col_tensor, triangle)
        total = partial if total is None else total + partial
    if total is None:  # n = 0: the max above has already raised
        raise ValueError("pair sums over no data points")
    return total


def _rectangle_sums(
    rows_values: np.ndarray, cols_values: np.ndarray, launch, spacing: float, tile: int, chunk_rows: int, fdtype,
    dims: int | None = None,
) -> torch.Tensor:
    """Sum of ``launch(rows, cols, False)`` over every chunk of ``rows_values`` (n, d) against every
    chunk of ``cols_values`` (m, d): the rectangle of pairs between two blocks, on the device.

    Both are centred on a common point; pads are spaced as in :func:`_pair_sums` (rows' beyond the
    largest first coordinate of both, columns' below the smallest), so their terms are 0.
    """
    both = np.concatenate([rows_values[:, 0], cols_values[:, 0]])
    top, bottom = float(both.max()), float(both.min())
    total = torch.zeros((), dtype=torch.float64, device=DEVICE)
    for rows in _chunks(rows_values.shape[0], chunk_rows):
        row_tensor = _padded(rows_values[rows], tile, top + spacing, spacing, fdtype, dims)
        for cols in _chunks(cols_values.shape[0], chunk_rows):
            total = total + launch(row_tensor, _padded(cols_values[cols], tile, bottom - spacing, -spacing, fdtype, dims), False)
    return total


def _grid(n_rows_padded: int, n_cols_padded: int, tile: int, groups_per_row: int) -> tuple[int, int, int]:
    """(row blocks, column groups, column blocks per group) for one chunk pair."""
    row_blocks, col_blocks = n_rows_padded // tile, n_cols_padded // tile
    group = triton.cdiv(col_blocks, min(col_blocks, groups_per_row))
    return row_blocks, triton.cdiv(col_blocks, group), group


#: 2^-t is exactly 0 in float32 beyond t = 150 and in float64 beyond t = 1075 (below the
#: smallest sub-normal number, rounded to nearest): pairs that far apart add exactly nothing.
_T_UNDERFLOW = MappingProxyType({torch.float32: 151.0, torch.float64: 1076.0})


def _reachable_column_blocks(rows: torch.Tensor, cols: torch.Tensor, triangle: bool, reach: float, tile: int,
                             *, sorted_data: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """int32 per row block: the first and the end of the column blocks holding a point within ``reach``.

    For the triangle of sorted 1-D data (pads sort last) the column blocks bj >= bi whose
    smallest point exceeds the row block's largest by more than ``reach`` are skipped: their
    terms underflow to exactly 0, so the sum is unchanged.  A rectangle of sorted rows and sorted
    columns (``sorted_data``) skips the column blocks below the band too, those whose largest
    point is more than ``reach`` below the row block's smallest; other rectangles keep every
    column block.
    """
    row_blocks, n_col_blocks = rows.shape[1] // tile, cols.shape[1] // tile
    if triangle:
        start = torch.arange(row_blocks, dtype=torch.int32, device=DEVICE)
    elif sorted_data:
        col_largest, row_smallest = cols[0, tile - 1 :: tile].contiguous(), rows[0, ::tile].contiguous()
        start = torch.searchsorted(col_largest, row_smallest - reach, out_int32=True)
    else:
        start = torch.zeros(row_blocks, dtype=torch.int32, device=DEVICE)
        return start, torch.full((row_blocks,), n_col_blocks, dtype=torch.int32, device=DEVICE)
    smallest, largest = cols[0, ::tile].contiguous(), rows[0, tile - 1 :: tile].contiguous()
    return start, torch.searchsorted(smallest, largest + reach, right=True).to(torch.int32)


class _SortedData1D:
    """n points on the device, centred and sorted in float64 (sorting float32 values, 4 radix
    passes instead of 8, rounded twice: 1.02e-5 off a float32 sum at n = 1025), padded to
    whole tiles with copies of the largest (the kernel masks them by index), and each row
    block's smallest and largest value."""

    def __init__(self, n: int, fdtype, backend: GpuBackend) -> None:
        self.n, self.fdtype, self.backend = n, fdtype, backend
        self.tile = tile = backend.tiles.tile_1d
        n_padded = triton.cdiv(max(n, 1), tile) * tile
        self.raw = torch.empty(n_padded, dtype=torch.float64, device=DEVICE)
        self.rows = torch.empty((1, n_padded), dtype=fdtype, device=DEVICE)
        self.first_blocks = torch.arange(n_padded // tile, dtype=torch.int32, device=DEVICE)  # the triangle's band starts

    def load(self, values: torch.Tensor) -> None:
        """Centre and sort ``values`` ((n,) float64 on the device) into place."""
        n = self.n
        self.raw[:n] = torch.sort(values - values.mean()).values  # float64: rescaled before one rounding
        self.raw[n:] = self.raw[n - 1]
        self.smallest = self.raw[:: self.tile].contiguous()
        self.largest = self.raw[self.tile - 1 :: self.tile].contiguous()

    def pair_sum(self, kind: str, g):
        """sum_{i<j} phi^(r)((x_i - x_j) / g) as a float64 device number; g a float or one."""
        hermite = self.backend._hermite_sum(kind, self.fdtype)
        unit = hermite.unit(g)  # a device number when g is one
        torch.mul(self.raw, unit, out=self.rows[0])
        col_end = torch.searchsorted(self.smallest, self.largest + hermite.reach / unit, right=True, out_int32=True)
        return hermite.launch(self.rows, self.rows, True, (self.first_blocks, col_end), self.n) / math.sqrt(2.0 * math.pi)


class _DevicePairSums1D(PairSums1D):
    """x on the GPU; ``sum`` loads it on first use, :meth:`evaluate` replays graphs."""

    def __init__(self, x: np.ndarray, fdtype, backend: GpuBackend) -> None:
        self.x, self.fdtype, self.backend = x, fdtype, backend
        self._data: _SortedData1D | None = None
        super().__init__(self._sum)

    def _sum(self, kind: str, g):
        if self._data is None:
            self._data = _SortedData1D(self.x.size, self.fdtype, self.backend)
            self._data.load(_to_device(self.x, torch.float64))
        return self._data.pair_sum(kind, g)

    def evaluate(self, chain, *args) -> tuple[float, ...]:
        """The chain's numbers, fetched together; integer arguments are part of a graph's key,
        float arguments are its inputs."""
        if not INTERPRETED and self.x.size <= GRAPH_MAX_ROWS:
            graphs = self.backend._graphs
            key = (chain, self.x.size, self.fdtype, tuple(a if isinstance(a, int) else None for a in args))
            state = graphs.get(key, False)
            if state is True:  # seen once (its kernels compiled): capture now
                try:
                    state = _Replay(chain, self.x.size, self.fdtype, args, self.backend)
                except RuntimeError:  # something in the chain cannot be captured: stay eager
                    state = None
                    torch.cuda.synchronize(DEVICE)
                _remember(graphs, key, state)
            elif state is False:
                _remember(graphs, key, True)
            if isinstance(state, _Replay):
                return state(self.x, args)
        return _fetch(*chain(self.sum, *args))


def _remember(graphs: dict, key, value) -> None:
    """graphs[key] = value, most recent last, at most ``_GRAPHS_KEPT`` kept."""
    graphs.pop(key, None)
    while len(graphs) >= _GRAPHS_KEPT:
        graphs.pop(next(iter(graphs)))
    graphs[key] = value


def _fetch(*values) -> tuple[float, ...]:
    """Numbers, some of them 0-d device tensors, as floats: one transfer for all of them."""
    out = list(values)
    on_device = [k for k, v in enumerate(values) if isinstance(v, torch.Tensor)]
    if on_device:
        fetched = _to_host(torch.stack([values[k].to(torch.float64) for k in on_device]))
        for k, value in zip(on_device, fetched):
            out[k] = value
    return tuple(float(v) for v in out)


class _Replay:
    """A chain over n sorted points captured as one CUDA graph, with its inputs (x, the float
    arguments) in fixed buffers that each call overwrites (x through page-locked memory)."""

    def __init__(self, chain, n: int, fdtype, args, backend: GpuBackend) -> None:
        self.host_x = torch.empty(n, dtype=torch.float64, pin_memory=True)
        self.x = torch.zeros(n, dtype=torch.float64, device=DEVICE)
        self.floats = torch.ones(sum(not isinstance(a, int) for a in args), dtype=torch.float64, device=DEVICE)
        data = _SortedData1D(n, fdtype, backend)
        inputs = self._inputs(args)

        def body():
            data.load(self.x)
            return torch.stack([torch.as_tensor(v, dtype=torch.float64, device=DEVICE) for v in chain(data.pair_sum, *inputs)])

        self.graph, self.out = _captured(body)

    def _inputs(self, args) -> list:
        """``args`` with each float replaced by its slot of the graph's input buffer."""
        slots = iter(range(self.floats.numel()))
        return [a if isinstance(a, int) else self.floats[next(slots)] for a in args]

    def __call__(self, x: np.ndarray, args) -> tuple[float, ...]:
        self.host_x.numpy()[:] = x  # the previous call has waited for its copy
        self.x.copy_(self.host_x, non_blocking=True)
        self.floats.copy_(torch.tensor([float(a) for a in args if not isinstance(a, int)], dtype=torch.float64))
        self.graph.replay()
        return tuple(float(v) for v in _to_host(self.out))


class _HermiteSum:
    """The launch of one 1-D pair sum of phi^(r) (kind "gauss_d<r>") in compute type ``fdtype``."""

    def __init__(self, kind: str, fdtype, tiles: GpuTiles) -> None:
        order = derivative_order(kind)
        if order % 2 or order > _MAX_ORDER:
            raise ValueError(f"the gpu backend sums phi^(r) for even r in 0..{_MAX_ORDER}, got r = {order}")
        self.order, self.fdtype, self.tiles = order, fdtype, tiles
        self.kappa = 0.5 * _LOG2E
        coef = np.zeros(5)
        coef[: order // 2 + 1] = gauss_derivative_even_coefficients(order) / self.kappa ** np.arange(order // 2 + 1)
        self.constants = torch.tensor([*coef, T_ZERO], dtype=fdtype, device=DEVICE)
        self.reach = math.sqrt(_T_UNDERFLOW[fdtype])
        self.spacing = math.sqrt(T_ZERO)  # pads this far apart have terms of exactly 0

    def unit(self, g: float) -> float:
        """The factor that puts x in units of g / sqrt(kappa), so that t is a squared difference."""
        return math.sqrt(self.kappa) / g

    def launch(self, rows: torch.Tensor, cols: torch.Tensor, triangle: bool, band=None, n_cols=None, *,
               sorted_data: bool = False) -> torch.Tensor:
        """The sum over one chunk pair (sorted rows for the triangle), as a float64 device scalar.

        ``band``: (first, end) of the reachable column blocks per row block, if the caller knows
        them (else :func:`_reachable_column_blocks`, with ``sorted_data`` when the rows and columns
        of a rectangle are both sorted); ``n_cols``: columns from this one on are pads whose terms
        the kernel masks (default: none are; the caller spaced them apart).
        """
        tile = self.tiles.tile_1d
        if band is None:
            band = _reachable_column_blocks(rows, cols, triangle, self.reach, tile, sorted_data=sorted_data)
        row_blocks, n_groups, group = _grid(rows.shape[1], cols.shape[1], tile, self.tiles.groups_1d)
        partial = torch.empty((row_blocks, n_groups), dtype=torch.float64, device=DEVICE)  # every program writes
        kernels.hermite_pairs_kernel[(row_blocks, n_groups)](
            rows, cols, band[0], band[1], cols.shape[1] if n_cols is None else n_cols, self.constants, partial,
            TRIANGLE=triangle, DEGREE=self.order // 2, BLOCK=tile, GROUP=group, FAST=_fast(self.fdtype),
            num_warps=HERMITE_WARPS,
        )
        return partial.sum()


#: Calls of one (scales, whitening) launch on one set of buffers before it is captured as a CUDA
#: graph: LSCV_H's loop captures at once; a single LSCV_h selection (one grid pass, two
#: refinement passes) does not, the second on data of the same size does.
GRAPH_AFTER_CALLS = 2


class _WhitenedData:
    """Centred rows on the device (d x n_padded float64, pad columns 0), their whitened copy
    y = M^-1 z in the compute type, M^-1, the scales of each parameter count, and the CUDA
    graphs of the launches.  The sums mask the pad columns by index (they are 0 here)."""

    def __init__(self, n: int, d: int, fdtype, tiles: GpuTiles) -> None:
        self.n, self.d, self.fdtype, self.tiles = n, d, fdtype, tiles
        self.n_padded = triton.cdiv(max(n, 1), _lscv_tile(fdtype, tiles)) * _lscv_tile(fdtype, tiles)
        self.z = torch.zeros((d, self.n_padded), dtype=torch.float64, device=DEVICE)
        self.y = torch.zeros((_lscv_dims(d, fdtype), self.n_padded), dtype=fdtype, device=DEVICE)
        # M^-1 goes up through page-locked memory without a host wait (each call ends synchronised)
        self.m_host = torch.empty((d, d), dtype=torch.float64, pin_memory=not INTERPRETED)
        self.m = torch.empty((d, d), dtype=torch.float64, device=DEVICE)
        self.scales: dict[int, _LscvScales] = {}
        self.graphs: dict[tuple[int, bool], list] = {}
        self.owner = None
        self.M: np.ndarray | None = None

    def load(self, centred: np.ndarray, owner) -> None:
        self.z[:, : self.n] = _to_device(centred.T, torch.float64)
        self.owner, self.M = owner, None

    def sums(self, M: np.ndarray, h: np.ndarray) -> np.ndarray:
        scales = self.scales.get(h.size)
        if scales is None:
            scales = self.scales[h.size] = _LscvScales(h.size, self.fdtype, self.tiles)
        if scales.h is None or not np.array_equal(h, scales.h):
            scales.set(h)
        whiten = self.M is None or not np.array_equal(M, self.M)
        if whiten:
            self.m_host.numpy()[...] = np.linalg.inv(M)
            self.m.copy_(self.m_host, non_blocking=True)
            self.M = M.copy()
        return self._run((h.size, whiten), lambda: self._launch(scales, whiten)).cpu().numpy()

    def _launch(self, scales: _LscvScales, whiten: bool) -> torch.Tensor:
        if whiten:
            block = self.tiles.whiten_block
            kernels.whiten_kernel[(triton.cdiv(self.n_padded, block),)](
                self.z, self.m, self.y, self.n_padded,
                D=self.d, D_POW2=max(2, triton.next_power_of_2(self.d)), BLOCK=block,
            )
        return scales.launch(self.y, self.y, True, self.d, n_cols=self.n)

    def _run(self, key, launch) -> torch.Tensor:
        """``launch()``, or the replay of its CUDA graph once ``key`` has had its eager calls."""
        state = self.graphs.setdefault(key, [0, None, None])  # calls, graph, its output
        state[0] += 1
        if INTERPRETED or state[0] <= GRAPH_AFTER_CALLS or self.n > GRAPH_MAX_ROWS:
            return launch()
        if state[1] is None:
            try:
                state[1], state[2] = _captured(launch)
            except RuntimeError:  # not capturable here: stay eager
                state[0] = -math.inf
                torch.cuda.synchronize(DEVICE)
                return launch()
        state[1].replay()
        return state[2]


def _captured(body) -> tuple:
    """(CUDA graph of ``body()``'s device work, its output); buffers that ``body`` reads are the
    graph's inputs.  ``body`` has run eagerly before (its kernels are compiled), which is the
    warm-up PyTorch's recipe asks for."""
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = body()
    return graph, out


def _lscv_dims(d: int, fdtype) -> int:
    """Coordinate rows of the LSCV data: in float32 a multiple of 16, for the one-scale kernel's
    matrix products (the added coordinates are 0; the many-scale kernel reads the first d)."""
    return 16 * triton.cdiv(d, 16) if fdtype == torch.float32 else d


def _lscv_tile(fdtype, tiles: GpuTiles) -> int:
    """Row padding of the LSCV data: a multiple of the tiles of both LSCV kernels."""
    return max(tiles.tile_sq, tiles.tile_gram) if fdtype == torch.float32 else tiles.tile_sq


def _check_sq_kind(kind: str) -> None:
    if kind != "lscv":
        raise ValueError(f"unknown pair_sum_sq kind {kind!r}; the gpu backend knows 'lscv'")


class _LscvScales:
    """``count`` scales of LSCV pair sums on the device, and the launch of their kernel.

    exp(-s / 4h^2) = 2^(-a s) with a = log2(e) / 4h^2, and its square is exp(-s / 2h^2);
    ``a`` is padded to a multiple of the kernel's scale batch (the padding's sums are not read)
    and lives in one device buffer that :meth:`set` overwrites (a graph's input).
    """

    def __init__(self, count: int, fdtype, tiles: GpuTiles) -> None:
        self.count, self.tiles = count, tiles
        self.batch = min(tiles.scales_per_pass, triton.next_power_of_2(count))
        padded = triton.cdiv(count, self.batch) * self.batch
        self.a = torch.empty(padded, dtype=fdtype, device=DEVICE)
        self.a_host = torch.empty(padded, dtype=fdtype, pin_memory=not INTERPRETED)
        self.h: np.ndarray | None = None
        self.spacing = math.inf

    def set(self, h: np.ndarray) -> None:
        """New scales (as many); the copy goes up without a host wait (each call ends synchronised)."""
        a = _LOG2E / (4.0 * h * h)
        self.a_host.numpy()[:] = np.r_[a, np.full(self.a.numel() - a.size, a[-1])]
        self.a.copy_(self.a_host, non_blocking=True)
        self.h = h.copy()
        #: Pad step that puts every pad beyond the reach of the widest scale (spaced pads).
        self.spacing = math.sqrt(T_ZERO / a.min())

    def launch(self, rows: torch.Tensor, cols: torch.Tensor, triangle: bool, d: int, n_cols=None) -> torch.Tensor:
        """(count, 2) float64 device sums over the pairs of one chunk pair ((dims, n_padded) data
        of d coordinates): one scale in float32 by the Gram-form kernel, else the many-scale one.
        Columns from ``n_cols`` on are masked pads (default: none; the caller spaced them)."""
        n_cols = cols.shape[1] if n_cols is None else n_cols
        tiles = self.tiles
        if self.count == 1 and self.a.dtype == torch.float32:
            row_blocks, n_groups, group = _grid(rows.shape[1], cols.shape[1], tiles.tile_gram, tiles.groups_gram)
            partial = torch.empty((row_blocks * n_groups, 1, 2), dtype=torch.float64, device=DEVICE)
            kernels.lscv_one_scale_kernel[(row_blocks, n_groups)](
                rows, cols, rows.shape[1], cols.shape[1], cols.shape[1] // tiles.tile_gram, n_cols, self.a, partial,
                DIM=rows.shape[0], TRIANGLE=triangle, BLOCK=tiles.tile_gram, GROUP=group, FAST=_fast(self.a.dtype),
                num_warps=SINGLE_SCALE_WARPS,
            )
            return partial.sum(dim=0)
        batches = self.a.numel() // self.batch
        # a small n has few row blocks: split their columns into groups until the GPU is full
        groups = max(tiles.groups_sq, triton.cdiv(MIN_PROGRAMS, (rows.shape[1] // tiles.tile_sq) * batches))
        row_blocks, n_groups, group = _grid(rows.shape[1], cols.shape[1], tiles.tile_sq, groups)
        partial = torch.empty((row_blocks * n_groups, self.count, 2), dtype=torch.float64, device=DEVICE)
        kernels.lscv_pairs_kernel[(row_blocks, n_groups, batches)](
            rows, cols, rows.shape[1], cols.shape[1], cols.shape[1] // tiles.tile_sq, n_cols, self.a, self.count, partial,
            DIM=d, TRIANGLE=triangle, BLOCK=tiles.tile_sq, GROUP=group, SCALES=self.batch, FAST=_fast(self.a.dtype),
            num_warps=NUM_WARPS if self.batch > 1 else SINGLE_SCALE_WARPS,
        )
        return partial.sum(dim=0)


#: Kernel name -> the KIND constant of ``_triton_kernels._profile``.
_PROFILE_KIND = MappingProxyType(
    {"gaussian": 0, "epanechnikov": 1, "uniform": 2, "triangular": 3, "biweight": 4, "cosine": 5}
)


def _kernel_sum_chunk(z_tensor, q_tensor, w_tensor, kind: str, tiles: GpuTiles) -> torch.Tensor:
    """One launch over a chunk of queries and a chunk of data: per-query float64 sums on the device."""
    d, n_padded = z_tensor.shape
    m_padded = q_tensor.shape[1]
    query_blocks, data_blocks = m_padded // tiles.query_block, n_padded // tiles.data_block
    programs = 8 * _multiprocessors()
    data_chunks = max(1, min(data_blocks, triton.cdiv(programs, query_blocks)))
    chunk_blocks = triton.cdiv(data_blocks, data_chunks)
    data_chunks = triton.cdiv(data_blocks, chunk_blocks)
    partial = torch.zeros((data_chunks, m_padded), dtype=torch.float64, device=DEVICE)
    kernels.kernel_sum_kernel[(query_blocks, data_chunks)](
        z_tensor, q_tensor, w_tensor, n_padded, m_padded, chunk_blocks, partial,
        DIM=d, KIND=_PROFILE_KIND[kind], BLOCK_Q=tiles.query_block, BLOCK_Z=tiles.data_block, FAST=_fast(z_tensor.dtype),
        num_warps=NUM_WARPS,
    )
    return partial.sum(dim=0)


def _gram_dims(d: int) -> int:
    """Coordinate rows of the Gram-form KDE data: a power of two of at least 16 (``tl.dot``'s
    smallest inner size; the added coordinates are 0)."""
    return max(16, triton.next_power_of_2(d))


def _squared_norms(points: torch.Tensor) -> torch.Tensor:
    """|p|^2 of each column of (dims, n) ``points``, summed in float64 from its stored
    coordinates and rounded once to their type."""
    wide = points.to(torch.float64)
    return (wide * wide).sum(dim=0).to(points.dtype)


def _gaussian_gram_chunk(z_tensor, z_norms, w_tensor, q_tensor, tiles: GpuTiles, launch: tuple | None = None) -> torch.Tensor:
    """One Gram-form launch (``gaussian_gram_sum_kernel``) over a chunk of queries and a chunk
    of data, both (dims, padded) float32 and scaled so that the kernel is 2^-|q - z|^2, the data's
    norms ``z_norms`` computed once (:func:`_squared_norms`): per-query float64 sums on the
    device.  ``launch`` = (precision, warps, stages), by default :data:`GRAM_LAUNCH`'s for the
    coordinate count."""
    dims, n_padded = z_tensor.shape
    m_padded = q_tensor.shape[1]
    precision, warps, stages = launch or GRAM_LAUNCH.get(dims, GRAM_WIDE_LAUNCH)
    query_blocks, data_blocks = m_padded // tiles.gram_query_block, n_padded // tiles.gram_data_block
    data_chunks, chunk_blocks = _data_chunks(query_blocks, data_blocks)
    partial = torch.empty((data_chunks, m_padded), dtype=torch.float64, device=DEVICE)
    kernels.gaussian_gram_sum_kernel[(query_blocks, data_chunks)](
        z_tensor, z_norms, w_tensor, q_tensor, _squared_norms(q_tensor), n_padded, m_padded, chunk_blocks, partial,
        DIM=dims, BLOCK_Q=tiles.gram_query_block, BLOCK_Z=tiles.gram_data_block, PRECISION=precision,
        FAST=_fast(z_tensor.dtype), num_warps=warps, num_stages=stages,
    )
    return partial.sum(dim=0)


def _tc_launch(d: int, tiles: GpuTiles) -> tuple[int, int, int, int]:
    """(query block, data block, warps, stages) of the tensor-core Gram form for ``d``
    coordinates: :data:`GRAM_TC_LAUNCH`'s for the smallest size that holds d (under the
    interpreter, the tiles' Gram blocks)."""
    if INTERPRETED:
        return tiles.gram_query_block, tiles.gram_data_block, 4, 1
    return GRAM_TC_LAUNCH[min(size for size in GRAM_TC_LAUNCH if size >= d)]


def _gaussian_gram_tc_chunk(data_operand, weights, query_operand, layout, launch: tuple[int, int, int, int]) -> torch.Tensor:
    """One tensor-core Gram-form launch (``gaussian_gram_tc_sum_kernel``) over a chunk of
    queries and a chunk of data given as the operands of ``layout``
    (:func:`parzen.backends._gram_operands.data_operand` / ``query_operand``; the data's float32
    ``weights``, 0 for pads, or None: all 1, the pads' terms 0 by their exponent; padded to the
    blocks of ``launch`` = (query block, data block, warps, stages)): per-query float64 sums on
    the device."""
    columns, n_padded = data_operand.shape
    m_padded = query_operand.shape[0]
    query_block, data_block, warps, stages = launch
    query_blocks, data_blocks = m_padded // query_block, n_padded // data_block
    data_chunks, chunk_blocks = _data_chunks(query_blocks, data_blocks)
    partial = torch.empty((data_chunks, m_padded), dtype=torch.float64, device=DEVICE)
    kernels.gaussian_gram_tc_sum_kernel[(query_blocks, data_chunks)](
        data_operand, query_operand, data_operand if weights is None else weights, n_padded, m_padded, columns, chunk_blocks,
        partial, *layout.first, *layout.second, BLOCK_Q=query_block, BLOCK_Z=data_block, FAST=_fast(torch.float32),
        WEIGHTED=weights is not None, num_warps=warps, num_stages=stages,
    )
    return partial.sum(dim=0)


def _columns_at_zero(rows: np.ndarray, block: int, fdtype, dims: int | None) -> torch.Tensor:
    """What ``_padded(rows, block, 0.0, 0.0, fdtype, dims)`` makes (pads and added coordinates
    at 0), with the rows sent as they are, rounded once to ``fdtype``, and transposed on the
    device (no padded float64 copy on the host)."""
    n, d = rows.shape
    out = torch.zeros((dims or d, triton.cdiv(max(n, 1), block) * block), dtype=fdtype, device=DEVICE)
    out[:d, :n] = _to_device(rows, fdtype).T
    return out


class _DeviceKernelSum:
    """The data of :meth:`GpuBackend.kernel_sum` prepared once for many query sets.

    The rows are centred in float64, scaled (the Gaussian profile exp(-s/2) becomes 2^-s by
    scaling both point sets by sqrt(log2(e)/2)), padded to whole blocks with points of weight 0
    and, in the Gram form, given their norms.  With ``resident`` (and when they fit in
    ``tiles.resident_bytes``) the device tensors of every data chunk are made once and kept, so
    a call moves only its queries and their sums; otherwise each call sends the data chunk by
    chunk (one chunk of ``tiles.chunk_rows`` rows on the device at a time).

    Parameters
    ----------
    Z : ndarray of shape (n, d)
        The data (whitened and scaled by the caller, as for ``kernel_sum``).
    kind : str
        A kernel name of :data:`parzen.kernels.KERNELS`.
    weights : ndarray of shape (n,) or None
        w_i (None: all 1).
    fdtype : torch.dtype
        Compute type.
    tiles : GpuTiles
        Block sizes and the resident-memory budget.
    resident : bool
        Keep the data's device tensors between calls.
    tensor_cores : bool
        Whether this instance may take the tensor-core form (default True; see below).

    For the float32 Gaussian with ``tiles.tc_min_dim`` to 64 coordinates and data within the
    operands' reach (``_gram_operands.usable``), and with ``tensor_cores`` (here and on the
    class), the data and queries are kept as the float16 operands of
    :mod:`parzen.backends._gram_operands` (and the weights, of any sign, in float32; zero
    weights' exponents are the pads'), and summed by ``gaussian_gram_tc_sum_kernel`` (launched as
    :data:`GRAM_TC_LAUNCH` says).  Otherwise float32 Gaussian sums from ``tiles.gram_min_dim``
    coordinates take the former Gram kernel, and the rest the direct one.
    """

    #: Whether the float32 Gram form may take the tensor-core operands.
    tensor_cores = True

    def __init__(self, Z: np.ndarray, kind: str, weights, fdtype, tiles: GpuTiles, *, resident: bool,
                 tensor_cores: bool = True) -> None:
        Z = np.asarray(Z, dtype=np.float64)
        Z = Z if Z.ndim == 2 else Z.reshape(len(Z), -1)  # (0, d) stays (0, d)
        n, self.d = Z.shape
        self.kind, self.fdtype, self.tiles = kind, fdtype, tiles
        self.centre = Z.mean(axis=0) if n else np.zeros(self.d)
        self.scale = math.sqrt(0.5 * _LOG2E) if kind == "gaussian" else 1.0
        self.gram = kind == "gaussian" and fdtype == torch.float32 and self.d >= tiles.gram_min_dim
        self.dims = _gram_dims(self.d) if self.gram else None
        self.query_block, self.data_block = (
            (tiles.gram_query_block, tiles.gram_data_block) if self.gram else (tiles.query_block, tiles.data_block)
        )
        w = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
        scaled = (Z - self.centre) * self.scale
        self._host: tuple[np.ndarray, np.ndarray] | None = (scaled, w)
        self._slices = _chunks(n, tiles.chunk_rows)
        self.layout: operands.GramLayout | None = None
        if (tensor_cores and self.tensor_cores and kind == "gaussian" and fdtype == torch.float32
                and tiles.tc_min_dim <= self.d <= operands.MAX_DIMS):
            self.grid = operands.grid_step(float(np.linalg.norm(scaled, axis=1).max(initial=0.0)) + QUERY_REACH)
            if operands.usable(self.d, self.grid):
                self.layout = operands.layout(self.d)
                #: the weight all points share (the sums are scaled by it), or 0: weights per point
                self.common_weight = float(w[0]) if n and np.all(w == w[0]) else 0.0
                self.launch = _tc_launch(self.d, tiles)
                self.query_block, self.data_block = self.launch[:2]
        if self.layout:
            rows, dtype = self.layout.columns, torch.float16
        else:
            rows, dtype = (self.dims or self.d) + 1 + int(self.gram), fdtype
        nbytes = rows * (n + len(self._slices) * self.data_block) * torch.finfo(dtype).bits // 8
        self._resident = [self._chunk(data) for data in self._slices] if resident and nbytes <= tiles.resident_bytes else None
        if self._resident is not None:
            self._host = None

    def _device_weights(self, w: np.ndarray) -> np.ndarray:
        """What the kernels take for the weights ``w`` of a chunk: the weights themselves."""
        return w

    def _chunk(self, data: slice) -> tuple:
        """(coordinates, norms or None, weights) of one data chunk on the device."""
        assert self._host is not None
        Z, w = self._host
        if self.layout is not None:  # the tensor-core operand; the weights outside it
            z_wide = _columns_at_zero(Z[data], self.data_block, torch.float64, None)
            w_padded = np.zeros(z_wide.shape[1])
            w_padded[: data.stop - data.start] = self._device_weights(w[data])
            kept = torch.zeros(z_wide.shape[1], dtype=torch.bool, device=DEVICE)
            kept[: data.stop - data.start] = torch.from_numpy(w[data] != 0).to(DEVICE)
            weights = None if self.common_weight else _to_device(w_padded, torch.float32)
            return operands.data_operand(z_wide, kept, self.grid), None, weights
        z_tensor = _columns_at_zero(Z[data], self.data_block, self.fdtype, self.dims)
        w_padded = np.zeros(z_tensor.shape[1])
        w_padded[: data.stop - data.start] = self._device_weights(w[data])
        return z_tensor, _squared_norms(z_tensor) if self.gram else None, _to_device(w_padded, self.fdtype)

    def device_chunks(self) -> Iterator[tuple]:
        """The data chunks' device tensors: the kept ones, or made now, one at a time."""
        if self._resident is not None:
            yield from self._resident
        else:
            for data in self._slices:
                yield self._chunk(data)

    def device_sums(self, q_tensor: torch.Tensor) -> torch.Tensor:
        """Per-query float64 sums on the device for queries already scaled and padded as
        :meth:`queries` makes them."""
        total = torch.zeros(q_tensor.shape[0 if self.layout else 1], dtype=torch.float64, device=DEVICE)
        for z_tensor, norms, w_tensor in self.device_chunks():
            if self.layout is not None:
                total += _gaussian_gram_tc_chunk(z_tensor, w_tensor, q_tensor, self.layout, self.launch)
            elif self.gram:
                total += _gaussian_gram_chunk(z_tensor, norms, w_tensor, q_tensor, self.tiles)
            else:
                total += _kernel_sum_chunk(z_tensor, q_tensor, w_tensor, self.kind, self.tiles)
        if self.layout is not None and self.common_weight:
            total *= self.common_weight
        return total

    def scaled_queries(self, Q: np.ndarray) -> np.ndarray:
        """(m, d) queries centred and scaled as the data, in float64."""
        rows = np.subtract(Q, self.centre)
        rows *= self.scale
        return rows

    def queries(self, Q: np.ndarray) -> torch.Tensor:
        """(m, d) queries centred and scaled as the data (in float64, then rounded once to the
        compute type), as :func:`_columns_at_zero` lays them out."""
        rows = self.scaled_queries(Q)
        if self.layout is not None:  # the tensor-core operand, (m_padded, columns)
            return operands.query_operand(_columns_at_zero(rows, self.query_block, torch.float64, None), self.grid)
        return _columns_at_zero(rows, self.query_block, self.fdtype, self.dims)

    def __call__(self, Q) -> np.ndarray:
        """For each query q: sum_i w_i k(|q - z_i|^2) (float64)."""
        Q = np.asarray(Q, dtype=np.float64).reshape(-1, self.d)
        out = np.zeros(Q.shape[0])
        for queries in _chunks(Q.shape[0], self.tiles.chunk_rows):
            sums = _to_host(self.device_sums(self.queries(Q[queries])))
            out[queries] = sums[: queries.stop - queries.start]
        return out


class _DeviceLogKernelSum(_DeviceKernelSum):
    """The data of the Gaussian :meth:`GpuBackend.log_kernel_sum` prepared once for many query
    sets, as :class:`_DeviceKernelSum` prepares them, with log2 of the weights in the weights'
    place; rows of weight 0 are left out, so every exponent is finite.

    In the tensor-core form (``gaussian_gram_tc_log_sum_kernel``, the operands of
    :class:`_DeviceKernelSum`) queries beyond the operands' reach (norm above
    ``_gram_operands.NORM_STEPS`` times the grid, where the sum's terms all underflow but their
    log-sum-exp does not) are summed by the former Gram-form kernel, from data sent for them.

    Parameters
    ----------
    Z, weights, fdtype, tiles, resident, tensor_cores
        As for :class:`_DeviceKernelSum` (the kernel is the Gaussian).
    """

    def __init__(self, Z: np.ndarray, weights, fdtype, tiles: GpuTiles, *, resident: bool, tensor_cores: bool = True) -> None:
        Z = np.asarray(Z, dtype=np.float64)
        Z = Z.reshape(len(Z), -1)
        if weights is not None:
            weights = np.asarray(weights, dtype=np.float64)
            Z, weights = Z[weights > 0], weights[weights > 0]
        self._source = (Z, weights, resident)
        self._far: _DeviceLogKernelSum | None = None
        super().__init__(Z, "gaussian", weights, fdtype, tiles, resident=resident, tensor_cores=tensor_cores)

    def _device_weights(self, w: np.ndarray) -> np.ndarray:
        """log2 w (the weights are positive here)."""
        return np.log2(w)

    def _parts(self, rows: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        """Each data chunk's (top, total) for the scaled queries ``rows`` (not beyond the reach)."""
        if self.layout is not None:
            q_tensor = operands.query_operand(_columns_at_zero(rows, self.query_block, torch.float64, None), self.grid)
            shift = math.log2(self.common_weight) if self.common_weight else 0.0
            parts = []
            for data, (z_tensor, _, log2_w) in zip(self._slices, self.device_chunks()):
                top, total = _gaussian_tc_log_sum_chunk(z_tensor, log2_w, data.stop - data.start, q_tensor, self.layout,
                                                        self.launch)
                parts.append((top + shift, total))
            return parts
        q_tensor = _columns_at_zero(rows, self.query_block, self.fdtype, self.dims)
        return [
            _gaussian_log_sum_chunk(z_tensor, norms, log2_w, data.stop - data.start, q_tensor, self.tiles)
            for data, (z_tensor, norms, log2_w) in zip(self._slices, self.device_chunks())
        ]

    def _logs(self, Q: np.ndarray) -> np.ndarray:
        """For (m, d) queries of at most one chunk: log sum_i w_i exp(-|q - z_i|^2 / 2)."""
        rows = self.scaled_queries(Q)
        out = np.empty(len(rows))
        near = np.ones(len(rows), dtype=bool)
        if self.layout is not None:
            near = np.linalg.norm(rows, axis=1) <= operands.NORM_STEPS * self.grid
            if not near.all():
                if self._far is None:
                    Z, weights, resident = self._source
                    self._far = _DeviceLogKernelSum(Z, weights, self.fdtype, self.tiles, resident=resident, tensor_cores=False)
                out[~near] = self._far._logs(Q[~near])
        if near.any():
            parts = self._parts(rows[near])
            top = np.concatenate([p[0] for p in parts])[:, : int(near.sum())]
            total = np.concatenate([p[1] for p in parts])[:, : int(near.sum())]
            out[near] = log_sum_exp_of_parts(top * math.log(2.0), total)
        return out

    def __call__(self, Q) -> np.ndarray:
        """For each query q: log sum_i w_i exp(-|q - z_i|^2 / 2), -inf for no data (float64)."""
        Q = np.asarray(Q, dtype=np.float64).reshape(-1, self.d)
        if not self._slices:
            return np.full(Q.shape[0], -np.inf)
        out = np.empty(Q.shape[0])
        for queries in _chunks(Q.shape[0], self.tiles.chunk_rows):
            out[queries] = self._logs(Q[queries])
        return out


#: Per compute type: a finite exponent below any the log-sum-exp meets ("no term yet").
_LOWEST_EXPONENT = MappingProxyType({torch.float32: -1e38, torch.float64: -1e300})


def _gaussian_log_sum_chunk(
    z_tensor, z_norms, log2_w_tensor, n: int, q_tensor, tiles: GpuTiles
) -> tuple[np.ndarray, np.ndarray]:
    """One launch over a chunk of queries and a chunk of n data points (``log2_w_tensor`` their
    log2 weights, padded): each data chunk's (top, total) per query, top in base 2 (see
    ``gaussian_log_sum_kernel``; with norms, ``z_norms`` not None, the tensors have
    :func:`_gram_dims` rows and ``gaussian_gram_log_sum_kernel`` takes the squared distances from
    one product per tile, launched as :data:`GRAM_LOG_LAUNCH` says)."""
    d, n_padded = z_tensor.shape
    m_padded = q_tensor.shape[1]
    fdtype = z_tensor.dtype
    gram = z_norms is not None
    query_block, data_block = (tiles.gram_query_block, tiles.gram_data_block) if gram else (tiles.query_block, tiles.data_block)
    query_blocks, data_blocks = m_padded // query_block, n_padded // data_block
    data_chunks, chunk_blocks = _data_chunks(query_blocks, data_blocks)
    top = torch.empty((data_chunks, m_padded), dtype=torch.float64, device=DEVICE)
    total = torch.empty((data_chunks, m_padded), dtype=torch.float64, device=DEVICE)
    grid = (query_blocks, data_chunks)
    common = {"DIM": d, "BLOCK_Q": query_block, "BLOCK_Z": data_block, "FAST": _fast(fdtype), "LOWEST": _LOWEST_EXPONENT[fdtype]}
    if gram:
        precision, warps, stages = GRAM_LOG_LAUNCH
        kernels.gaussian_gram_log_sum_kernel[grid](
            z_tensor, z_norms, q_tensor, _squared_norms(q_tensor), log2_w_tensor, n, n_padded, m_padded, chunk_blocks, top,
            total, PRECISION=precision, **common, num_warps=warps, num_stages=stages,
        )
    else:
        kernels.gaussian_log_sum_kernel[grid](
            z_tensor, q_tensor, log2_w_tensor, n, n_padded, m_padded, chunk_blocks, top, total, **common, num_warps=NUM_WARPS,
        )
    return _to_host(top), _to_host(total)


def _gaussian_tc_log_sum_chunk(
    data_operand, log2_w, n: int, query_operand, layout, launch: tuple[int, int, int, int]
) -> tuple[np.ndarray, np.ndarray]:
    """One tensor-core launch (``gaussian_gram_tc_log_sum_kernel``) over a chunk of queries and
    a chunk of n data points given as the operands of ``layout`` (``log2_w`` their float32 log2
    weights, padded, or None: all 0): each data chunk's (top, total) per query, top in base 2,
    as :func:`_gaussian_log_sum_chunk` gives them."""
    columns, n_padded = data_operand.shape
    m_padded = query_operand.shape[0]
    query_block, data_block, warps, stages = launch
    query_blocks, data_blocks = m_padded // query_block, n_padded // data_block
    data_chunks, chunk_blocks = _data_chunks(query_blocks, data_blocks)
    top = torch.empty((data_chunks, m_padded), dtype=torch.float64, device=DEVICE)
    total = torch.empty((data_chunks, m_padded), dtype=torch.float64, device=DEVICE)
    kernels.gaussian_gram_tc_log_sum_kernel[(query_blocks, data_chunks)](
        data_operand, query_operand, data_operand if log2_w is None else log2_w, n, n_padded, m_padded, columns, chunk_blocks,
        top, total, *layout.first, *layout.second, BLOCK_Q=query_block, BLOCK_Z=data_block, FAST=_fast(torch.float32),
        WEIGHTED=log2_w is not None, LOWEST=_LOWEST_EXPONENT[torch.float32], num_warps=warps, num_stages=stages,
    )
    return _to_host(top), _to_host(total)


class DeviceGrid:
    """Linear-binning counts on the device, to which chunks of rows in device memory are added.

    The counts are ``replicas`` float64 copies of the grid (as many as fit in
    ``tiles.replica_bytes``, at most :data:`MAX_REPLICAS`), summed by :meth:`counts`.

    Parameters
    ----------
    spec : GridSpec
        The grid.
    tiles : GpuTiles
        Block size and the copies' memory.
    single : bool, default False
        Compute positions and shares in float32 (rows within 8 float32 epsilons of a face are
        moved onto it) instead of float64.
    """

    def __init__(self, spec: GridSpec, tiles: GpuTiles, *, single: bool = False) -> None:
        self.spec = spec
        self.nodes = int(np.prod(spec.sizes))
        self.strides = [int(v) for v in np.cumprod((1, *spec.sizes[:0:-1]))[::-1]] + [0] * (4 - spec.d)
        geometry = np.zeros((3, 4))
        geometry[0, : spec.d] = spec.lows
        geometry[1, : spec.d] = np.asarray(spec.highs) - np.asarray(spec.lows)
        geometry[2, : spec.d] = np.asarray(spec.sizes) - 1
        self.geometry = torch.as_tensor(geometry, device=DEVICE)
        self.replicas = max(1, min(MAX_REPLICAS, tiles.replica_bytes // (8 * self.nodes)))
        self.grids = torch.zeros((self.replicas, self.nodes), dtype=torch.float64, device=DEVICE)
        self.first_bad = torch.full((1,), NO_BAD_ROW, dtype=torch.int64, device=DEVICE)
        self.block = tiles.bin_block
        self.compute = kernels.tl.float32 if single else kernels.tl.float64
        self.slack = 8 * float(np.finfo(np.float32).eps) if single else 0.0

    def add(self, rows, weights, start: int) -> None:
        """Queue the shares of ``rows`` (k, d) (and ``weights`` (k,) or None), rows start.. of the data.

        Parameters
        ----------
        rows : torch.Tensor
            Contiguous float32 or float64 rows on the device.
        weights : torch.Tensor or None
            Their weights (None: 1 each).
        start : int
            The index of the first row in the whole data (for the outside-the-box report).
        """
        k = len(rows)
        linear_bin_kernel[(triton.cdiv(k, self.block),)](
            rows, rows if weights is None else weights, self.grids, self.first_bad, self.geometry, k, start,
            *self.strides, self.nodes, self.replicas,
            D=self.spec.d, WEIGHTED=weights is not None, COMPUTE=self.compute, SLACK=self.slack, BLOCK=self.block,
            num_warps=4,
        )

    def first_row_outside(self) -> int | None:
        """The first row added that lies outside the grid's box (NaN included), or None (waits)."""
        bad = int(self.first_bad.item())
        return None if bad == NO_BAD_ROW else bad

    def counts(self) -> np.ndarray:
        """The counts, float64 of shape ``spec.sizes`` on the host (waits for the kernels)."""
        return _to_host(self.grids.sum(dim=0)).reshape(self.spec.sizes)


def _host_rows(X) -> np.ndarray:
    """X as an (n, d) host array, float32 and float64 kept as they are (no copy when contiguous),
    anything else as float64."""
    values = np.asarray(X)
    if values.dtype not in (np.float32, np.float64):
        values = values.astype(np.float64)
    return values.reshape(len(values), -1) if values.ndim != 2 else values


def _binning_arrays(X, spec: GridSpec, weights) -> tuple[np.ndarray, np.ndarray | None]:
    """The rows and weights of a linear_bin call, checked, in their travelling types."""
    values = np.asarray(X)
    if values.ndim == 1:
        values = values[:, None]
    if values.ndim != 2 or values.shape[1] != spec.d:
        raise ValueError(f"X must have {spec.d} column(s) for this grid, got shape {np.shape(X)}")
    values = _host_rows(values)
    if weights is None:
        return values, None
    w = _host_rows(weights)[:, 0] if np.ndim(weights) == 1 else np.asarray(weights)
    if w.shape != (len(values),):
        raise ValueError(f"weights must have one value per row ({len(values)}), got shape {np.shape(weights)}")
    return values, w


def _data_chunks(query_blocks: int, data_blocks: int) -> tuple[int, int]:
    """How a launch splits the data blocks among programs: (chunks, blocks per chunk), about eight
    programs per multiprocessor over the query blocks (each chunk writes its own partial sums)."""
    data_chunks = max(1, min(data_blocks, triton.cdiv(8 * _multiprocessors(), query_blocks)))
    chunk_blocks = triton.cdiv(data_blocks, data_chunks)
    return triton.cdiv(data_blocks, chunk_blocks), chunk_blocks


def _multiprocessors() -> int:
    if INTERPRETED:
        return 1
    return torch.cuda.get_device_properties(DEVICE).multi_processor_count


class GpuBackend(KDEBackend):
    """The Triton backend: the primitives as GPU kernels, with what lives across calls.

    An instance owns the CUDA graphs of repeated :class:`PairSums1D` chains (keyed by chain,
    data size, compute type and integer arguments, at most eight), the device buffers of
    whitened data (by size, at most four sets, each with its owner and its own graphs) and the
    device constants of each Hermite sum.  :meth:`close` releases them.

    Parameters
    ----------
    tiles : GpuTiles, optional
        Tile and block sizes (default: :class:`GpuTiles`' defaults).
    """

    name = "gpu"
    #: float32 first: the GPU's fast type is the default.
    dtypes = (np.dtype(np.float32), np.dtype(np.float64))
    #: True when Triton interprets the kernels on the CPU (no GPU): "auto" then never picks it.
    interpreted = INTERPRETED

    def __init__(self, tiles: GpuTiles | None = None) -> None:
        self.tiles = GpuTiles() if tiles is None else tiles
        #: Chains replayed as CUDA graphs: (chain, n, compute type, integer arguments) -> _Replay,
        #: or True after the chain's first call (no graph yet: it compiles the kernels), or None
        #: (could not capture); most recent last.
        self._graphs: dict = {}
        #: Device buffers of whitened data, by (n, d, compute type), most recently used last.
        self._whitened: dict[tuple, _WhitenedData] = {}
        #: One _HermiteSum per (kind, compute type): its constants are computed and sent once.
        self._hermite: dict[tuple, _HermiteSum] = {}

    def __repr__(self) -> str:
        return f"GpuBackend({self.tiles!r})"

    def __reduce__(self):
        """Copies and pickles carry the tiles only: graphs and buffers are caches of one device
        (``clone`` of a ``KDE(backend=GpuBackend())`` gets a fresh backend)."""
        return (GpuBackend, (self.tiles,))

    def linear_bin(self, X, spec: GridSpec, weights=None, *, dtype=None) -> BinCounts:
        """Linear binning by a Triton kernel (:mod:`parzen.backends._triton_binning`), the rows
        streamed from host memory in chunks (:mod:`parzen.backends._gpu_stream`).

        float32 and float64 rows travel as they are (10^9 float32 values move 4 GB, never a
        float64 copy) and the positions and shares are computed from them in float64 unless
        ``dtype=np.float32`` is asked for (then ~1e-7 of a spacing, with rows within 8 float32
        epsilons of a face moved onto it); the counts are accumulated by float64 atomic adds
        either way, so in float64 they equal the reference's to rounding.  See
        :meth:`parzen.backends.KDEBackend.linear_bin`.
        """
        values, w = _binning_arrays(X, spec, weights)
        grid = DeviceGrid(spec, self.tiles, single=dtype is not None and np.dtype(dtype) == np.float32)
        arrays = [values] if w is None else [values, w]
        for start, chunk in device_chunks(arrays, chunk_rows(arrays, self.tiles.stream_bytes)):
            grid.add(chunk[0], chunk[1] if w is not None else None, start)
        bad = grid.first_row_outside()
        if bad is not None:
            raise outside_box_error(values, bad, spec)
        return BinCounts(spec, grid.counts())

    def column_summary(self, X, *, moments: bool = True) -> ColumnSummary:
        """n, the column ranges and, with ``moments``, means and standard deviations, in one
        pass of the rows through the device (:mod:`parzen.backends._gpu_stream`; float32 rows
        travel as float32).

        Each chunk is converted to float64 on the device; the sums of the deviations from the
        first row, divided by the power of two above the first chunk's range (exact; against
        overflow, as the host version), are added in float64.  See
        :meth:`parzen.backends.KDEBackend.column_summary`.
        """
        values = _host_rows(X)
        n, d = values.shape
        if n == 0:
            raise ValueError("a column summary needs at least one row")
        lows = highs = shift = unit = None
        sums = squares = torch.zeros(d, dtype=torch.float64, device=DEVICE)
        for _, (chunk,) in device_chunks([values], chunk_rows([values], self.tiles.stream_bytes)):
            c = chunk.to(torch.float64)
            low, high = torch.aminmax(c, dim=0)
            lows = low if lows is None else torch.minimum(lows, low)
            highs = high if highs is None else torch.maximum(highs, high)
            if moments:
                if shift is None:
                    shift = c[0].clone()
                    span = (high - low).cpu().numpy()
                    unit = torch.as_tensor(power_of_two(span), device=DEVICE)
                deviations = (c - shift) / unit
                sums = sums + deviations.sum(dim=0)
                squares = squares + (deviations * deviations).sum(dim=0)
        assert lows is not None and highs is not None  # n > 0
        summary = ColumnSummary(n, _to_host(lows), _to_host(highs))
        if not moments or not summary.finite or n < 2 or unit is None or shift is None:
            return summary
        s, q, u, c0 = (_to_host(t) for t in (sums, squares, unit, shift))
        variance = np.maximum(q - s * s / n, 0.0) / (n - 1)
        return ColumnSummary(n, summary.lows, summary.highs, c0 + s / n * u, np.sqrt(variance) * u)

    def fft_convolve(self, a: np.ndarray, b: np.ndarray, shape) -> np.ndarray:
        """The zero-padded convolution of :meth:`parzen.backends.KDEBackend.fft_convolve` by
        ``torch.fft`` (cuFFT) on the device, in float64 (complex128)."""
        dims = tuple(range(a.ndim))
        shape = tuple(int(v) for v in shape)
        ta = torch.as_tensor(np.ascontiguousarray(a, dtype=np.float64), device=DEVICE)
        tb = torch.as_tensor(np.ascontiguousarray(b, dtype=np.float64), device=DEVICE)
        product = torch.fft.rfftn(ta, s=shape, dim=dims) * torch.fft.rfftn(tb, s=shape, dim=dims)
        return _to_host(torch.fft.irfftn(product, s=shape, dim=dims))

    def close(self) -> None:
        """Drop the CUDA graphs, whitened-data buffers and constants (after the device is idle);
        the instance builds them again if it is used later.  Functions it has returned (prepared
        sums) keep their own buffers until they are dropped."""
        if not INTERPRETED:
            torch.cuda.synchronize(DEVICE)
        self._graphs.clear()
        self._whitened.clear()
        self._hermite.clear()

    def _hermite_sum(self, kind: str, fdtype) -> _HermiteSum:
        hermite = self._hermite.get((kind, fdtype))
        if hermite is None:
            hermite = self._hermite[kind, fdtype] = _HermiteSum(kind, fdtype, self.tiles)
        return hermite

    def pair_sum_1d(self, x: np.ndarray, kind: str, scales: np.ndarray, *, dtype=None) -> np.ndarray:
        """For each scale g: sum_{i<j} phi^(r)((x_i - x_j) / g), kind = "gauss_d<r>" (r even, <= 8).

        With kappa = log2(e) / 2 and t = kappa ((x_i - x_j)/g)^2 the term is P(t) 2^-t / sqrt(2 pi),
        P the Hermite polynomial of :func:`parzen.kernels.gauss_derivative_even_coefficients`
        rescaled to t.  See :meth:`parzen.backends.reference.NumpyBackend.pair_sum_1d`.
        """
        hermite = self._hermite_sum(kind, torch_dtype(dtype))
        x = np.asarray(x, dtype=np.float64).reshape(-1, 1)
        x = x - x.mean()
        scales = np.atleast_1d(np.asarray(scales, dtype=np.float64))

        def run(rows, cols, triangle):  # sorted, so that each row block's pairs within reach are one column range
            if triangle:
                rows = cols = rows.sort(dim=1).values
                return hermite.launch(rows, cols, True)
            return hermite.launch(rows.sort(dim=1).values, cols.sort(dim=1).values, False, sorted_data=True)

        # x in units of g / sqrt(kappa): t is the squared difference (one multiply less per pair)
        tiles = self.tiles
        out = np.array([
            float(_pair_sums(x * hermite.unit(g), run, hermite.spacing, tiles.tile_1d, tiles.chunk_rows, hermite.fdtype))
            for g in scales
        ])
        return out / math.sqrt(2.0 * math.pi)

    def prepare_pair_sum_1d(self, x: np.ndarray, *, dtype=None) -> PairSums1D:
        """:class:`PairSums1D` over x, kept sorted on the device (PLUGIN's two stages).

        Each sum rescales the sorted data into the compute type, finds the reachable column blocks
        and launches, all queued behind each other: with a scale g that is a device number
        (PLUGIN's g2, computed from psi6) nothing waits for the device until the chain's numbers are
        fetched.  From the second :meth:`~PairSums1D.evaluate` of the same chain on as many points
        (up to :data:`GRAPH_MAX_ROWS`),
        the whole chain (sending x, centring, sorting, both stages, their arithmetic) is one CUDA
        graph: the host then spends some 20 us on it instead of one PyTorch call per operation.
        Data of more than one chunk get the host version (:meth:`KDEBackend.prepare_pair_sum_1d`).
        """
        x = np.asarray(x, dtype=np.float64).ravel()
        if x.size > self.tiles.chunk_rows:
            return super().prepare_pair_sum_1d(x, dtype=dtype)
        return _DevicePairSums1D(x, torch_dtype(dtype), self)

    def pair_sum_sq(self, Y: np.ndarray, kind: str, params: np.ndarray, *, dtype=None) -> np.ndarray:
        """(len(h), 2): sum_{i<j} exp(-s / 4h^2) and exp(-s / 2h^2), s = |y_i - y_j|^2 (kind "lscv").

        All scales in one pass over the pairs; see :meth:`parzen.backends.reference.NumpyBackend.pair_sum_sq`.
        """
        _check_sq_kind(kind)
        fdtype = torch_dtype(dtype)
        Y = np.asarray(Y, dtype=np.float64)
        Y = Y.reshape(len(Y), -1)
        Y = Y - Y.mean(axis=0)
        h = np.atleast_1d(np.asarray(params, dtype=np.float64))
        scales = _LscvScales(h.size, fdtype, self.tiles)
        scales.set(h)
        d = Y.shape[1]

        def run(rows, cols, triangle):
            return scales.launch(rows, cols, triangle, d)

        tile = _lscv_tile(fdtype, self.tiles)
        return _pair_sums(Y, run, scales.spacing, tile, self.tiles.chunk_rows, fdtype, _lscv_dims(d, fdtype)).cpu().numpy()

    def pair_sum_hermite(self, Y: np.ndarray, alphas: np.ndarray, weights: np.ndarray | None = None, *, dtype=None) -> np.ndarray:
        """For each multi-index alpha: sum_{i<j} w_i w_j exp(-|u|^2 / 2) prod_k He_{alpha_k}(u_k),
        u = y_i - y_j (:meth:`parzen.backends.KDEBackend.pair_sum_hermite`), on the device.

        One program per (row block, column group, multi-index) (``hermite_products_kernel``):
        each pair's differences, exponential and Hermite polynomials (by their recurrence) in
        registers, the weights a coordinate row of their own (pads weigh 0), the programs' sums
        added in float64; data beyond one chunk are streamed chunk pair by chunk pair.
        """
        Y, alphas = hermite_arguments(Y, alphas)
        fdtype = torch_dtype(dtype)
        n, d = Y.shape
        if n < 2 or len(alphas) == 0:
            return np.zeros(len(alphas))
        w = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
        values = np.column_stack([Y - Y.mean(axis=0), w])
        alpha_tensor = torch.as_tensor(np.ascontiguousarray(alphas, dtype=np.int32), device=DEVICE)
        tile = self.tiles.tile_hermite

        def run(rows, cols, triangle):
            row_blocks = rows.shape[1] // tile
            groups = max(1, triton.cdiv(MIN_PROGRAMS, row_blocks * len(alphas)))
            row_blocks, n_groups, group = _grid(rows.shape[1], cols.shape[1], tile, groups)
            partial = torch.empty((row_blocks * n_groups, len(alphas)), dtype=torch.float64, device=DEVICE)
            kernels.hermite_products_kernel[(row_blocks, n_groups, len(alphas))](
                rows, cols, rows.shape[1], cols.shape[1], cols.shape[1] // tile, alpha_tensor, partial,
                DIM=d, TRIANGLE=triangle, BLOCK=tile, GROUP=group, FAST=_fast(fdtype), num_warps=HERMITE_WARPS,
            )
            return partial.sum(dim=0)

        # pads (first coordinate spaced by 1, weight 0) add nothing
        return _to_host(_pair_sums(values, run, 1.0, tile, self.tiles.chunk_rows, fdtype))

    def pair_sum_1d_between(self, x: np.ndarray, y: np.ndarray, kind: str, scales: np.ndarray, *, dtype=None) -> np.ndarray:
        """For each scale g: sum_i sum_j phi^(r)((x_i - y_j) / g) (r even, <= 8), the rectangle of
        pairs launched chunk against chunk as :meth:`pair_sum_1d`'s off-diagonal chunk pairs; see
        :meth:`parzen.backends.KDEBackend.pair_sum_1d_between`."""
        hermite = self._hermite_sum(kind, torch_dtype(dtype))
        x, y = np.asarray(x, dtype=np.float64).reshape(-1, 1), np.asarray(y, dtype=np.float64).reshape(-1, 1)
        scales = np.atleast_1d(np.asarray(scales, dtype=np.float64))
        if not (x.size and y.size):
            return np.zeros(scales.size)
        centre = np.concatenate([x, y]).mean()
        x, y = x - centre, y - centre
        tiles = self.tiles

        def run(rows, cols, triangle):  # both sorted: each row block's pairs within reach are one column range
            return hermite.launch(rows.sort(dim=1).values, cols.sort(dim=1).values, triangle, sorted_data=True)

        out = np.array([
            float(_rectangle_sums(
                x * hermite.unit(g), y * hermite.unit(g), run, hermite.spacing, tiles.tile_1d, tiles.chunk_rows,
                hermite.fdtype,
            ))
            for g in scales
        ])
        return out / math.sqrt(2.0 * math.pi)

    def pair_sum_sq_between(self, X: np.ndarray, Y: np.ndarray, kind: str, params: np.ndarray, *, dtype=None) -> np.ndarray:
        """(len(h), 2): sum exp(-s / 4h^2) and exp(-s / 2h^2) over every (x_i, y_j), chunk against
        chunk; see :meth:`parzen.backends.KDEBackend.pair_sum_sq_between`."""
        _check_sq_kind(kind)
        fdtype = torch_dtype(dtype)
        X, Y = np.asarray(X, dtype=np.float64), np.asarray(Y, dtype=np.float64)
        X, Y = (X[:, None] if X.ndim == 1 else X), (Y[:, None] if Y.ndim == 1 else Y)
        h = np.atleast_1d(np.asarray(params, dtype=np.float64))
        if not (len(X) and len(Y)):
            return np.zeros((h.size, 2))
        centre = np.concatenate([X, Y]).mean(axis=0)
        scales = _LscvScales(h.size, fdtype, self.tiles)
        scales.set(h)
        d = X.shape[1]

        def run(rows, cols, triangle):
            return scales.launch(rows, cols, triangle, d)

        tile = _lscv_tile(fdtype, self.tiles)
        sums = _rectangle_sums(X - centre, Y - centre, run, scales.spacing, tile, self.tiles.chunk_rows, fdtype, _lscv_dims(d, fdtype))
        return sums.cpu().numpy()

    def prepare_whitened_pair_sum_sq(self, Z: np.ndarray, kind: str, *, dtype=None) -> Callable:
        """A function (M, params) -> pair_sum_sq(Z M^-T, kind, params) with Z kept on the device.

        LSCV_H's Nelder-Mead loop evaluates g(H) some 1600 times on the same data, whitened by
        a different lower-triangular M each time: here the data travel to the device once, and
        each call only sends M^-1 (d x d), whitens on the device (one launch, float64 products)
        and launches the pair sum; the whitened data of the last M are kept (LSCV_h whitens once).
        For at most :data:`GRAPH_MAX_ROWS` rows the device buffers belong to the data's size
        (:class:`_WhitenedData`) and are reused by later data of that size, and from a launch's third
        call on they replay it as a CUDA graph.
        Data of more than one chunk are whitened on the host
        (:meth:`KDEBackend.prepare_whitened_pair_sum_sq`).
        """
        _check_sq_kind(kind)
        fdtype = torch_dtype(dtype)
        Z = np.asarray(Z, dtype=np.float64)
        Z = Z.reshape(len(Z), -1)
        n, d = Z.shape
        if n > self.tiles.chunk_rows:  # streamed data: whitened on the host
            return super().prepare_whitened_pair_sum_sq(Z, kind, dtype=dtype)
        centred = Z - Z.mean(axis=0)
        key = (n, d, fdtype)
        data = self._whitened.pop(key, None) or _WhitenedData(n, d, fdtype, self.tiles)
        if n <= GRAPH_MAX_ROWS:  # small buffers are kept for the next data of this size; big ones go with sums
            self._whitened[key] = data  # most recent last
            while len(self._whitened) > _WHITENED_KEPT:
                self._whitened.pop(next(iter(self._whitened)))
        owner = object()
        data.load(centred, owner)

        def sums(M: np.ndarray, params) -> np.ndarray:
            if data.owner is not owner:  # later data of the same size took the buffers: send ours again
                data.load(centred, owner)
            return data.sums(np.asarray(M, dtype=np.float64), np.atleast_1d(np.asarray(params, dtype=np.float64)))

        return sums

    def kernel_sum(
        self, Z: np.ndarray, Q: np.ndarray, kind: str, weights: np.ndarray | None = None, *, dtype=None
    ) -> np.ndarray:
        """For each query q: sum_i w_i k(|q - z_i|^2), k the profile of kernel ``kind``.

        Programs are (block of queries) x (chunk of data), so few queries over many points still
        fill the GPU; padded data points carry weight 0.  The Gaussian profile exp(-s/2) becomes
        2^-s by scaling both point sets by sqrt(log2(e)/2).  In float32 with ``tiles.tc_min_dim``
        (2) to 64 coordinates the Gaussian sums take the Gram form |q|^2 + |z|^2 - 2 q.z on the
        tensor cores, from the float16 operands of :mod:`parzen.backends._gram_operands` (issue
        20, item 5; within 3.3e-6 of the float64 sums from d = 2 to 64, benchmarks/results/
        gpu_kde_multivariate.md), for weights of any sign and data within the operands' reach
        (:data:`GRAM_TC_LAUNCH`); otherwise from ``tiles.gram_min_dim`` coordinates by float32
        multiply-adds (:data:`GRAM_LAUNCH`), and below by the direct differences.
        See :meth:`parzen.backends.reference.NumpyBackend.kernel_sum`.
        """
        check_kernel(kind)
        return _DeviceKernelSum(Z, kind, weights, torch_dtype(dtype), self.tiles, resident=False)(Q)

    def prepare_kernel_sum(self, Z: np.ndarray, kind: str, weights: np.ndarray | None = None, *, dtype=None) -> Callable:
        """:meth:`kernel_sum` over Z as a function of the queries, for many query sets: the data
        are centred, scaled, padded and sent to the device once and kept there (up to
        ``tiles.resident_bytes``; beyond, they are sent at each call).  A fitted ``KDE`` keeps
        this for its evaluations.  See :meth:`parzen.backends.KDEBackend.prepare_kernel_sum`.
        """
        check_kernel(kind)
        return _DeviceKernelSum(Z, kind, weights, torch_dtype(dtype), self.tiles, resident=True)

    def log_kernel_sum(
        self, Z: np.ndarray, Q: np.ndarray, kind: str, weights: np.ndarray | None = None, *, dtype=None
    ) -> np.ndarray:
        """For each query q: log sum_i w_i k(|q - z_i|^2), k the profile of kernel ``kind``.

        Gaussian: a log-sum-exp in base 2 (the points scaled as in :meth:`kernel_sum`, e_i =
        log2 w_i - t_i), each program keeping a running maximum over its data blocks (in float32,
        t_i in the forms of :meth:`kernel_sum`, the tensor cores' with log2 w_i added after the
        product, and queries beyond their operands' reach by the former kernels); the programs'
        parts are combined in float64 on the host (:func:`parzen.backends._log_sums.log_sum_exp_of_parts`).
        Zero weights are left out, so every exponent is finite.  Compactly supported kernels: the
        log of :meth:`kernel_sum` (:func:`parzen.backends._log_sums.log_of_kernel_sum`).
        See :meth:`parzen.backends.reference.NumpyBackend.log_kernel_sum`.
        """
        check_kernel(kind)
        if kind != "gaussian":
            return log_of_kernel_sum(self.kernel_sum, Z, Q, kind, weights, dtype=dtype)
        return _DeviceLogKernelSum(Z, weights, torch_dtype(dtype), self.tiles, resident=False)(Q)

    def prepare_log_kernel_sum(self, Z: np.ndarray, kind: str, weights: np.ndarray | None = None, *, dtype=None) -> Callable:
        """:meth:`log_kernel_sum` over Z as a function of the queries; the Gaussian's data are
        kept on the device as :meth:`prepare_kernel_sum` keeps them (other kernels: the base
        class's function).  See :meth:`parzen.backends.KDEBackend.prepare_log_kernel_sum`.
        """
        if kind != "gaussian":
            return super().prepare_log_kernel_sum(Z, kind, weights, dtype=dtype)
        return _DeviceLogKernelSum(Z, weights, torch_dtype(dtype), self.tiles, resident=True)
