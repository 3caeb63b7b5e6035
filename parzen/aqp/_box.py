"""The per-row kernel masses of :mod:`parzen.aqp.estimate` as one compiled loop (Numba).

For each sampled value x with bandwidth h: the mass of N(x, h^2) in [a, b] and its first moment
(plus the reflected kernel N(2L - x, h^2) when the column has a lower edge L), with Phi from
erfc.  Rows deeper than ``reach`` bandwidths inside the box get (1, x) and rows further outside
(0, 0) without any special function; NaN (NULL) rows get (0, 0).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

_SQRT_HALF = math.sqrt(0.5)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


@njit(cache=True)
def _phi_cdf(z):
    return 0.5 * math.erfc(-z * _SQRT_HALF)


@njit(cache=True)
def _normal_box(x, a, b, h):
    alpha = (a - x) / h
    beta = (b - x) / h
    if alpha > 0.0:  # the box is in the upper tail: Phi(-alpha) - Phi(-beta) avoids cancellation
        mass = _phi_cdf(-alpha) - _phi_cdf(-beta)
    else:
        mass = _phi_cdf(beta) - _phi_cdf(alpha)
    density = (math.exp(-0.5 * beta * beta) - math.exp(-0.5 * alpha * alpha)) * _INV_SQRT_2PI
    return mass, x * mass - h * density


@njit(cache=True, parallel=True)
def box_masses(x, scale, h0, a, b, lower, reflect, reach):
    """(mass, moment) per row: bandwidth h0 * scale[i], reflection at ``lower`` if ``reflect``
    (rows spread over all cores)."""
    n = x.size
    mass = np.zeros(n)
    moment = np.zeros(n)
    for i in prange(n):
        xi = x[i]
        if math.isnan(xi):
            continue
        h = h0 * scale[i]
        r = reach * h
        if xi >= a + r and xi <= b - r:
            mass[i] = 1.0
            moment[i] = xi
            continue
        m = 0.0
        mo = 0.0
        if a - r < xi < b + r:
            m, mo = _normal_box(xi, a, b, h)
        if reflect and xi < 2.0 * lower - a + r:
            m2, mo2 = _normal_box(2.0 * lower - xi, a, b, h)
            m += m2
            mo += mo2
        mass[i] = m
        moment[i] = mo
    return mass, moment
