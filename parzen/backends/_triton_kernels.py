"""Triton kernels of the GPU backend: one program per (row block, group of column blocks).

Each program keeps its accumulator tiles in registers across its column blocks (one tile, or
one per scale of a batch for LSCV) and reduces them once at the end (a tree sum), so the work per pair is only the pair's own arithmetic; the
programs' partial sums are combined in float64 by the host wrapper (:mod:`parzen.backends.gpu`).

Tiling of the triangle i < j (paper 000 in docs/statistics.md, section 5.4): with ``TRIANGLE`` the row and column
arrays are the same and a program of row block ``bi`` visits column blocks ``bj >= bi``,
masking j <= i only on the diagonal block; without it (two different chunks of data streamed
through the GPU) it visits every column block of its group.  Rows beyond n are padded by the
wrapper with points so far from everything that their terms are exactly 0 (see ``gpu._padded``), so
interior tiles need no masks.

Exponentials use ``exp2`` with log2(e) folded into the scales by the wrapper; in float32 on a
GPU that is one MUFU instruction with flush-to-zero (``_exp2``), which drops terms below
1.2e-38, far under the sums' float32 rounding.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._cuda import triton  # PyTorch and Triton, or an ImportError with the install hint

if TYPE_CHECKING:  # a module alias, so that type checkers read tl.constexpr as a type in annotations
    import triton.language as tl
else:
    tl = triton.language


@triton.jit
def _exp2(x, FAST: tl.constexpr):
    """2^x.  FAST (float32 on a GPU): one ``ex2.approx.ftz`` instruction, whose results below
    float32's smallest normal number (terms under 1.2e-38) are 0; else Triton's exp2."""
    if FAST:
        return tl.inline_asm_elementwise("ex2.approx.ftz.f32 $0, $1;", "=f,f", [x], dtype=tl.float32, is_pure=True, pack=1)
    else:
        return tl.exp2(x)


@triton.jit
def _column_range(bi, group, n_col_blocks, TRIANGLE: tl.constexpr, GROUP: tl.constexpr):
    first = group * GROUP
    if TRIANGLE:
        first += bi
    return first, tl.minimum(first + GROUP, n_col_blocks)


@triton.jit
def _polynomial(t, c0, c1, c2, c3, c4, DEGREE: tl.constexpr):
    """c0 + c1 t + ... + c_DEGREE t^DEGREE by Horner's rule."""
    if DEGREE == 4:
        p = (((c4 * t + c3) * t + c2) * t + c1) * t + c0
    elif DEGREE == 3:
        p = ((c3 * t + c2) * t + c1) * t + c0
    elif DEGREE == 2:
        p = (c2 * t + c1) * t + c0
    elif DEGREE == 1:
        p = c1 * t + c0
    else:
        p = c0 + 0.0 * t
    return p


@triton.jit
def _band(group, start, end, GROUP: tl.constexpr):
    """The column blocks [first, last) of program ``group`` in a row block's band [start, end)."""
    first = start + group * GROUP
    return first, tl.minimum(first + GROUP, end)


@triton.jit
def hermite_pairs_kernel(
    x_rows, x_cols, col_start, col_end, n_cols, constants, out,
    TRIANGLE: tl.constexpr, DEGREE: tl.constexpr, BLOCK: tl.constexpr, GROUP: tl.constexpr, FAST: tl.constexpr,
):
    """out[bi, group] = sum over the program's pairs of P(t) 2^-t, t = (x_i - x_j)^2.

    The wrapper scales x so that t is the Hermite argument (kappa ((x_i - x_j) / g)^2).

    ``constants`` = (c0, ..., c4, s_max) in the data's float type (a Python float
    argument would be passed as float32, which rounds them in float64 runs);
    P(t) = c0 + c1 t + ... + c_DEGREE t^DEGREE; t is clamped at s_max (where 2^-t is 0) so
    that P never overflows.  Row block bi visits the column blocks from ``col_start[bi]`` (bi
    itself for the triangle) to before ``col_end[bi]`` (the rest underflow to 0; see
    ``gpu._reachable_column_blocks``); columns j >= ``n_cols`` add
    nothing (pads that the caller did not space apart).  (Not named ``params``: Triton 3.6's
    argument binder uses that name.)
    """
    c0, c1, c2 = tl.load(constants), tl.load(constants + 1), tl.load(constants + 2)
    c3, c4 = tl.load(constants + 3), tl.load(constants + 4)
    s_max = tl.load(constants + 5)
    bi = tl.program_id(0)
    group = tl.program_id(1)
    first, last = _band(group, tl.load(col_start + bi), tl.load(col_end + bi), GROUP)
    offs = tl.arange(0, BLOCK)
    xi = tl.load(x_rows + bi * BLOCK + offs)
    acc = tl.zeros((BLOCK, BLOCK), dtype=xi.dtype)
    for bj in range(first, last):
        xj = tl.load(x_cols + bj * BLOCK + offs)
        diff = xi[:, None] - xj[None, :]
        t = tl.minimum(diff * diff, s_max)
        term = _polynomial(t, c0, c1, c2, c3, c4, DEGREE) * _exp2(-t, FAST)
        if TRIANGLE:  # noqa: SIM102  (a compile-time branch; Triton cannot mix it with a runtime "and")
            if bj == bi:
                term = tl.where(offs[None, :] > offs[:, None], term, 0.0)
        if (bj + 1) * BLOCK > n_cols:
            term = tl.where(bj * BLOCK + offs[None, :] < n_cols, term, 0.0)
        acc += term
    tl.store(out + bi * tl.num_programs(1) + group, tl.sum(tl.sum(acc, axis=1), axis=0).to(tl.float64))


