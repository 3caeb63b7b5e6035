"""Triton kernels of the sparse-grid operators (paper 004 in
docs/statistics.md, algorithm 1 and section 4.2.2).

One program takes a block of data points (coordinates stored transposed, (d, m), so each
coordinate loads coalesced) and visits every subspace of the grid; for each subspace it
computes, per point, the one non-zero basis function's value and local index.  The paper's
kernels loop over all grid points instead; for d = 10, level 4 that is 2001 grid points
against 286 subspaces.

A subspace visits only its *active* coordinates, those whose factor is not the constant 1:
with the modified basis, the coordinates above level 1 (at most n - 1 of them in a level-n
grid: 3 of 10 for d = 10, n = 4), otherwise all d.  The loop over them is unrolled
(``ACTIVE`` is a compile-time constant, as the paper's template kernels unroll d); subspaces
with fewer active coordinates are padded with entries whose factor is 1.

Each active entry (s, e) names its coordinate k and three numbers (``scale``, ``half``,
``shift``), so that one branch-free formula covers every basis:

    digit = min(floor(x half), half - 1),  t = scale x - (2 digit + shift)
    phi   = 1 - |t|        (hats, and the level-0 face functions 1 - x and x)
    phi   = 1 - t if digit = 0, 1 + t if digit = half - 1, else 1 - |t|   (MODIFIED)

(hat of level c: scale 2^c, half 2^{c-1}, shift 1; face x = 0: 1, 1, 0; face x = 1: 1, 1, 1;
padding: 0, 1, 0, i.e. the constant 1).  Local index: idx = idx half + digit, over the entries
in coordinate order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._cuda import triton  # PyTorch and Triton, or an ImportError with the install hint

if TYPE_CHECKING:  # a module alias, so that type checkers read tl.constexpr as a type in annotations
    import triton.language as tl
else:
    tl = triton.language


@triton.jit
def _subspace_term(x_ptr, rows, mask, stride, dim_ptr, scale_ptr, half_ptr, shift_ptr, s, ACTIVE: tl.constexpr,
                   MODIFIED: tl.constexpr):
    """Per point of the block: (value, local index) of subspace s's non-zero basis function."""
    value = tl.full(rows.shape, 1.0, x_ptr.dtype.element_ty)
    local = tl.zeros(rows.shape, tl.int32)
    for e in tl.static_range(ACTIVE):
        k = tl.load(dim_ptr + s * ACTIVE + e)
        x = tl.load(x_ptr + k * stride + rows, mask=mask, other=0.0)
        scale = tl.load(scale_ptr + s * ACTIVE + e)
        half = tl.load(half_ptr + s * ACTIVE + e)
        shift = tl.load(shift_ptr + s * ACTIVE + e)
        digit = tl.minimum(tl.floor(x * half), half - 1.0)
        t = scale * x - (2.0 * digit + shift)
        phi = 1.0 - tl.abs(t)
        if MODIFIED:
            phi = tl.where(digit == 0.0, 1.0 - t, tl.where(digit == half - 1.0, 1.0 + t, phi))
        value = value * phi
        local = local * half.to(tl.int32) + digit.to(tl.int32)
    return value, local


@triton.jit
def mult_transpose_kernel(x_ptr, m, stride, dim_ptr, scale_ptr, half_ptr, shift_ptr, offsets_ptr, n_subspaces,
                          alpha_ptr, out_ptr, ACTIVE: tl.constexpr, BLOCK: tl.constexpr, MODIFIED: tl.constexpr):
    """out_j = sum_s alpha[offset_s + idx_s(x_j)] value_s(x_j): B^T alpha (paper 004, multTranspose)."""
    rows = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = rows < m
    total = tl.zeros((BLOCK,), tl.float32 if x_ptr.dtype.element_ty == tl.float32 else tl.float64)
    for s in range(n_subspaces):
        value, local = _subspace_term(x_ptr, rows, mask, stride, dim_ptr, scale_ptr, half_ptr, shift_ptr, s, ACTIVE,
                                      MODIFIED)
        offset = tl.load(offsets_ptr + s)
        total += value * tl.load(alpha_ptr + offset + local, mask=mask, other=0.0)
    tl.store(out_ptr + rows, total, mask=mask)


@triton.jit
def mult_kernel(x_ptr, m, stride, dim_ptr, scale_ptr, half_ptr, shift_ptr, offsets_ptr, n_subspaces, v_ptr,
                partial_ptr, n_grid, ACTIVE: tl.constexpr, BLOCK: tl.constexpr, ONEHOT: tl.constexpr,
                MODIFIED: tl.constexpr):
    """partial[program, g] = sum over the program's points j of phi_g(x_j) v_j: B v (paper 004, mult).

    Per subspace the block's contributions are summed by local index in registers (a one-hot
    reduction over ONEHOT >= the largest subspace size slots) and stored once per program; the
    wrapper adds the programs' rows.  ONEHOT = 0: each point adds its term atomically instead
    (grids whose subspaces are too large for the one-hot reduction).
    """
    program = tl.program_id(0)
    rows = program * BLOCK + tl.arange(0, BLOCK)
    mask = rows < m
    v = tl.load(v_ptr + rows, mask=mask, other=0.0)
    for s in range(n_subspaces):
        value, local = _subspace_term(x_ptr, rows, mask, stride, dim_ptr, scale_ptr, half_ptr, shift_ptr, s, ACTIVE,
                                      MODIFIED)
        offset = tl.load(offsets_ptr + s)
        terms = value * v
        if ONEHOT > 0:
            size = tl.load(offsets_ptr + s + 1) - offset
            slots = tl.arange(0, ONEHOT)
            sums = tl.sum(tl.where(local[:, None] == slots[None, :], terms[:, None], 0.0), axis=0)
            tl.store(partial_ptr + program * n_grid + offset + slots, sums, mask=slots < size)
        else:
            tl.atomic_add(partial_ptr + offset + local, terms, mask=mask)
