"""The Gaussian kernel distribution function and its inverse, evaluated in chunks.

F(q) = sum_i w_i prod_k Phi((q_k - X_ik) / h_k)  for a diagonal bandwidth matrix
H = diag(h_k^2) (the integral of the product-Gaussian KDE over the orthant below q; Azzalini 1981;
R's ``ks::kcde``), and in 1-D the quantile F^-1(p) by bracketed Newton steps.  No n x m matrix is
formed: the queries are taken in blocks of at most :data:`CHUNK_ELEMENTS` / n rows.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

#: The most (query, data point) pairs held at once.
CHUNK_ELEMENTS = 1 << 20

#: Newton steps of :func:`quantile_1d` before it gives up (each bracketed; bisection where a step leaves the bracket).
MAX_STEPS = 200


def mixture_cdf(X: np.ndarray, weights: np.ndarray, scales: np.ndarray, Q: np.ndarray) -> np.ndarray:
    """F(q) = sum_i w_i prod_k Phi((q_k - X_ik) / h_k) at each query point.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        The data.
    weights : ndarray of shape (n,)
        Weights summing to one.
    scales : ndarray of shape (d,)
        h_k, the standard deviations of the kernel on each axis (H = diag(h_k^2)).
    Q : ndarray of shape (m, d)
        The query points.

    Returns
    -------
    ndarray of shape (m,)
        The distribution function, in [0, 1].
    """
    out = np.empty(Q.shape[0])
    Z = X / scales
    block = max(1, CHUNK_ELEMENTS // max(1, X.shape[0]))
    for start in range(0, Q.shape[0], block):
        Qz = Q[start:start + block] / scales
        prod = special.ndtr(Qz[:, None, 0] - Z[None, :, 0])
        for k in range(1, X.shape[1]):
            prod *= special.ndtr(Qz[:, None, k] - Z[None, :, k])
        out[start:start + block] = prod @ weights
    return np.clip(out, 0.0, 1.0)


def mixture_cdf_pdf_1d(x: np.ndarray, weights: np.ndarray, h: float, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """F(q) and its derivative f(q) = sum_i w_i phi((q - x_i) / h) / h for 1-D data.

    Parameters
    ----------
    x, weights : ndarray of shape (n,)
        The data and their weights (summing to one).
    h : float
        The kernel's standard deviation.
    q : ndarray of shape (m,)
        The points.

    Returns
    -------
    (ndarray, ndarray)
        F(q) and f(q).
    """
    F, f = np.empty(q.size), np.empty(q.size)
    block = max(1, CHUNK_ELEMENTS // max(1, x.size))
    for start in range(0, q.size, block):
        u = (q[start:start + block, None] - x[None, :]) / h
        F[start:start + block] = special.ndtr(u) @ weights
        f[start:start + block] = np.exp(-0.5 * u * u) @ weights / (h * math.sqrt(2.0 * math.pi))
    return F, f


def quantile_1d(cdf_pdf, p: np.ndarray, low: float, high: float, *, xtol: float) -> np.ndarray:
    """x with F(x) = p for each p in (0, 1), by Newton steps kept inside a shrinking bracket.

    Parameters
    ----------
    cdf_pdf : callable
        ``cdf_pdf(x) -> (F(x), f(x))`` for an array x: a continuous increasing F and its derivative.
    p : ndarray of shape (m,)
        Probabilities strictly between 0 and 1.
    low, high : float
        A bracket: F(low) < min(p) and F(high) > max(p).
    xtol : float
        Stop where the bracket is narrower than this or F(x) = p to 1e-14.

    Returns
    -------
    ndarray of shape (m,)
        The quantiles.

    Raises
    ------
    RuntimeError
        If the steps do not converge (not expected for a Gaussian mixture).
    """
    lo, hi = np.full(p.size, low), np.full(p.size, high)
    x = 0.5 * (lo + hi)
    active = np.ones(p.size, dtype=bool)
    for _ in range(MAX_STEPS):
        F, f = cdf_pdf(x[active])
        excess = F - p[active]
        below = excess < 0
        lo[active] = np.where(below, x[active], lo[active])
        hi[active] = np.where(below, hi[active], x[active])
        with np.errstate(divide="ignore", invalid="ignore"):
            step = x[active] - excess / f
        inside = np.isfinite(step) & (step > lo[active]) & (step < hi[active])
        new = np.where(inside, step, 0.5 * (lo[active] + hi[active]))
        done = (np.abs(excess) <= 1e-14) | (hi[active] - lo[active] <= xtol) | (np.abs(new - x[active]) <= xtol)
        x[active] = np.where(np.abs(excess) <= 1e-14, x[active], new)
        active[np.flatnonzero(active)[done]] = False
        if not active.any():
            return x
    raise RuntimeError(f"quantile: {int(active.sum())} of {p.size} probabilities did not converge in {MAX_STEPS} steps")