@triton.jit
def _squared_distances(y_rows, y_cols, bi, bj, n_rows_padded, n_cols_padded, offs, DIM: tl.constexpr, BLOCK: tl.constexpr):
    """(BLOCK, BLOCK) tile of |y_i - y_j|^2; y_* are (DIM, n_padded) row-major.

    DIM is a compile-time constant, so the loop over coordinates is unrolled and the loads of
    all coordinates can be issued before the arithmetic that needs them.
    """
    s = tl.zeros((BLOCK, BLOCK), dtype=y_rows.dtype.element_ty)
    for c in tl.static_range(DIM):
        yi = tl.load(y_rows + c * n_rows_padded + bi * BLOCK + offs)
        yj = tl.load(y_cols + c * n_cols_padded + bj * BLOCK + offs)
        diff = yi[:, None] - yj[None, :]
        s += diff * diff
    return s


@triton.jit
def _gram_distances(minus2_yi, norm_i, y_cols, bj, n_cols_padded, offs, DIM: tl.constexpr):
    """(BLOCK, BLOCK) tile of |y_i|^2 + |y_j|^2 - 2 y_i.y_j (``minus2_yi`` = -2 y_i, (BLOCK, DIM)).

    The products are one ``tl.dot`` in full float32 (``ieee``: TF32 tensor cores lose 2e-2 of
    the sums, their 3-pass form 4e-6; H100, n = 16384, d = 16: this form 0.22 ms per g(H), the
    plain one 0.34 ms).  Rounding can make s slightly negative for coincident points; it is
    clamped at 0.
    """
    c = tl.arange(0, DIM)
    yj = tl.load(y_cols + c[:, None] * n_cols_padded + bj * offs.shape[0] + offs[None, :])
    s = tl.dot(minus2_yi, yj, input_precision="ieee") + norm_i[:, None] + tl.sum(yj * yj, axis=0)[None, :]
    return tl.maximum(s, 0.0)


@triton.jit
def lscv_one_scale_kernel(
    y_rows, y_cols, n_rows_padded, n_cols_padded, n_col_blocks, n_cols, a, out,
    DIM: tl.constexpr, TRIANGLE: tl.constexpr, BLOCK: tl.constexpr, GROUP: tl.constexpr, FAST: tl.constexpr,
):
    """out[program] = (sum 2^(-a s), sum 2^(-2 a s)) over the program's pairs, for one scale a.

    LSCV_H's g(H).  s = |y_i - y_j|^2 in the Gram form |y_i|^2 + |y_j|^2 - 2 y_i.y_j: one
    matrix product per tile (DIM a multiple of 16, the added coordinates 0), i.e. DIM
    multiply-adds per pair instead of DIM subtractions and DIM multiply-adds (float32 only).
    Columns j >= ``n_cols`` add nothing (pads; in the triangle pad rows meet only pad columns).
    """
    bi = tl.program_id(0)
    group = tl.program_id(1)
    first, last = _column_range(bi, group, n_col_blocks, TRIANGLE, GROUP)
    offs = tl.arange(0, BLOCK)
    c = tl.arange(0, DIM)
    yi = tl.load(y_rows + c[None, :] * n_rows_padded + bi * BLOCK + offs[:, None])
    norm_i = tl.sum(yi * yi, axis=1)
    minus2_yi = -2.0 * yi
    a_value = tl.load(a)
    acc1 = tl.zeros((BLOCK, BLOCK), dtype=yi.dtype)
    acc2 = tl.zeros((BLOCK, BLOCK), dtype=yi.dtype)
    for bj in range(first, last):
        s = _gram_distances(minus2_yi, norm_i, y_cols, bj, n_cols_padded, offs, DIM)
        if TRIANGLE:  # noqa: SIM102  (a compile-time branch; Triton cannot mix it with a runtime "and")
            if bj == bi:  # i >= j: an infinite distance gives 2^-inf = 0
                s = tl.where(offs[None, :] > offs[:, None], s, float("inf"))
        if (bj + 1) * BLOCK > n_cols:  # pad columns the caller did not space apart
            s = tl.where(bj * BLOCK + offs[None, :] < n_cols, s, float("inf"))
        e = _exp2(-a_value * s, FAST)
        acc1 += e
        acc2 += e * e
    slot = out + (bi * tl.num_programs(1) + group) * 2
    tl.store(slot, tl.sum(tl.sum(acc1, axis=1), axis=0).to(tl.float64))
    tl.store(slot + 1, tl.sum(tl.sum(acc2, axis=1), axis=0).to(tl.float64))


