"""Operands of the tensor-core Gram-form Gaussian sums (issue 20, item 5; docs/algorithms.md).

The exponent of a Gaussian term in base 2 is e = log2 w - |q - z|^2 (the points scaled as
``gpu._DeviceKernelSum`` scales them).  Written as one matrix product e = a(q) . b(z) of an
augmented query row a and data column b, a tile of exponents is one ``tl.dot`` on the TF32
tensor cores and the kernel (``gaussian_gram_tc_sum_kernel``) does one exp2 and one addition
per pair.  TF32 keeps 11 significant bits, so every coordinate is split into TF32 pieces in
float64 here, and the norms and log2 w enter as pieces times columns of ones.  Two layouts:

- ``"tf32x3"``: x = x_hi + x_lo (round to nearest TF32 twice), e = 2 q_hi.z_lo + 2 q_lo.z_hi
  + norm pieces + 2 q_hi.z_hi in one accumulator: 3d + 8 columns.  The tensor cores' float32
  accumulator rounds at the size of the partial sums (|q|^2 + |z|^2, not e), as float32
  multiply-adds do.
- ``"exact"``: x_hi on a fixed grid g (a power of two, at most ``GRID_STEPS`` steps per
  coordinate bound, so that 2 q_hi.z_hi - |q_hi|^2 - |z_hi|^2 is an integer times g^2 below
  2^24 g^2: every partial sum of that product is exact in float32) and x - x_hi = x_l1 + x_l2
  in two TF32 pieces.  The exact part E = -|q_hi - z_hi|^2 and the small rest C (the cross
  terms 2 q_hi.z_l + 2 q_l.z_hi + 2 q_l1.z_l1 and per-point pieces, all of the size of g |x|)
  go to two accumulators, so the only rounding of the large terms is the one of E + C: 6d + 16
  columns.

Each layout is a list of segments (powers of two, at least 8 columns): those of the first
accumulator, then those of the second (``split``) or of the same one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ._cuda import torch

#: Exponent of padded and zero-weight data points: their terms are exactly 0.
PAD_EXPONENT = -65536.0
#: Points made into operand columns at a time (bounds the float64 temporaries).
BUILD_POINTS = 1 << 20
#: Grid steps per coordinate bound of the "exact" layout's high parts, by padded dimension: the
#: largest I with 4 d I^2 < 2^24 (|2 q.z| + |q|^2 + |z|^2 <= 4 d I^2 grid units).
GRID_STEPS = {16: 512, 32: 256, 64: 128, 128: 64}


@dataclass(frozen=True)
class GramLayout:
    """Column segments of one layout: ``first`` go to the first accumulator, ``second`` to the
    second when ``split``, else on into the first."""

    name: str
    first: tuple[int, ...]
    second: tuple[int, ...]
    split: bool

    @property
    def columns(self) -> int:
        return sum(self.first) + sum(self.second)


def layout(name: str, dims: int) -> GramLayout:
    """The segments of layout ``name`` ("tf32x3" or "exact") for ``dims`` coordinate rows (a
    power of two of at least 16).

    Raises
    ------
    ValueError
        For another name.
    """
    if name == "tf32x3":
        return GramLayout(name, (2 * dims, 8), (dims,), split=False)
    if name == "exact":
        return GramLayout(name, (4 * dims, dims, 8), (dims, 8), split=True)
    raise ValueError(f"unknown Gram layout {name!r}: use 'tf32x3' or 'exact'")


def tf32(x: torch.Tensor) -> torch.Tensor:
    """``x`` (float64) rounded to TF32 (10 fraction bits; ties away from zero), as float64."""
    bits = x.to(torch.float32).view(torch.int32)
    return ((bits + 0x1000) & -0x2000).view(torch.float32).to(torch.float64)


def _pieces(x: torch.Tensor, count: int) -> list[torch.Tensor]:
    """``count`` TF32 pieces of ``x`` whose sum is x to about 11 * count bits."""
    out = []
    for _ in range(count):
        piece = tf32(x)
        out.append(piece)
        x = x - piece
    return out


def grid_step(bound: float, dims: int) -> float:
    """The "exact" layout's grid: the smallest power of two g with ``bound`` <= GRID_STEPS g."""
    steps = GRID_STEPS.get(dims, 64)
    return 2.0 ** math.ceil(math.log2(max(bound, 1e-30) / steps))


