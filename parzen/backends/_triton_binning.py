"""Triton kernel of the gpu backend's linear binning: one program per block of rows, float64 atomics.

The shares are those of the float64 reference :func:`parzen.binned.grid.linear_bin` (Wand 1994,
"Fast computation of multivariate kernel estimators", J. Comput. Graph. Statist. 3(4), 433-445,
section 2): a row at node position p_a = (x_a - low_a) / (high_a - low_a) * (m_a - 1) on each axis
(in this order, so that no float64 rounding moves a point of [low, high] outside [0, m - 1]) gives
w * prod_a (1 - f_a or f_a) to the 2^d nodes of its cell, f_a = p_a - k_a, k_a = min(floor(p_a), m_a - 2).

The rows are read in the type they were sent in (float32 data travel as float32) and converted
in registers to the compute type, float64 by default: the positions and shares are then the
reference's to rounding, whatever the input type.  Each share is added to the grid by a float64
atomic add, so the counts never lose the small shares that a float32 sum of 2^24 or more would.
Programs add into ``replicas`` copies of the grid (program p into copy p mod replicas), which
the caller sums: fewer programs compete for one address.  The first row outside the grid's box
(NaN included) is recorded by an atomic minimum, and its shares are left out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._cuda import triton

if TYPE_CHECKING:
    import triton.language as tl
else:
    tl = triton.language

#: "No row outside the box" in the first-bad-row slot (the largest int64).
NO_BAD_ROW = (1 << 63) - 1
_NO_BAD_ROW = tl.constexpr(NO_BAD_ROW)


@triton.jit
def _axis(x_ptr, geometry_ptr, rows, mask, A: tl.constexpr, D: tl.constexpr, COMPUTE: tl.constexpr,
          SLACK: tl.constexpr):
    """The first node k, the fraction f and the inside flag of axis A for each row.

    ``geometry`` holds the grid's lows, widths (high - low) and last nodes (m - 1) in float64,
    four of each.  With SLACK > 0 (float32 positions) a row within SLACK nodes below 0 or SLACK
    relative above m - 1 counts as inside and is moved onto the face.
    """
    x = tl.load(x_ptr + rows * D + A, mask=mask, other=0.0).to(COMPUTE)
    low = tl.load(geometry_ptr + A).to(COMPUTE)
    width = tl.load(geometry_ptr + 4 + A).to(COMPUTE)
    last = tl.load(geometry_ptr + 8 + A).to(COMPUTE)
    p = (x - low) / width * last
    inside = (p >= -SLACK) & (p <= last * (1.0 + SLACK))
    if SLACK > 0:
        p = tl.minimum(tl.maximum(p, 0.0), last)
    k = tl.minimum(tl.floor(p), last - 1.0)
    return k.to(tl.int64), p - k, inside


@triton.jit
def _corner(share, offset, k, f, stride, BIT: tl.constexpr):
    """One axis's factor of a corner's share (f or 1 - f) and its node offset."""
    if BIT:
        return share * f, offset + (k + 1) * stride
    else:
        return share * (1.0 - f), offset + k * stride


@triton.jit
def linear_bin_kernel(x_ptr, w_ptr, counts_ptr, first_bad_ptr, geometry_ptr, n, row_offset,
                      stride0, stride1, stride2, stride3, nodes, replicas,
                      D: tl.constexpr, WEIGHTED: tl.constexpr, COMPUTE: tl.constexpr,
                      SLACK: tl.constexpr, BLOCK: tl.constexpr):
    """Add the linear-binning shares of BLOCK rows of x (n, D) into one replica of the grid.

    ``counts`` is (replicas, nodes) float64, the grid flattened in C order with the given node
    strides; ``first_bad`` an int64 that receives the smallest ``row_offset + row`` outside the
    box.
    """
    pid = tl.program_id(0)
    rows = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = rows < n
    k0, f0, inside = _axis(x_ptr, geometry_ptr, rows, mask, 0, D, COMPUTE, SLACK)
    if D >= 2:
        k1, f1, ok1 = _axis(x_ptr, geometry_ptr, rows, mask, 1, D, COMPUTE, SLACK)
        inside = inside & ok1
    if D >= 3:
        k2, f2, ok2 = _axis(x_ptr, geometry_ptr, rows, mask, 2, D, COMPUTE, SLACK)
        inside = inside & ok2
    if D >= 4:
        k3, f3, ok3 = _axis(x_ptr, geometry_ptr, rows, mask, 3, D, COMPUTE, SLACK)
        inside = inside & ok3
    if WEIGHTED:
        w = tl.load(w_ptr + rows, mask=mask, other=0.0).to(COMPUTE)
    else:
        w = tl.full([BLOCK], 1.0, COMPUTE)
    valid = mask & inside
    bad = tl.where(mask & (inside == 0), rows + row_offset, _NO_BAD_ROW)
    tl.atomic_min(first_bad_ptr, tl.min(bad, axis=0))
    grid = counts_ptr + (pid % replicas).to(tl.int64) * nodes
    for corner in tl.static_range(1 << D):
        share = tl.full([BLOCK], 1.0, COMPUTE)
        offset = tl.zeros([BLOCK], tl.int64)
        share, offset = _corner(share, offset, k0, f0, stride0, (corner >> (D - 1)) & 1)
        if D >= 2:
            share, offset = _corner(share, offset, k1, f1, stride1, (corner >> (D - 2)) & 1)
        if D >= 3:
            share, offset = _corner(share, offset, k2, f2, stride2, (corner >> (D - 3)) & 1)
        if D >= 4:
            share, offset = _corner(share, offset, k3, f3, stride3, (corner >> (D - 4)) & 1)
        tl.atomic_add(grid + offset, (share * w).to(tl.float64), mask=valid, sem="relaxed")