@triton.jit
def lscv_pairs_kernel(
    y_rows, y_cols, n_rows_padded, n_cols_padded, n_col_blocks, n_cols, a, n_a, out,
    DIM: tl.constexpr, TRIANGLE: tl.constexpr, BLOCK: tl.constexpr, GROUP: tl.constexpr, SCALES: tl.constexpr,
    FAST: tl.constexpr,
):
    """out[program, k] = (sum 2^(-a_k s), sum 2^(-2 a_k s)) over the program's pairs.

    s = |y_i - y_j|^2.  The third grid axis takes the scales ``SCALES`` at a time (``a`` is
    padded to a multiple of SCALES): a (SCALES, BLOCK, BLOCK) accumulator stays in registers
    across the program's column blocks and is reduced once, so s costs DIM subtractions and
    multiply-adds per pair per batch and each scale one exp2 per pair.  Splitting the scales
    over programs keeps a small n (few tiles) from leaving the GPU idle.  (The Gram form of
    :func:`lscv_one_scale_kernel` ran slower here: the tensor of products does not broadcast
    over the scales without a layout change per tile.)  Columns j >= ``n_cols`` add nothing.
    """
    bi = tl.program_id(0)
    group = tl.program_id(1)
    program = bi * tl.num_programs(1) + group
    first, last = _column_range(bi, group, n_col_blocks, TRIANGLE, GROUP)
    offs = tl.arange(0, BLOCK)
    k = tl.program_id(2) * SCALES + tl.arange(0, SCALES)
    a_batch = tl.load(a + k)
    acc1 = tl.zeros((SCALES, BLOCK, BLOCK), dtype=a_batch.dtype)
    acc2 = tl.zeros((SCALES, BLOCK, BLOCK), dtype=a_batch.dtype)
    for bj in range(first, last):
        s = _squared_distances(y_rows, y_cols, bi, bj, n_rows_padded, n_cols_padded, offs, DIM, BLOCK)
        if TRIANGLE:  # noqa: SIM102  (a compile-time branch; Triton cannot mix it with a runtime "and")
            if bj == bi:  # i >= j: an infinite distance gives 2^-inf = 0
                s = tl.where(offs[None, :] > offs[:, None], s, float("inf"))
        if (bj + 1) * BLOCK > n_cols:  # pad columns the caller did not space apart
            s = tl.where(bj * BLOCK + offs[None, :] < n_cols, s, float("inf"))
        e = _exp2(-a_batch[:, None, None] * s[None, :, :], FAST)
        acc1 += e
        acc2 += e * e
    slot = out + (program * n_a + k) * 2
    tl.store(slot, tl.sum(tl.sum(acc1, axis=2), axis=1).to(tl.float64), mask=k < n_a)
    tl.store(slot + 1, tl.sum(tl.sum(acc2, axis=2), axis=1).to(tl.float64), mask=k < n_a)


@triton.jit
def whiten_kernel(z, m_inv, y, n_padded, D: tl.constexpr, D_POW2: tl.constexpr, BLOCK: tl.constexpr):
    """y[r, j] = sum_c m_inv[r, c] z[c, j] (float64, rounded to y's type) for r < D.

    LSCV's whitening y = M^-1 z in one launch (z: (D, n_padded) float64; m_inv: (D, D)
    row-major).  Pad columns of z are 0, so are those of y: the sums mask them by index.
    Rows D.. of y are not touched.
    """
    j = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    c = tl.arange(0, D_POW2)
    inside = j < n_padded
    zt = tl.load(z + c[:, None] * n_padded + j[None, :], mask=(c[:, None] < D) & inside[None, :], other=0.0)
    for r in tl.static_range(D):
        row = tl.sum(tl.load(m_inv + r * D + c, mask=c < D, other=0.0)[:, None] * zt, axis=0)
        tl.store(y + r * n_padded + j, row.to(y.dtype.element_ty), mask=inside)


