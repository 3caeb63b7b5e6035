"""The sparse-grid operators on the GPU: B v and B^T alpha, with the data streamed.

:class:`GpuSparseGrid` computes the products of paper 004 (docs/statistics.md, "Sources")
with the Triton kernels of :mod:`._triton_sparse_grid`.
Data points are cut into chunks of :data:`CHUNK_POINTS`; each chunk is held transposed,
(d, points), in the compute type.  Data up to :data:`RESIDENT_MAX_BYTES` stay on the GPU
across the calls of a CG solve; larger data stay in pinned host memory and are streamed at each
product by the paper's second scheme (section 4.2.1): M = :data:`STREAMS` CUDA streams
loop over the N chunks, each copying its next chunk while the others compute, into M device
buffers.  With several GPUs (every visible one, or those named by ``devices``) the chunks are
dealt out among them in turn, chunk c to GPU c mod G, each GPU with its own streams and buffers,
and the per-GPU results added on the host in float64: one process drives every GPU of its host,
so the data are read from host memory once per product whatever the number of GPUs.  B B^T p, the product CG needs, is formed per
chunk (B^T p of the chunk stays on the device), so each CG iteration moves the data once.

Under the Triton interpreter (no GPU) the same code runs with CPU tensors and no streams.
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np

from . import _triton_sparse_grid as kernels
from ._cuda import DEVICE, INTERPRETED, torch, torch_dtype, triton
from .sparse_grid_base import SparseGridBackend

#: Data points per chunk by default (the unit of streaming and of one kernel launch).
CHUNK_POINTS = 1 << 10 if INTERPRETED else 1 << 22
#: Data of at most this many bytes (in the compute type) are kept on the GPU; more are streamed.
RESIDENT_MAX_BYTES = 8 << 30
#: CUDA streams (and device buffers) per GPU when streaming.
STREAMS = 2
#: Points per program: mult_transpose, mult.
BLOCK_T, BLOCK = (16, 16) if INTERPRETED else (256, 1024)
#: Warps per program.
NUM_WARPS = 8
#: Subspaces up to this size are summed by a one-hot reduction in registers; larger ones atomically.
MAX_ONEHOT = 64


def _subspace_tables(codes: np.ndarray, modified: bool, fdtype) -> tuple[tuple[torch.Tensor, ...], int]:
    """(coordinate, scale, half, shift) of each subspace's active entries, (S, A) flattened;
    see :mod:`._triton_sparse_grid`, and their width A.  Modified basis: level-1 coordinates (factor 1) are
    left out."""
    codes = np.asarray(codes, dtype=np.int64)
    active = codes >= 2 if modified else np.ones(codes.shape, dtype=bool)
    width = max(1, int(active.sum(axis=1).max()))
    dims = np.zeros((len(codes), width), dtype=np.int32)
    scale, half, shift = np.zeros((3, len(codes), width))
    half[:] = 1.0  # padding: scale 0, half 1, shift 0 is the factor 1
    for s, row in enumerate(codes):
        ks = np.flatnonzero(active[s])
        c = row[ks]
        hat = c >= 1
        dims[s, : len(ks)] = ks
        scale[s, : len(ks)] = np.where(hat, np.ldexp(1.0, np.maximum(c, 0)), 1.0)
        half[s, : len(ks)] = np.where(hat, np.ldexp(1.0, np.maximum(c - 1, 0)), 1.0)
        shift[s, : len(ks)] = np.where(hat, 1.0, -c)
    tables = [torch.from_numpy(dims.ravel())]
    return (*tables, *(torch.from_numpy(a.ravel()).to(fdtype) for a in (scale, half, shift))), width


class _Grid:
    """The grid's tables on one device."""

    def __init__(self, codes, offsets, modified: bool, fdtype, device) -> None:
        tables, self.active = _subspace_tables(codes, modified, fdtype)
        self.tables = tuple(t.to(device) for t in tables)
        self.offsets = torch.from_numpy(np.asarray(offsets, dtype=np.int32)).to(device)
        self.n_subspaces = len(codes)
        self.size = int(offsets[-1])
        largest = int(np.diff(offsets).max())
        self.onehot = 0 if largest > MAX_ONEHOT else triton.next_power_of_2(largest)
        self.modified = modified

    def mult_transpose(self, x: torch.Tensor, m: int, alpha: torch.Tensor) -> torch.Tensor:
        """B^T alpha over one chunk x (d, points): (points,) in x's type."""
        out = torch.empty(m, dtype=x.dtype, device=x.device)
        kernels.mult_transpose_kernel[(triton.cdiv(m, BLOCK_T),)](
            x, m, x.stride(0), *self.tables, self.offsets, self.n_subspaces, alpha, out,
            ACTIVE=self.active, BLOCK=BLOCK_T, MODIFIED=self.modified, num_warps=NUM_WARPS // 2,
        )
        return out

    def mult(self, x: torch.Tensor, m: int, v: torch.Tensor) -> torch.Tensor:
        """B v over one chunk: (grid size,) float64."""
        programs = triton.cdiv(m, BLOCK)
        rows = programs if self.onehot else 1
        maker = torch.empty if self.onehot else torch.zeros
        partial = maker((rows, self.size), dtype=x.dtype, device=x.device)
        kernels.mult_kernel[(programs,)](
            x, m, x.stride(0), *self.tables, self.offsets, self.n_subspaces, v, partial, self.size,
            ACTIVE=self.active, BLOCK=BLOCK, ONEHOT=self.onehot, MODIFIED=self.modified, num_warps=NUM_WARPS,
        )
        return partial.sum(dim=0, dtype=torch.float64)


