"""Vectorisable scalar math for Numba loops: exp and the kernel profiles, in float64 and float32.

LLVM vectorises a loop only if every call in it has a vector form.  ``math.exp`` has none
unless Numba's SVML is present (it is not in the PyPI wheels), so a loop of ``math.exp`` runs
one lane at a time.  :func:`make_math` builds an exp from operations that all vectorise
(AVX2: 4 float64 or 8 float32 lanes):

    exp(x) = 2^k exp(r),  k = rint(x / ln 2),  r = x - k ln 2 (Cody-Waite: ln 2 = hi + lo),
    exp(r) by its Taylor polynomial (|r| <= ln(2)/2; degree 12 for float64, relative error
    < 2e-16; degree 7 for float32, < 6e-9) in Estrin's scheme, whose dependency chain is
    4 multiply-adds deep instead of Horner's 12 (the loop is latency-bound otherwise),
    2^k built in the exponent bits: bits(k + M) - bits(M) = k for M = 1.5 * 2^52 (2^23),
    then (k + bias) << mantissa bits, reinterpreted as a float.

Below the smallest normal result (x < -708 in float64, x < -87 in float32) it returns 0:
sub-normal terms are dropped.  This is the "SSE implementation" of paper 000, section 6.1,
which also vectorised exp by hand.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

_INT_OF = {types.float64: types.int64, types.float32: types.int32}
_FLOAT_OF = {v: k for k, v in _INT_OF.items()}
_IR_FLOAT = {types.float64: ir.DoubleType(), types.float32: ir.FloatType()}


@intrinsic
def float_bits(typingctx, x):
    """The bits of a float as a signed integer of the same width (no conversion)."""
    if x not in _INT_OF:
        return None
    width = 64 if x == types.float64 else 32

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(width))

    return _INT_OF[x](x), codegen


@intrinsic
def bits_float(typingctx, i):
    """The float whose bits are the integer ``i`` (int64 -> float64, int32 -> float32)."""
    if i not in _FLOAT_OF:
        return None
    ftype = _FLOAT_OF[i]

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], _IR_FLOAT[ftype])

    return ftype(i), codegen


#: Per precision: (degree of the exp polynomial, smallest x with a normal result, ln 2 split
#: hi + lo with hi exact in few bits, magic M, exponent bias, mantissa bits, integer type).
_FORMAT = {
    np.float64: (12, -708.0, 0.693147180369123816490, 1.90821492927058770002e-10, 1.5 * 2.0**52, 1023, 52, np.int64),
    np.float32: (7, -87.0, 0.693359375, -2.12194440e-4, 1.5 * 2.0**23, 127, 23, np.int32),
}


def make_math(ftype) -> SimpleNamespace:
    """Inline-able jitted scalar functions for ``ftype`` (np.float64 or np.float32).

    Every constant is of ``ftype`` so that float32 code never widens to float64.  Returns a
    namespace with ``exp(x)`` and ``profile_<kernel>(s)`` (the radial profiles of
    :mod:`parzen.kernels`, k(s) with s = |u|^2) and the typed constants ``zero``/``one``.
    """
    degree, lowest, ln2_hi, ln2_lo, magic, bias, shift, itype = _FORMAT[ftype]
    terms = 16 if degree >= 8 else 8
    c = tuple(ftype(1.0 / math.factorial(k) if k <= degree else 0.0) for k in range(terms))
    lo, zero, one, half = ftype(lowest), ftype(0.0), ftype(1.0), ftype(0.5)
    log2e, hi_, lo_ = ftype(1.0 / math.log(2.0)), ftype(ln2_hi), ftype(ln2_lo)
    m = ftype(magic)
    m_bits = itype(np.array(magic, dtype=ftype).view(itype))
    bias_, shift_ = itype(bias), itype(shift)
    half_pi = ftype(0.5 * math.pi)

    @njit(inline="always", fastmath=True, cache=True)
    def exp(x):
        """e^x for x <= 0 (vectorisable; 0 below the smallest normal result)."""
        y = max(x, lo)
        kf = np.rint(y * log2e)
        r = y - kf * hi_ - kf * lo_
        r2 = r * r
        r4 = r2 * r2
        low = (c[0] + c[1] * r + (c[2] + c[3] * r) * r2) + (c[4] + c[5] * r + (c[6] + c[7] * r) * r2) * r4
        if terms == 8:
            p = low
        else:
            high = (c[8] + c[9] * r + (c[10] + c[11] * r) * r2) + (c[12] + c[13] * r + (c[14] + c[15] * r) * r2) * r4
            p = low + high * (r4 * r4)
        k = float_bits(kf + m) - m_bits
        value = p * bits_float(itype((k + bias_) << shift_))  # Numba widens int32 arithmetic
        return value if x >= lo else zero

    @njit(inline="always", fastmath=True, cache=True)
    def profile_gaussian(s):
        return exp(-half * s)

    @njit(inline="always", fastmath=True, cache=True)
    def profile_epanechnikov(s):
        return max(one - s, zero)

    @njit(inline="always", fastmath=True, cache=True)
    def profile_uniform(s):
        return one if s <= one else zero

    @njit(inline="always", fastmath=True, cache=True)
    def profile_triangular(s):
        return max(one - np.sqrt(s), zero)

    @njit(inline="always", fastmath=True, cache=True)
    def profile_biweight(s):
        t = max(one - s, zero)
        return t * t

    @njit(inline="always", fastmath=True, cache=True)
    def profile_cosine(s):
        return np.cos(half_pi * np.sqrt(s)) if s <= one else zero

    return SimpleNamespace(
        exp=exp,
        zero=zero,
        one=one,
        gaussian=profile_gaussian,
        epanechnikov=profile_epanechnikov,
        uniform=profile_uniform,
        triangular=profile_triangular,
        biweight=profile_biweight,
        cosine=profile_cosine,
    )
