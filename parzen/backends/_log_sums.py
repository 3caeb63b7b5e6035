"""Log-sum-exp helpers the backends' ``log_kernel_sum`` share (docs/algorithms.md, "Log densities")."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np


def log_sum_exp_of_parts(top: np.ndarray, total: np.ndarray) -> np.ndarray:
    """log sum_c total_c exp(top_c) over axis 0: one query's log-sum-exp from its parts.

    Each part c (a chunk of data) holds its largest exponent ``top_c`` and the sum ``total_c`` of
    exp(e_i - top_c) over its terms; a part with ``total_c`` = 0 (no terms) is left out, and a query
    with no terms at all gets -inf.  Computed in float64.

    Parameters
    ----------
    top, total : ndarray of shape (parts, m)
        Per part and query: the largest exponent and the shifted sum.

    Returns
    -------
    ndarray of shape (m,), float64
    """
    top, total = np.asarray(top, dtype=np.float64), np.asarray(total, dtype=np.float64)
    present = total > 0
    top = np.where(present, top, -np.inf)
    best = top.max(axis=0)
    shift = np.where(np.isfinite(best), best, 0.0)
    with np.errstate(divide="ignore"):
        return best + np.log((np.where(present, total, 0.0) * np.exp(top - shift)).sum(axis=0))


def log_of_kernel_sum(kernel_sum: Callable, Z: np.ndarray, Q: np.ndarray, kind: str, weights, *, dtype=None):
    """log sum_i w_i k(|q - z_i|^2) for a compactly supported kernel, from ``kernel_sum``.

    Their profiles are at least ~1e-15 wherever they are not 0 (biweight (1 - s)^2 with s one
    float32 rounding below 1), so with the weights divided by the largest (added back as its log)
    no term underflows unless the weights span more than ~1e-20 (float32) or ~1e-290 (float64)
    of each other; the log is -inf exactly where every term is 0 (outside the kernel's reach),
    where the density is 0.

    Parameters
    ----------
    kernel_sum : callable
        A backend's :meth:`~parzen.backends.KDEBackend.kernel_sum`.
    Z, Q, kind, weights, dtype
        As there.

    Returns
    -------
    ndarray of shape (m,), float64
    """
    w = np.ones(len(Z)) if weights is None else np.asarray(weights, dtype=np.float64)
    largest = float(w.max()) if w.size else 0.0
    if largest <= 0.0:
        return np.full(len(Q), -np.inf)
    sums = np.asarray(kernel_sum(Z, Q, kind, w / largest, dtype=dtype), dtype=np.float64)
    with np.errstate(divide="ignore"):
        return np.log(sums) + math.log(largest)
