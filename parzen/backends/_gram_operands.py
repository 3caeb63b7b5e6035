"""Operands of the tensor-core Gram-form Gaussian sums (issue 20, item 5; docs/algorithms.md).

The exponent of a Gaussian term in base 2 is -|q - z|^2 (the points scaled as
``gpu._DeviceKernelSum`` scales them).  Written as one product -|q - z|^2 = a(q) . b(z) of an
augmented query row a and data column b, a tile of exponents is a float16 matrix product on the
tensor cores (float32 accumulators), and the kernel (``gaussian_gram_tc_sum_kernel``) does one
exp2, one addition and one multiply-add (the weight) per pair.

float16 holds 11 significant bits, so each coordinate x is split in float64 into fixed-point
parts: x_hi on a grid of step g (a power of two), x_l1 on a grid of g 2^-11 and x_l2 on a grid of
g 2^-22, each an integer of at most 11 bits times a power of two (the columns of x_l2 are scaled by
2^11 and their partners by 2^-11, the norm pieces by :data:`NORM_SCALE`, so that float16 holds every
operand exactly).  The norms enter as float16 pieces times columns of ones.  The
product has two parts, each in its own float32 accumulator:

- E = 2 q_hi.z_hi - |q_hi|^2 - |z_hi|^2 = -|q_hi - z_hi|^2: every partial sum, in any order, is an
  integer times g^2 of size at most 2 |q_hi| |z_hi| + |q_hi|^2 + |z_hi|^2 <= 4 R^2 < 2^24 g^2 for
  norms up to R = :data:`NORM_STEPS` g, so float32 adds E exactly;
- C = 2 q_hi.z_l + 2 q_l.z_hi + 2 q_l1.z_l1 + (per-point pieces -2 q_hi.q_l - |q_l|^2 and
  -2 z_hi.z_l - |z_l|^2), all of the size of g |x|, which float32 rounds finely.  (With log2 w
  among them, on the H100, the sums of weights 2^-20 erred by 1.4e-2: the weights are kept out
  of the product and multiply the terms instead.)

The only rounding of the large terms is then the one of E + C.  The terms left out,
2 (q_l1.z_l2 + q_l2.z_l1 + q_l2.z_l2), are at most d g^2 2^-11 in all (:func:`omitted_bound`);
the backend takes this form only where that is at most 2^-16 (:func:`usable`; a term's relative
error 1.1e-5 at worst, far less in practice: benchmarks/results/gpu_kde_multivariate.md).

Columns, for d coordinates: the 5d + 6 of C (4d cross terms, d for 2 q_l1.z_l1, 6 norm pieces
and their ones) filled with zeros to a sum of at most three powers of two of at least 16 (each
segment one ``tl.dot``; Triton's smallest has 16 columns and its sizes are powers of two), then
the d + 4 of E likewise in at most two segments: d = 2 takes 16 + 16 columns, d = 16 128, d = 32
224 (:func:`layout`).  Queries
whose norm exceeds R are moved in along their ray to norm R, still at least the reach beyond
every data point (their terms are 0 either way), so that float16 holds their parts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ._cuda import torch

#: Exponent of padded and zero-weight data points: their terms are exactly 0 (float16 holds it).
PAD_EXPONENT = -32768.0
#: Triton's smallest dot: every segment is a power of two of at least this many columns.
SMALLEST_SEGMENT = 16
#: The most coordinates the form takes (:data:`NORM_STEPS` is chosen for them).
MAX_DIMS = 64
#: Points made into operand columns at a time (bounds the float64 temporaries).
BUILD_POINTS = 1 << 20
#: Grid steps per bound R of the norms: 4 (R/g + sqrt(d) / 2)^2 < 2^24 for d <= 64, and every
#: high coordinate an integer of at most 11 bits.
NORM_STEPS = 2040
#: The norm pieces are scaled by this, their columns of ones by its inverse (float16 range).
NORM_SCALE = 2.0**-8
#: The largest sum of the left-out terms (d g^2 2^-11) for which the form is used.
OMITTED_LIMIT = 2.0**-16


@dataclass(frozen=True)
class GramLayout:
    """Column segments: ``first`` (three) go to the first accumulator (C), ``second`` (two) to the
    second (E); each a power of two of at least 16, or 0 (no segment; never the first of each)."""

    first: tuple[int, int, int]
    second: tuple[int, int]

    @property
    def columns(self) -> int:
        return sum(self.first) + sum(self.second)


def _segments(rows: int, count: int, fine: bool) -> tuple[int, ...]:
    """The fewest columns of at least ``rows`` that ``count`` segments (powers of two of at least
    :data:`SMALLEST_SEGMENT`, or 0) hold, as those segments, largest first: the binary digits of
    the column count, with ``fine`` the smallest segment above the least split in halves while
    segments are left (at a power of two d of at least 16 this puts the norm pieces in a segment of
    their own, as 4d | d | 16 and d | 16)."""
    units = -(-rows // SMALLEST_SEGMENT)
    while units.bit_count() > count:
        units += 1
    parts = [1 << bit for bit in range(units.bit_length() - 1, -1, -1) if units >> bit & 1]
    while fine and len(parts) < count and max(parts) > 1:
        smallest = min(part for part in parts if part > 1)
        parts.remove(smallest)
        parts = sorted([*parts, smallest // 2, smallest // 2], reverse=True)
    return tuple([SMALLEST_SEGMENT * part for part in parts] + [0] * (count - len(parts)))


def layout(dims: int, *, fine: bool = True) -> GramLayout:
    """The segments for ``dims`` coordinates: C's 5 dims + 6 rows in three, E's dims + 4 in two
    (``fine``: see :func:`_segments`; either way the same operands, of the same column count).

    The H100's float16 products add the terms of one product's columns in fewer bits than
    float32 before the accumulator: on the same operands the coarse segments erred by 8.3e-6 at
    d = 4 (one segment of 32 columns for C) and 3.6e-5 at d = 24 (one of 128), the fine ones by 2.2e-6
    and 2.8e-6 (benchmarks/gpu_gram_tc_sweep.py, n = 2^20, m = 131072), so the fine ones are the
    default."""
    first, second = _segments(5 * dims + 6, 3, fine), _segments(dims + 4, 2, fine)
    return GramLayout((first[0], first[1], first[2]), (second[0], second[1]))


def grid_step(bound: float) -> float:
    """The grid: the smallest power of two g with ``bound`` (the largest norm) <= NORM_STEPS g."""
    return 2.0 ** math.ceil(math.log2(max(bound, 1e-30) / NORM_STEPS))


def omitted_bound(dims: int, grid: float) -> float:
    """The largest sum of the left-out terms 2 (q_l1.z_l2 + q_l2.z_l1 + q_l2.z_l2): d g^2 2^-11."""
    return dims * grid * grid * 2.0**-11


def usable(dims: int, grid: float) -> bool:
    """Whether the left-out terms stay within :data:`OMITTED_LIMIT`: g <= 1/32 for d <= 32, i.e.
    data norms up to about 48 scaled units (56 bandwidths) from their mean, g <= 1/64 for d = 64
    (about 16 scaled units beyond the 16 of the queries' reach); wider data take the former kernel."""
    return omitted_bound(dims, grid) <= OMITTED_LIMIT


def half(x: torch.Tensor) -> torch.Tensor:
    """``x`` (float64) rounded to float16, as float64."""
    return x.to(torch.float16).to(torch.float64)


def _pieces(x: torch.Tensor, count: int) -> list[torch.Tensor]:
    """``count`` float16 pieces of ``x`` whose sum is x to about 11 count bits (or to 2^-25,
    float16's smallest step)."""
    out = []
    for _ in range(count):
        piece = half(x)
        out.append(piece)
        x = x - piece
    return out


def _group(size: int, blocks: list[torch.Tensor], pieces: list[torch.Tensor]) -> torch.Tensor:
    """The (d, n) ``blocks`` and the (n,) ``pieces`` stacked, filled with zero rows to ``size``."""
    stacked = torch.cat([*blocks, torch.stack(pieces)])
    return torch.cat([stacked, stacked.new_zeros((size - stacked.shape[0], stacked.shape[1]))])


def _split(points: torch.Tensor, grid: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(x_hi, x_l1, x_l2) of (dims, n) float64 ``points`` on the grids g, g 2^-11, g 2^-22."""
    high = torch.round(points / grid) * grid
    unit = grid * 2.0**-11
    first = torch.round((points - high) / unit) * unit
    fine = unit * 2.0**-11
    return high, first, torch.round((points - high - first) / fine) * fine


def data_operand(z: torch.Tensor, kept: torch.Tensor, grid: float) -> torch.Tensor:
    """The data side b(z), float16.

    Parameters
    ----------
    z : torch.Tensor of shape (dims, n), float64
        Scaled, centred data (pads anywhere), of norms at most NORM_STEPS ``grid``; dims at most
        :data:`MAX_DIMS`.
    kept : torch.Tensor of shape (n,), bool
        False for pads and zero weights (exponent :data:`PAD_EXPONENT`).
    grid : float
        The grid (:func:`grid_step`).

    Returns
    -------
    torch.Tensor of shape (layout(dims).columns, n), float16
    """
    out = torch.empty((layout(z.shape[0]).columns, z.shape[1]), dtype=torch.float16, device=z.device)
    for start in range(0, z.shape[1], BUILD_POINTS):
        part = slice(start, start + BUILD_POINTS)
        out[:, part] = _data_columns(z[:, part], kept[part], grid)
    return out


def _data_columns(z: torch.Tensor, kept: torch.Tensor, grid: float) -> torch.Tensor:
    high, first, second = _split(z, grid)
    low = first + second
    own = torch.where(kept, -(2.0 * high * low + low * low).sum(dim=0), PAD_EXPONENT)
    ones = torch.ones_like(own)
    segments = layout(z.shape[0])
    rows = [_group(sum(segments.first), [first, second * 2.0**11, high, high * 2.0**-11, first], [ones, ones, ones, *_pieces(own, 3)]),
            _group(sum(segments.second), [high], [ones / NORM_SCALE, ones / NORM_SCALE, *_pieces(-(high * high).sum(dim=0) * NORM_SCALE, 2)])]
    return torch.cat(rows).to(torch.float16)


def query_operand(q: torch.Tensor, grid: float) -> torch.Tensor:
    """The query side a(q), (m, columns) float16, for (dims, m) float64 queries ``q`` scaled and
    centred as the data; see :func:`data_operand`."""
    out = torch.empty((q.shape[1], layout(q.shape[0]).columns), dtype=torch.float16, device=q.device)
    for start in range(0, q.shape[1], BUILD_POINTS):
        part = slice(start, start + BUILD_POINTS)
        out[part] = _query_columns(q[:, part], grid).T
    return out


def _query_columns(q: torch.Tensor, grid: float) -> torch.Tensor:
    reach = NORM_STEPS * grid
    norms = torch.linalg.vector_norm(q, dim=0)
    q = q * torch.where(norms > reach, reach / norms.clamp(min=reach), 1.0)  # far queries: in along their ray
    high, first, second = _split(q, grid)
    low = first + second
    ones = torch.ones_like(norms)
    own = _pieces(-(2.0 * high * low + low * low).sum(dim=0), 3)
    norm = _pieces(-(high * high).sum(dim=0) * NORM_SCALE, 2)
    segments = layout(q.shape[0])
    rows = [_group(sum(segments.first), [2.0 * high, 2.0 * high * 2.0**-11, 2.0 * first, 2.0 * second * 2.0**11, 2.0 * first],
                   [*own, ones, ones, ones]),
            _group(sum(segments.second), [2.0 * high], [*norm, ones / NORM_SCALE, ones / NORM_SCALE])]
    return torch.cat(rows).to(torch.float16)