def _split(points: torch.Tensor, name: str, grid: float) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """(high part, TF32 pieces of the rest) of (dims, n) float64 ``points``."""
    if name == "tf32x3":
        high = tf32(points)
        return high, [tf32(points - high)]
    high = torch.round(points / grid) * grid
    return high, _pieces(points - high, 2)


def data_operand(z: torch.Tensor, log2_w: torch.Tensor, name: str, grid: float) -> torch.Tensor:
    """The data side b(z): (columns, n) float32, TF32-exact values.

    Parameters
    ----------
    z : torch.Tensor of shape (dims, n), float64
        Scaled, centred data (pads anywhere).
    log2_w : torch.Tensor of shape (n,), float64
        log2 of the weights, :data:`PAD_EXPONENT` for pads and zero weights.
    name : str
        The layout.
    grid : float
        The "exact" layout's grid (:func:`grid_step`).

    Returns
    -------
    torch.Tensor of shape (layout(name, dims).columns, n), float32
    """
    out = torch.empty((layout(name, z.shape[0]).columns, z.shape[1]), dtype=torch.float32, device=z.device)
    for start in range(0, z.shape[1], BUILD_POINTS):
        part = slice(start, start + BUILD_POINTS)
        out[:, part] = _data_columns(z[:, part], log2_w[part], name, grid)
    return out


def _data_columns(z: torch.Tensor, log2_w: torch.Tensor, name: str, grid: float) -> torch.Tensor:
    n = z.shape[1]
    high, rest = _split(z, name, grid)
    ones, zeros = torch.ones((3, n), dtype=z.dtype, device=z.device), torch.zeros((2, n), dtype=z.dtype, device=z.device)
    padded = log2_w <= PAD_EXPONENT
    if name == "tf32x3":
        kept = high + rest[0]
        own = torch.where(padded, PAD_EXPONENT, log2_w - (kept * kept).sum(dim=0))
        rows = [rest[0], high, ones, torch.stack(_pieces(own, 3)), zeros, high]
    else:
        low = rest[0] + rest[1]
        own = torch.where(padded, PAD_EXPONENT, log2_w - (2.0 * high * low + low * low).sum(dim=0))
        norm = _pieces(-(high * high).sum(dim=0), 2)
        rows = [rest[0], rest[1], high, high, rest[0], ones, torch.stack(_pieces(own, 3)), zeros,
                high, ones[:2], torch.stack(norm), torch.zeros((4, n), dtype=z.dtype, device=z.device)]
    return torch.cat(rows).to(torch.float32)


def query_operand(q: torch.Tensor, name: str, grid: float) -> torch.Tensor:
    """The query side a(q): (m, columns) float32, TF32-exact values, for (dims, m) float64
    queries ``q`` scaled and centred as the data; see :func:`data_operand`."""
    out = torch.empty((q.shape[1], layout(name, q.shape[0]).columns), dtype=torch.float32, device=q.device)
    for start in range(0, q.shape[1], BUILD_POINTS):
        part = slice(start, start + BUILD_POINTS)
        out[part] = _query_columns(q[:, part], name, grid).T
    return out


def _query_columns(q: torch.Tensor, name: str, grid: float) -> torch.Tensor:
    m = q.shape[1]
    high, rest = _split(q, name, grid)
    ones, zeros = torch.ones((3, m), dtype=q.dtype, device=q.device), torch.zeros((2, m), dtype=q.dtype, device=q.device)
    if name == "tf32x3":
        kept = high + rest[0]
        rows = [2.0 * high, 2.0 * rest[0], torch.stack(_pieces(-(kept * kept).sum(dim=0), 3)), ones, zeros, 2.0 * high]
    else:
        low = rest[0] + rest[1]
        own = _pieces(-(2.0 * high * low + low * low).sum(dim=0), 3)
        norm = _pieces(-(high * high).sum(dim=0), 2)
        rows = [2.0 * high, 2.0 * high, 2.0 * rest[0], 2.0 * rest[1], 2.0 * rest[0], torch.stack(own), ones, zeros,
                2.0 * high, torch.stack(norm), ones[:2], torch.zeros((4, m), dtype=q.dtype, device=q.device)]
    return torch.cat(rows).to(torch.float32)
