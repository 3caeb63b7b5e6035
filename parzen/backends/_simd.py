"""Vectorisable scalar math for Numba loops: exp and the kernel profiles, in float64 and float32.

LLVM vectorises a loop only if every call in it has a vector form.  ``math.exp`` has none
unless Numba's SVML is present (it is not in the PyPI wheels), so a loop of ``math.exp`` runs
one lane at a time.  :func:`exp` is built from operations that all vectorise
(AVX2: 4 float64 or 8 float32 lanes):

    exp(x) = 2^k exp(r),  k = rint(x / ln 2),  r = x - k ln 2 (Cody-Waite: ln 2 = hi + lo),
    exp(r) by its Taylor polynomial (|r| <= ln(2)/2; degree 12 for float64, relative error
    < 2e-16; degree 7 for float32, < 6e-9) in Estrin's scheme, whose dependency chain is
    4 multiply-adds deep instead of Horner's 12 (the loop is latency-bound otherwise),
    2^k built in the exponent bits: bits(k + M) - bits(M) = k for M = 1.5 * 2^52 (2^23),
    then (k + bias) << mantissa bits, reinterpreted as a float.

Below the smallest normal result (x < -708 in float64, x < -87 in float32) it returns 0:
sub-normal terms are dropped.  This is the "SSE implementation" of paper 000 (docs/statistics.md), section 6.1,
which also vectorised exp by hand.

Every function here is a stub with one Numba overload per precision (``@overload``), so the
jitted loops that call them are plain module-level functions whose machine code Numba can
cache on disk: constants are typed from the argument (float32 code never widens to float64).
"""

from __future__ import annotations

import math
from types import MappingProxyType

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic, overload

_INT_OF = MappingProxyType({types.float64: types.int64, types.float32: types.int32})
_FLOAT_OF = MappingProxyType({v: k for k, v in _INT_OF.items()})
_IR_FLOAT = MappingProxyType({types.float64: ir.DoubleType(), types.float32: ir.FloatType()})


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
_FORMAT = MappingProxyType({
    np.float64: (12, -708.0, 0.693147180369123816490, 1.90821492927058770002e-10, 1.5 * 2.0**52, 1023, 52, np.int64),
    np.float32: (7, -87.0, 0.693359375, -2.12194440e-4, 1.5 * 2.0**23, 127, 23, np.int32),
})
_NUMPY_OF = MappingProxyType({types.float64: np.float64, types.float32: np.float32})


def _ftype_of(numba_type):
    """np.float64 / np.float32 for a float type or an array of floats; None otherwise."""
    return _NUMPY_OF.get(getattr(numba_type, "dtype", numba_type))


def exp(x):
    """e^x for x <= 0 (vectorisable; 0 below the smallest normal result). Jitted code only."""
    raise RuntimeError("parzen.backends._simd.exp is only for Numba-compiled code")


def like(value, array):
    """``value`` as a scalar of ``array``'s float type. Jitted code only."""
    raise RuntimeError("parzen.backends._simd.like is only for Numba-compiled code")


def profile(kind, s):
    """The radial profile k(s), s = |u|^2, of kernel number ``kind`` (:data:`PROFILE_CODES`).

    ``kind`` must be a compile-time branch outside the caller's inner loop for it to vectorise;
    see :func:`parzen.backends.cpu.kernel_sum`. Jitted code only.
    """
    raise RuntimeError("parzen.backends._simd.profile is only for Numba-compiled code")


#: Kernel name -> its ``kind`` number for :func:`profile` (the kernels of :mod:`parzen.kernels`).
PROFILE_CODES = MappingProxyType(
    {"gaussian": 0, "epanechnikov": 1, "uniform": 2, "triangular": 3, "biweight": 4, "cosine": 5}
)


@overload(exp, inline="always", jit_options={"fastmath": True})
def _exp(x):
    ftype = _ftype_of(x)
    if ftype is None:
        return None
    degree, lowest, ln2_hi, ln2_lo, magic, bias, shift, itype = _FORMAT[ftype]
    terms = 16 if degree >= 8 else 8
    c = tuple(ftype(1.0 / math.factorial(k) if k <= degree else 0.0) for k in range(terms))
    lo, zero = ftype(lowest), ftype(0.0)
    log2e, hi_, lo_ = ftype(1.0 / math.log(2.0)), ftype(ln2_hi), ftype(ln2_lo)
    m = ftype(magic)
    m_bits = itype(np.array(magic, dtype=ftype).view(itype))
    bias_, shift_ = itype(bias), itype(shift)

    def implementation(x):
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

    return implementation


@overload(like, inline="always", jit_options={"fastmath": True})
def _like(value, array):
    ftype = _ftype_of(array)
    if ftype is None:
        return None

    def implementation(value, array):
        return ftype(value)

    return implementation


@overload(profile, jit_options={"fastmath": True})
def _profile(kind, s):
    ftype = _ftype_of(s)
    if ftype is None:
        return None
    zero, one, half, half_pi = ftype(0.0), ftype(1.0), ftype(0.5), ftype(0.5 * math.pi)

    def implementation(kind, s):
        if kind == 0:  # gaussian
            return exp(-half * s)
        if kind == 1:  # epanechnikov
            return max(one - s, zero)
        if kind == 2:  # uniform
            return one if s <= one else zero
        if kind == 3:  # triangular
            return max(one - np.sqrt(s), zero)
        if kind == 4:  # biweight
            t = max(one - s, zero)
            return t * t
        return np.cos(half_pi * np.sqrt(s)) if s <= one else zero  # cosine

    return implementation


def compute_type(dtype) -> type:
    """The NumPy scalar type the CPU loops compute in: float64 unless float32 is asked for."""
    return np.float32 if dtype is not None and np.dtype(dtype) == np.float32 else np.float64