class _Lane:
    """One GPU's share of the chunks: its grid tables, streams and buffers."""

    def __init__(self, device, grid_args: tuple[Any, Any, bool], chunk_shape, fdtype, resident: bool) -> None:
        self.device = device
        self.grid = _Grid(*grid_args, fdtype, device)
        self.chunks: list[int] = []
        self.resident: dict[int, torch.Tensor] = {}
        streaming = not resident and device.type == "cuda"
        self.streams = [torch.cuda.Stream(device) for _ in range(STREAMS)] if streaming else []
        self.buffers = [torch.empty(chunk_shape, dtype=fdtype, device=device) for _ in self.streams]
        self.free = [None] * len(self.streams)  # event: the buffer's last kernels are done

    def active(self):
        """Make this lane's GPU the current one (Triton launches on the current device)."""
        return torch.cuda.device(self.device) if self.device.type == "cuda" else contextlib.nullcontext()


def compute_devices(devices=None) -> list:
    """The devices that share a design's chunks.

    Parameters
    ----------
    devices : None, int or sequence of int / torch.device
        None: every visible GPU (the CPU under the Triton interpreter); an int k: the first k
        GPUs; a sequence: those GPUs by index (a device may be named twice: it then gets two
        shares, each with its own streams and buffers, which the tests use to check the dealing on one device).

    Returns
    -------
    list of torch.device

    Raises
    ------
    ValueError
        For an empty selection, a count or index outside the visible GPUs.
    """
    visible = [DEVICE] if DEVICE.type != "cuda" else [torch.device("cuda", i) for i in range(torch.cuda.device_count())]
    if devices is None:
        return visible
    if isinstance(devices, (int, np.integer)) and not isinstance(devices, bool):
        if not 1 <= devices <= len(visible):
            raise ValueError(f"devices={devices} GPUs asked for, but {len(visible)} are visible; give 1 to {len(visible)}")
        return visible[: int(devices)]
    chosen = []
    for device in devices:
        if isinstance(device, torch.device):
            chosen.append(device)
        elif isinstance(device, (int, np.integer)) and 0 <= device < len(visible):
            chosen.append(visible[int(device)])
        else:
            raise ValueError(f"device {device!r} is not a visible GPU index (0 to {len(visible) - 1}) or a torch.device")
    if not chosen:
        raise ValueError("devices is empty; give None (every visible GPU), a count, or GPU indices")
    return chosen


