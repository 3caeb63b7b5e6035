"""Moments of a sampled row's kernel over an interval: what SUM of powers and products, VAR and STDDEV integrate.

For a row x with Gaussian kernel of bandwidth h (reflected at the column's lower edge L when it has
one, as in :mod:`parzen.aqp.estimate`) and an interval [a, b], with alpha = (a - x)/h,
beta = (b - x)/h and I_j = int_alpha^beta z^j phi(z) dz,

    I_0 = Phi(beta) - Phi(alpha),   I_1 = phi(alpha) - phi(beta),
    I_j = (j - 1) I_{j-2} + alpha^(j-1) phi(alpha) - beta^(j-1) phi(beta)      (integration by parts),

    M_k = int_a^b (y - s)^k K_h(y - x) dy = sum_j C(k, j) (x - s)^(k-j) h^j I_j.

The kernel adds h^2 to the variance of the sample (the density's second moment about s is
(x - s)^2 + h^2 for a row deep inside the interval), so the second moment is corrected for it,
M_2 - h^2 M_0, as in Jones's variance-corrected kernel estimates (Jones 1991, "On correcting for
variance inflation in kernel density estimation", Computational Statistics & Data Analysis 11,
3-15): a row the kernel leaves wholly inside the interval then contributes (x - s)^2, exactly the
sample's own value, and VAR/STDDEV under a predicate are the sample's where the box does not cut
the kernels.  Higher moments are not corrected (docs/aqp.md, "More aggregates").
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from .estimate import ColumnModel

_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def kernel_moment(model: ColumnModel, x: np.ndarray, a: float, b: float, scale, power: int,
                  shift: float = 0.0) -> np.ndarray:
    """Per row: int_a^b (y - shift)^power K(y - x) dy of the column's kernel (second moment corrected).

    Parameters
    ----------
    model : ColumnModel
        The column's kernel (bandwidth h, lower edge; h = 0 is a point mass at x).
    x : numpy.ndarray
        The rows' values (NaN: NULL, which gets 0).
    a, b : float
        The interval (from :meth:`ColumnModel.interval`; b < a: empty).
    scale : float or numpy.ndarray
        A factor on the bandwidth, one or per row.
    power : int
        k >= 0.
    shift : float
        s: the moment is about s (a column's mean keeps VAR free of cancellation).

    Returns
    -------
    numpy.ndarray
        M_k per row (M_2 - h^2 M_0 for k = 2; see the module).
    """
    x = np.asarray(x, dtype=np.float64)
    valid = ~np.isnan(x)
    if b < a:
        return np.zeros_like(x)
    if model.bandwidth == 0.0:
        inside = valid & (x >= a) & (x <= b)
        return np.where(inside, (np.where(inside, x, 0.0) - shift) ** power, 0.0)
    centre = np.where(valid, x, 0.0)
    h = model.bandwidth * np.broadcast_to(np.asarray(scale, dtype=np.float64), x.shape)
    moments = _moments(centre, h, a, b, power, shift)
    if model.lower is not None:
        reflected = _moments(2.0 * model.lower - centre, h, a, b, power, shift)
        moments = [m + r for m, r in zip(moments, reflected)]
    out = moments[power]
    if power == 2:
        out = out - h * h * moments[0]
    return np.where(valid, out, 0.0)


def _moments(centre: np.ndarray, h: np.ndarray, a: float, b: float, power: int, shift: float) -> list[np.ndarray]:
    """[M_0, ..., M_power] of N(centre, h^2) over [a, b], about ``shift`` (no correction)."""
    with np.errstate(invalid="ignore", over="ignore"):
        alpha = (a - centre) / h
        beta = (b - centre) / h
    upper_tail = alpha > 0.0  # Phi(-alpha) - Phi(-beta) there avoids cancellation
    mass = np.empty(alpha.shape)  # each row's Phi differences on its own side only (the same floats as both and a select)
    upper, lower = alpha[upper_tail], alpha[~upper_tail]
    mass[upper_tail] = special.ndtr(-upper) - special.ndtr(-beta[upper_tail])
    mass[~upper_tail] = special.ndtr(beta[~upper_tail]) - special.ndtr(lower)
    if power == 0:  # M_0 = 1 * d^0 * h^0 * mass = the mass, float for float: no densities needed
        return [mass]
    finite_a, finite_b = np.isfinite(alpha), np.isfinite(beta)
    pdf_a = np.where(finite_a, _INV_SQRT_2PI * np.exp(-0.5 * np.where(finite_a, alpha, 0.0) ** 2), 0.0)
    pdf_b = np.where(finite_b, _INV_SQRT_2PI * np.exp(-0.5 * np.where(finite_b, beta, 0.0) ** 2), 0.0)
    alpha0, beta0 = np.where(finite_a, alpha, 0.0), np.where(finite_b, beta, 0.0)
    integrals = [mass, pdf_a - pdf_b]
    for j in range(2, power + 1):
        integrals.append((j - 1) * integrals[j - 2] + alpha0 ** (j - 1) * pdf_a - beta0 ** (j - 1) * pdf_b)
    d = centre - shift
    return [sum(math.comb(k, j) * d ** (k - j) * h ** j * integrals[j] for j in range(k + 1)) for k in range(power + 1)]