@triton.jit
def _profile(s, KIND: tl.constexpr, FAST: tl.constexpr):
    """Radial kernel profiles k(s), s = |u|^2 (parzen.kernels); gaussian takes s in log2 units."""
    if KIND == 0:  # gaussian: the wrapper scales so that k = 2^-s
        return _exp2(-s, FAST)
    elif KIND == 1:  # epanechnikov
        return tl.maximum(1.0 - s, 0.0)
    elif KIND == 2:  # uniform
        return tl.where(s <= 1.0, 1.0, 0.0)
    elif KIND == 3:  # triangular
        return tl.maximum(1.0 - tl.sqrt(s), 0.0)
    elif KIND == 4:  # biweight
        t = tl.maximum(1.0 - s, 0.0)
        return t * t
    else:  # cosine
        return tl.where(s <= 1.0, tl.cos(1.5707963267948966 * tl.sqrt(tl.minimum(s, 1.0))), 0.0)


@triton.jit
def kernel_sum_kernel(
    zt, qt, w, n_padded, m_padded, chunk_blocks, out,
    DIM: tl.constexpr, KIND: tl.constexpr, BLOCK_Q: tl.constexpr, BLOCK_Z: tl.constexpr, FAST: tl.constexpr,
):
    """out[chunk, q] = sum over the chunk's data points i of w_i k(|q - z_i|^2).

    zt (DIM, n_padded) and qt (DIM, m_padded) row-major; padded data points carry weight 0.
    """
    qb = tl.program_id(0)
    chunk = tl.program_id(1)
    q_offs = qb * BLOCK_Q + tl.arange(0, BLOCK_Q)
    z_range = tl.arange(0, BLOCK_Z)
    first = chunk * chunk_blocks
    last = tl.minimum(first + chunk_blocks, n_padded // BLOCK_Z)
    acc = tl.zeros((BLOCK_Q, BLOCK_Z), dtype=zt.dtype.element_ty)
    for zb in range(first, last):
        z_offs = zb * BLOCK_Z + z_range
        s = tl.zeros((BLOCK_Q, BLOCK_Z), dtype=zt.dtype.element_ty)
        for c in tl.static_range(DIM):
            diff = tl.load(qt + c * m_padded + q_offs)[:, None] - tl.load(zt + c * n_padded + z_offs)[None, :]
            s += diff * diff
        acc += _profile(s, KIND, FAST) * tl.load(w + z_offs)[None, :]
    tl.store(out + chunk * m_padded + q_offs, tl.sum(acc, axis=1).to(tl.float64))


@triton.jit
def gaussian_log_sum_kernel(
    zt, qt, log2_w, n, n_padded, m_padded, chunk_blocks, top, total,
    DIM: tl.constexpr, BLOCK_Q: tl.constexpr, BLOCK_Z: tl.constexpr, FAST: tl.constexpr, LOWEST: tl.constexpr,
):
    """top[chunk, q] = the largest e_i = log2 w_i - t_i over the chunk's data points i < n, and
    total[chunk, q] = sum 2^(e_i - top): the chunk's part of a log-sum-exp in base 2.

    t_i = |q - z_i|^2 (the wrapper scales the points so that the Gaussian profile is 2^-t).  Each
    (query, lane) cell of the tile keeps its own running maximum m and sum a of 2^(e - m), updated
    by one exponential per pair: x = 2^-|e - m|, then a <- a x + 1 and m <- e where e > m, else
    a <- a + x (no reduction across lanes inside the loop, as kernel_sum_kernel); the lanes are
    combined once at the end.  Pads (index >= n) are masked by index; ``LOWEST`` (a finite number
    below every exponent, which the compute type holds) stands for "no term yet", so no infinity
    is formed.
    """
    qb = tl.program_id(0)
    chunk = tl.program_id(1)
    q_offs = qb * BLOCK_Q + tl.arange(0, BLOCK_Q)
    z_range = tl.arange(0, BLOCK_Z)
    first = chunk * chunk_blocks
    last = tl.minimum(first + chunk_blocks, n_padded // BLOCK_Z)
    running = tl.full((BLOCK_Q, BLOCK_Z), LOWEST, dtype=zt.dtype.element_ty)
    acc = tl.zeros((BLOCK_Q, BLOCK_Z), dtype=zt.dtype.element_ty)
    for zb in range(first, last):
        z_offs = zb * BLOCK_Z + z_range
        t = tl.zeros((BLOCK_Q, BLOCK_Z), dtype=zt.dtype.element_ty)
        for c in tl.static_range(DIM):
            diff = tl.load(qt + c * m_padded + q_offs)[:, None] - tl.load(zt + c * n_padded + z_offs)[None, :]
            t += diff * diff
        running, acc = _log_sum_step(tl.load(log2_w + z_offs)[None, :] - t, (z_offs < n)[None, :], running, acc, FAST)
    _store_log_sum(running, acc, top, total, chunk * m_padded + q_offs, FAST)


@triton.jit
def _log_sum_step(e, valid, running, acc, FAST: tl.constexpr):
    """One tile of a running log-sum-exp in base 2: each cell keeps its maximum ``running`` and
    the sum ``acc`` of 2^(e - running) over its terms; one exponential per term, x = 2^-|e - m|,
    then a <- a x + 1 and m <- e where e > m, else a <- a + x.  Cells where ``valid`` is False
    are left as they are."""
    x = _exp2(-tl.abs(e - running), FAST)
    above = e > running
    acc = tl.where(valid, tl.where(above, acc * x + 1.0, acc + x), acc)
    running = tl.where(valid & above, e, running)
    return running, acc


@triton.jit
def _store_log_sum(running, acc, top, total, offsets, FAST: tl.constexpr):
    """Combine the cells of each row: top = the row's largest exponent, total = sum of 2^(e - top)."""
    highest = tl.max(running, axis=1)
    tl.store(top + offsets, highest.to(tl.float64))
    tl.store(total + offsets, tl.sum(acc * _exp2(running - highest[:, None], FAST), axis=1).to(tl.float64))


@triton.jit
def _gram_minus_squared_distances(two_q, q_norm, minus_q_norm, z, z_norm, BLOCK_Q: tl.constexpr, BLOCK_Z: tl.constexpr,
                                  PRECISION: tl.constexpr):
    """(BLOCK_Q, BLOCK_Z) tile of -|q - z|^2 = 2 q.z - |q|^2 - |z|^2 from one ``tl.dot`` (``two_q``
    = 2 q, ``minus_q_norm`` = -|q|^2 broadcast to the tile).  ``PRECISION`` is the dot's
    ``input_precision``:

    - "ieee" (float32 multiply-adds): they start from -|z|^2 and |q|^2 is subtracted last.  H100,
      n = 2^20, m = 131072 (benchmarks/results/gpu_kde_multivariate.md): largest relative error of
      the KDE sums 2.4e-5 at d = 16 and 3.0e-5 at d = 8, against 3.7e-5 and 3.4e-5 starting from
      -|q|^2 (whose running sums are as large as |q|^2, and |q| is largest at the far queries).
    - "tf32x3" (three TF32 tensor-core products of the operands' high and low parts, about
      float32 accuracy): they start from -|q|^2, the same for every data block, which ran faster
      (d = 32: 201 against 258 ms) and errs no more (the split's own rounding dominates).
    """
    if PRECISION == "ieee":
        minus_s = tl.dot(two_q, z, tl.broadcast_to(-z_norm[None, :], (BLOCK_Q, BLOCK_Z)), input_precision="ieee")
        minus_s -= q_norm[:, None]
    else:
        minus_s = tl.dot(two_q, z, minus_q_norm, input_precision=PRECISION) - z_norm[None, :]
    return minus_s


@triton.jit
def gaussian_gram_log_sum_kernel(
    zt, z_norms, qt, q_norms, log2_w, n, n_padded, m_padded, chunk_blocks, top, total,
    DIM: tl.constexpr, BLOCK_Q: tl.constexpr, BLOCK_Z: tl.constexpr, PRECISION: tl.constexpr, FAST: tl.constexpr,
    LOWEST: tl.constexpr,
):
    """:func:`gaussian_log_sum_kernel` with t_i = |q - z_i|^2 in the Gram form of
    :func:`gaussian_gram_sum_kernel` (one ``tl.dot`` per tile; DIM a power of two >= 16, the
    added coordinates 0; the norms per point from the wrapper).  Pads (index >= n) are masked by
    index."""
    qb = tl.program_id(0)
    chunk = tl.program_id(1)
    q_offs = qb * BLOCK_Q + tl.arange(0, BLOCK_Q)
    c = tl.arange(0, DIM)
    z_range = tl.arange(0, BLOCK_Z)
    two_q = 2.0 * tl.load(qt + c[None, :] * m_padded + q_offs[:, None])
    q_norm = tl.load(q_norms + q_offs)
    minus_q_norm = tl.broadcast_to(-q_norm[:, None], (BLOCK_Q, BLOCK_Z))
    first = chunk * chunk_blocks
    last = tl.minimum(first + chunk_blocks, n_padded // BLOCK_Z)
    running = tl.full((BLOCK_Q, BLOCK_Z), LOWEST, dtype=tl.float32)
    acc = tl.zeros((BLOCK_Q, BLOCK_Z), dtype=tl.float32)
    for zb in range(first, last):
        z_offs = zb * BLOCK_Z + z_range
        z = tl.load(zt + c[:, None] * n_padded + z_offs[None, :])
        minus_t = _gram_minus_squared_distances(two_q, q_norm, minus_q_norm, z, tl.load(z_norms + z_offs), BLOCK_Q, BLOCK_Z,
                                                PRECISION)
        running, acc = _log_sum_step(tl.load(log2_w + z_offs)[None, :] + minus_t, (z_offs < n)[None, :], running, acc, FAST)
    _store_log_sum(running, acc, top, total, chunk * m_padded + q_offs, FAST)


@triton.jit
def gaussian_gram_sum_kernel(
    zt, z_norms, w, qt, q_norms, n_padded, m_padded, chunk_blocks, out,
    DIM: tl.constexpr, BLOCK_Q: tl.constexpr, BLOCK_Z: tl.constexpr, PRECISION: tl.constexpr, FAST: tl.constexpr,
):
    """out[chunk, q] = sum over the chunk's data points i of w_i 2^-|q - z_i|^2, the Gram form.

    |q - z|^2 = |q|^2 + |z|^2 - 2 q.z: the products of a (BLOCK_Q, BLOCK_Z) tile are one
    ``tl.dot`` of (BLOCK_Q, DIM) by (DIM, BLOCK_Z) (DIM a power of two >= 16, the added
    coordinates 0), so a pair costs one subtraction, one exp2 and one multiply-add besides its
    share of the matrix product, one norm entering as the product's initial accumulator
    (:func:`_gram_minus_squared_distances`, whose ``PRECISION`` is the dot's ``input_precision``).
    The norms ``q_norms`` and ``z_norms`` are per point (the wrapper computes them in float64
    from the float32 coordinates, so that the only rounding left is the product's and the
    subtraction's).  zt (DIM, n_padded) and qt (DIM, m_padded) row-major; padded data points are at 0 with weight
    0.  A negative rounding of |q - z|^2 (coincident points) gives 2^+tiny, which is harmless.
    """
    qb = tl.program_id(0)
    chunk = tl.program_id(1)
    q_offs = qb * BLOCK_Q + tl.arange(0, BLOCK_Q)
    c = tl.arange(0, DIM)
    z_range = tl.arange(0, BLOCK_Z)
    two_q = 2.0 * tl.load(qt + c[None, :] * m_padded + q_offs[:, None])
    q_norm = tl.load(q_norms + q_offs)
    minus_q_norm = tl.broadcast_to(-q_norm[:, None], (BLOCK_Q, BLOCK_Z))
    first = chunk * chunk_blocks
    last = tl.minimum(first + chunk_blocks, n_padded // BLOCK_Z)
    acc = tl.zeros((BLOCK_Q, BLOCK_Z), dtype=tl.float32)
    for zb in range(first, last):
        z_offs = zb * BLOCK_Z + z_range
        z = tl.load(zt + c[:, None] * n_padded + z_offs[None, :])
        minus_s = _gram_minus_squared_distances(two_q, q_norm, minus_q_norm, z, tl.load(z_norms + z_offs), BLOCK_Q, BLOCK_Z,
                                                PRECISION)
        acc += _exp2(minus_s, FAST) * tl.load(w + z_offs)[None, :]
    tl.store(out + chunk * m_padded + q_offs, tl.sum(acc, axis=1).to(tl.float64))


@triton.jit
def _query_segment(qa, q_offs, k_total, OFFSET: tl.constexpr, SIZE: tl.constexpr):
    """Columns [OFFSET, OFFSET + SIZE) of rows ``q_offs`` of the (m_padded, k_total) query operand."""
    k = OFFSET + tl.arange(0, SIZE)
    return tl.load(qa + q_offs[:, None] * k_total + k[None, :])


@triton.jit
def _data_segment(za, z_offs, n_padded, OFFSET: tl.constexpr, SIZE: tl.constexpr):
    """Rows [OFFSET, OFFSET + SIZE) of columns ``z_offs`` of the (k_total, n_padded) data operand."""
    k = OFFSET + tl.arange(0, SIZE)
    return tl.load(za + k[:, None] * n_padded + z_offs[None, :])


@triton.jit
def gaussian_gram_tc_sum_kernel(
    za, qa, w, n_padded, m_padded, k_total, chunk_blocks, out,
    S1: tl.constexpr, S2: tl.constexpr, S3: tl.constexpr, S4: tl.constexpr, S5: tl.constexpr,
    BLOCK_Q: tl.constexpr, BLOCK_Z: tl.constexpr, FAST: tl.constexpr, WEIGHTED: tl.constexpr,
):
    """out[chunk, q] = sum over the chunk's data points i of w_i 2^(a(q) . b(z_i)) (w_i = 1
    without ``WEIGHTED``), the exponents
    -|q - z_i|^2 from tensor-core products of the augmented operands of
    :mod:`parzen.backends._gram_operands` (``qa`` = a, (m_padded, k_total) row-major; ``za`` = b,
    (k_total, n_padded) row-major; float16, float32 accumulators).

    The columns come in segments of S1, S2, S3 (the small part C, one accumulator) and S4, S5
    (the exact part E, another; S2, S3 and S5 may be 0), one ``tl.dot`` each; a pair then costs the addition E + C, one
    exp2 and one addition (a multiply-add and a load per data point with ``WEIGHTED``).  The
    query segments are loaded once per program.  Padded and zero-weight data points have
    exponent -32768 (and weight 0).
    """
    qb = tl.program_id(0)
    chunk = tl.program_id(1)
    q_offs = qb * BLOCK_Q + tl.arange(0, BLOCK_Q)
    z_range = tl.arange(0, BLOCK_Z)
    a1, a2, a3, a4, a5 = _query_segments(qa, q_offs, k_total, S1, S2, S3, S4, S5)
    first = chunk * chunk_blocks
    last = tl.minimum(first + chunk_blocks, n_padded // BLOCK_Z)
    acc = tl.zeros((BLOCK_Q, BLOCK_Z), dtype=tl.float32)
    for zb in range(first, last):
        z_offs = zb * BLOCK_Z + z_range
        e = _tc_exponents(a1, a2, a3, a4, a5, za, z_offs, n_padded, S1, S2, S3, S4, S5)
        if WEIGHTED:
            acc += _exp2(e, FAST) * tl.load(w + z_offs)[None, :]
        else:
            acc += _exp2(e, FAST)
    tl.store(out + chunk * m_padded + q_offs, tl.sum(acc, axis=1).to(tl.float64))


@triton.jit
def _query_segments(qa, q_offs, k_total, S1: tl.constexpr, S2: tl.constexpr, S3: tl.constexpr, S4: tl.constexpr,
                    S5: tl.constexpr):
    """The query operand's five column segments for rows ``q_offs`` (a segment of size 0 is not
    loaded; the first segment stands in for it and is not used)."""
    a1 = _query_segment(qa, q_offs, k_total, 0, S1)
    a2 = a1
    a3 = a1
    a5 = a1
    if S2 > 0:
        a2 = _query_segment(qa, q_offs, k_total, S1, S2)
    if S3 > 0:
        a3 = _query_segment(qa, q_offs, k_total, S1 + S2, S3)
    a4 = _query_segment(qa, q_offs, k_total, S1 + S2 + S3, S4)
    if S5 > 0:
        a5 = _query_segment(qa, q_offs, k_total, S1 + S2 + S3 + S4, S5)
    return a1, a2, a3, a4, a5


@triton.jit
def _tc_exponents(a1, a2, a3, a4, a5, za, z_offs, n_padded, S1: tl.constexpr, S2: tl.constexpr, S3: tl.constexpr,
                  S4: tl.constexpr, S5: tl.constexpr):
    """The tile of exponents a(q) . b(z) = -|q - z|^2 for the data columns ``z_offs``: the small
    part C (segments 1-3) and the exact part E (segments 4-5) in two float32 accumulators, then
    E + C (the query segments a1..a5 loaded by the caller; :mod:`parzen.backends._gram_operands`;
    segments 2, 3 and 5 may be empty)."""
    small = tl.dot(a1, _data_segment(za, z_offs, n_padded, 0, S1), input_precision="tf32")
    if S2 > 0:
        small = tl.dot(a2, _data_segment(za, z_offs, n_padded, S1, S2), small, input_precision="tf32")
    if S3 > 0:
        small = tl.dot(a3, _data_segment(za, z_offs, n_padded, S1 + S2, S3), small, input_precision="tf32")
    exact = tl.dot(a4, _data_segment(za, z_offs, n_padded, S1 + S2 + S3, S4), input_precision="tf32")
    if S5 > 0:
        exact = tl.dot(a5, _data_segment(za, z_offs, n_padded, S1 + S2 + S3 + S4, S5), exact, input_precision="tf32")
    return exact + small


@triton.jit
def gaussian_gram_tc_log_sum_kernel(
    za, qa, log2_w, n, n_padded, m_padded, k_total, chunk_blocks, top, total,
    S1: tl.constexpr, S2: tl.constexpr, S3: tl.constexpr, S4: tl.constexpr, S5: tl.constexpr,
    BLOCK_Q: tl.constexpr, BLOCK_Z: tl.constexpr, FAST: tl.constexpr, WEIGHTED: tl.constexpr, LOWEST: tl.constexpr,
):
    """:func:`gaussian_log_sum_kernel` with the exponents -|q - z_i|^2 from the tensor-core
    products of :func:`gaussian_gram_tc_sum_kernel` (the same operands and segments): e_i =
    a(q) . b(z_i) + log2 w_i (``log2_w`` float32, added after the product, not inside it; without
    ``WEIGHTED`` all log2 w_i = 0 and the caller adds the common weight's).  Pads (index >= n)
    are masked by index.
    """
    qb = tl.program_id(0)
    chunk = tl.program_id(1)
    q_offs = qb * BLOCK_Q + tl.arange(0, BLOCK_Q)
    z_range = tl.arange(0, BLOCK_Z)
    a1, a2, a3, a4, a5 = _query_segments(qa, q_offs, k_total, S1, S2, S3, S4, S5)
    first = chunk * chunk_blocks
    last = tl.minimum(first + chunk_blocks, n_padded // BLOCK_Z)
    running = tl.full((BLOCK_Q, BLOCK_Z), LOWEST, dtype=tl.float32)
    acc = tl.zeros((BLOCK_Q, BLOCK_Z), dtype=tl.float32)
    for zb in range(first, last):
        z_offs = zb * BLOCK_Z + z_range
        e = _tc_exponents(a1, a2, a3, a4, a5, za, z_offs, n_padded, S1, S2, S3, S4, S5)
        if WEIGHTED:
            e += tl.load(log2_w + z_offs)[None, :]
        running, acc = _log_sum_step(e, (z_offs < n)[None, :], running, acc, FAST)
    _store_log_sum(running, acc, top, total, chunk * m_padded + q_offs, FAST)


@triton.jit
def hermite_products_kernel(
    y_rows, y_cols, n_rows_padded, n_cols_padded, n_col_blocks, alphas, out,
    DIM: tl.constexpr, TRIANGLE: tl.constexpr, BLOCK: tl.constexpr, GROUP: tl.constexpr, FAST: tl.constexpr,
):
    """out[program, k] = sum over the program's pairs of w_i w_j e^(-|u|^2/2) prod_c He_{alpha_kc}(u_c),
    u = y_i - y_j, for the multi-index k = program_id(2) (``alphas`` (m, DIM) int32 row-major).

    y_* are (DIM + 1, n_padded) row-major: DIM coordinates, then the weights (pads have weight
    0).  Each He_a(u) comes from the recurrence He_{m+1} = u He_m - m He_{m-1} in a loop of a
    steps; each coordinate difference is clamped at +-40, where e^(-u^2/2) is 0 in float32 and
    float64 and He_8 stays finite, so pads far away add 0 and never inf * 0.
    """
    bi = tl.program_id(0)
    group = tl.program_id(1)
    k = tl.program_id(2)
    first, last = _column_range(bi, group, n_col_blocks, TRIANGLE, GROUP)
    offs = tl.arange(0, BLOCK)
    w_i = tl.load(y_rows + DIM * n_rows_padded + bi * BLOCK + offs)
    acc = tl.zeros((BLOCK, BLOCK), dtype=w_i.dtype)
    for bj in range(first, last):
        w_j = tl.load(y_cols + DIM * n_cols_padded + bj * BLOCK + offs)
        term = w_i[:, None] * w_j[None, :]
        s = tl.zeros((BLOCK, BLOCK), dtype=w_i.dtype)
        for c in tl.static_range(DIM):
            yi = tl.load(y_rows + c * n_rows_padded + bi * BLOCK + offs)
            yj = tl.load(y_cols + c * n_cols_padded + bj * BLOCK + offs)
            u = tl.minimum(tl.maximum(yi[:, None] - yj[None, :], -40.0), 40.0)
            s += u * u
            previous = tl.zeros((BLOCK, BLOCK), dtype=w_i.dtype)
            current = tl.full((BLOCK, BLOCK), 1.0, dtype=w_i.dtype)
            for m in range(tl.load(alphas + k * DIM + c)):
                following = u * current - m * previous
                previous = current
                current = following
            term *= current
        # e^(-s/2) = 2^(-s log2(e) / 2)
        term *= _exp2(-0.7213475204444817 * s, FAST)
        if TRIANGLE:  # noqa: SIM102  (a compile-time branch; Triton cannot mix it with a runtime "and")
            if bj == bi:
                term = tl.where(offs[None, :] > offs[:, None], term, 0.0)
        acc += term
    tl.store(out + (bi * tl.num_programs(1) + group) * tl.num_programs(2) + k, tl.sum(tl.sum(acc, axis=1), axis=0).to(tl.float64))