class DeviceDesign:
    """B over data kept on the GPU(s) or streamed to them; see the module docstring.

    ``mult(v)`` = B v, ``mult_transpose(alpha)`` = B^T alpha, ``normal(p)`` = B B^T p.
    ``devices`` picks the GPUs that share the chunks (:func:`compute_devices`; default: all).
    """

    def __init__(
        self, X01: np.ndarray, codes, offsets, modified: bool, dtype=None, *, resident=None, chunk_points=CHUNK_POINTS,
        devices=None,
    ) -> None:
        self.fdtype = torch_dtype(dtype)
        X01 = np.asarray(X01)
        self.m, self.dim = X01.shape
        self.size = int(offsets[-1])
        element = torch.tensor([], dtype=self.fdtype).element_size()
        if resident is None:
            resident = self.m * self.dim * element <= RESIDENT_MAX_BYTES
        devices = compute_devices(devices)
        pin = not resident and DEVICE.type == "cuda"
        chunks: list[tuple[int, torch.Tensor]] = []
        for start in range(0, self.m, chunk_points):
            block = torch.from_numpy(np.ascontiguousarray(X01[start : start + chunk_points].T)).to(self.fdtype)
            chunks.append((start, block.pin_memory() if pin else block))
        self.host_chunks: list[tuple[int, torch.Tensor | None]] = list(chunks)  # None: kept on a device
        chunk_shape = (self.dim, min(chunk_points, self.m))
        self.lanes = [_Lane(device, (codes, offsets, modified), chunk_shape, self.fdtype, resident) for device in devices]
        for c, (start, block) in enumerate(chunks):
            lane = self.lanes[c % len(self.lanes)]
            lane.chunks.append(c)
            if not lane.streams:
                lane.resident[c] = block.to(lane.device)
                self.host_chunks[c] = (start, None)  # on the device for good: no host copy kept

    def _sweep(self, work):
        """Call ``work(lane, x, start, points)`` on every chunk, on its GPU; copies overlap compute."""
        for lane in self.lanes:
            with lane.active():
                self._sweep_lane(lane, work)
        for lane in self.lanes:
            for stream in lane.streams:
                stream.synchronize()

    def _sweep_lane(self, lane, work):
        for stream in lane.streams:  # the inputs and accumulators were made on the default stream
            stream.wait_stream(torch.cuda.current_stream(lane.device))
        for turn, c in enumerate(lane.chunks):
            start, block = self.host_chunks[c]
            if not lane.streams:
                x = lane.resident[c]
                work(lane, x, start, x.shape[1])
                continue
            points = block.shape[1]
            slot = turn % len(lane.streams)
            stream = lane.streams[slot]
            with torch.cuda.stream(stream):
                if lane.free[slot] is not None:
                    stream.wait_event(lane.free[slot])
                x = lane.buffers[slot][:, :points]
                x.copy_(block, non_blocking=True)
                work(lane, x, start, points)
                lane.free[slot] = stream.record_event()

    def _per_lane(self, vector: np.ndarray) -> list[torch.Tensor]:
        return [torch.from_numpy(np.asarray(vector, dtype=np.float64)).to(self.fdtype).to(lane.device) for lane in self.lanes]

    def mult(self, v: np.ndarray) -> np.ndarray:
        """u = B v (float64, length: grid size)."""
        v_host = torch.from_numpy(np.ascontiguousarray(v, dtype=np.float64)).to(self.fdtype)
        totals = {id(lane): torch.zeros(self.size, dtype=torch.float64, device=lane.device) for lane in self.lanes}

        def work(lane, x, start, points):
            chunk = v_host[start : start + points].to(lane.device, non_blocking=True)
            totals[id(lane)].add_(lane.grid.mult(x, points, chunk))

        self._sweep(work)
        return sum((t.cpu().numpy() for t in totals.values()), np.zeros(self.size))

    def mult_transpose(self, alpha: np.ndarray) -> np.ndarray:
        """v = B^T alpha (float64, length: number of points)."""
        alphas = self._per_lane(alpha)
        pieces = {}

        def work(lane, x, start, points):
            pieces[start] = lane.grid.mult_transpose(x, points, alphas[self.lanes.index(lane)])

        self._sweep(work)
        out = np.empty(self.m)
        for start, piece in pieces.items():
            out[start : start + piece.numel()] = piece.cpu().numpy()
        return out

    def normal(self, p: np.ndarray) -> np.ndarray:
        """B B^T p, chunk by chunk (each chunk's B^T p stays on its GPU)."""
        ps = self._per_lane(p)
        totals = {id(lane): torch.zeros(self.size, dtype=torch.float64, device=lane.device) for lane in self.lanes}

        def work(lane, x, start, points):
            values = lane.grid.mult_transpose(x, points, ps[self.lanes.index(lane)])
            totals[id(lane)].add_(lane.grid.mult(x, points, values))

        self._sweep(work)
        return sum((t.cpu().numpy() for t in totals.values()), np.zeros(self.size))


class GpuSparseGrid(SparseGridBackend):
    """The GPU operators: :meth:`design` keeps the data on the GPU(s) (or streams them) across the
    products of a CG solve; :meth:`mult` and :meth:`mult_transpose` send the data for one product.

    Parameters
    ----------
    chunk_points : int, default :data:`CHUNK_POINTS`
        Data points per chunk (the unit of streaming and of one kernel launch).
    devices : None, int or sequence, default None
        The GPUs that share the chunks (:func:`compute_devices`): every visible one by default.
    """

    name = "gpu"
    dtypes = (np.dtype(np.float32), np.dtype(np.float64))

    def __init__(self, chunk_points: int = CHUNK_POINTS, devices=None) -> None:
        if chunk_points < 1:
            raise ValueError(f"chunk_points must be positive, got {chunk_points!r}")
        self.chunk_points = int(chunk_points)
        self.devices = compute_devices(devices)

    def __repr__(self) -> str:
        return f"GpuSparseGrid(chunk_points={self.chunk_points}, devices={[str(d) for d in self.devices]})"

    def _design(self, X01: np.ndarray, codes, offsets, modified: bool, dtype) -> DeviceDesign:
        return DeviceDesign(X01, codes, offsets, modified, dtype, chunk_points=self.chunk_points, devices=self.devices)

    def design(self, X01: np.ndarray, grid, *, dtype=None) -> DeviceDesign:
        """B for the points X01 (m, d) in [0, 1]^d on ``grid`` (a parzen.sparsegrid.SparseGrid), on the GPU(s)."""
        return self._design(X01, grid.codes, grid.offsets, grid.modified, dtype)

    def mult_transpose(
        self, X: np.ndarray, codes: np.ndarray, offsets: np.ndarray, alpha: np.ndarray, *, modified: bool, dtype=None
    ) -> np.ndarray:
        """v = B^T alpha at every point; see :meth:`parzen.backends.sparse_grid_reference.NumpySparseGrid.mult_transpose`."""
        return self._design(X, codes, offsets, modified, dtype).mult_transpose(alpha)

    def mult(
        self, X: np.ndarray, codes: np.ndarray, offsets: np.ndarray, v: np.ndarray, *, modified: bool, dtype=None
    ) -> np.ndarray:
        """u = B v over the grid; see :meth:`parzen.backends.sparse_grid_reference.NumpySparseGrid.mult`."""
        return self._design(X, codes, offsets, modified, dtype).mult(v)
