"""The one convention of every bandwidth selector: the bandwidth in data units.

For 1-D data a selector returns a float h, the kernel's standard deviation, so that the
estimate uses K_h(u) = K(u / h) / h; for d > 1 it returns the d x d matrix H, the kernel's
covariance, K_H(u) = |H|^-1/2 K(H^-1/2 u) (Andrzejewski et al., paper 000 in
docs/statistics.md, eqs. 3 and 6).  The two agree at d = 1 with H = [[h^2]];
:func:`bandwidth_matrix` is that conversion, written once.
"""

from __future__ import annotations

import numpy as np


def from_factor(factor: float, sigma: np.ndarray) -> float | np.ndarray:
    """A bandwidth given as a multiple of the sample covariance, in data units.

    Parameters
    ----------
    factor : float
        The scalar c of H = c^2 Sigma (LSCV_h's h, or a rule of thumb's constant).
    sigma : ndarray of shape (d, d)
        The sample covariance Sigma of the data, in the data's units.

    Returns
    -------
    float or ndarray of shape (d, d)
        c * sd for d = 1 (sd = Sigma^1/2), otherwise the matrix c^2 Sigma.
    """
    if sigma.shape == (1, 1):
        return float(factor * np.sqrt(sigma[0, 0]))
    return factor**2 * sigma


def from_matrix(H: np.ndarray) -> float | np.ndarray:
    """A bandwidth matrix in the convention: h = sqrt(H_11) for 1 x 1, H itself otherwise.

    Parameters
    ----------
    H : ndarray of shape (d, d)
        A symmetric positive-definite bandwidth matrix in the data's units.

    Returns
    -------
    float or ndarray of shape (d, d)
        The float h with h^2 = H for d = 1, otherwise ``H``.
    """
    if H.shape == (1, 1):
        return float(np.sqrt(H[0, 0]))
    return H


def bandwidth_matrix(bandwidth: float | np.ndarray, d: int) -> np.ndarray:
    """The d x d bandwidth matrix H of a selector's answer: [[h^2]] for a float h (d = 1), H itself
    for a matrix.

    Parameters
    ----------
    bandwidth : float or array_like of shape (d, d)
        What a selector of :data:`parzen.bandwidth.SELECTORS` returned for ``d``-column data.
    d : int
        The number of columns of the data.

    Returns
    -------
    ndarray of shape (d, d)
        H, the covariance of each kernel bump (a new array).

    Raises
    ------
    ValueError
        If a float is given for d > 1, or a matrix of another shape than d x d: the answer does
        not follow the convention for ``d``-column data.
    """
    if np.ndim(bandwidth) == 0:
        if d != 1:
            raise ValueError(f"a scalar bandwidth h is the convention for 1-D data only, not for {d} columns")
        h = float(bandwidth)  # a number or a 0-d array
        return np.array([[h * h]])
    H = np.array(bandwidth, dtype=np.float64)
    if H.shape != (d, d):
        raise ValueError(f"a bandwidth matrix for {d}-column data must be {d} x {d}, got shape {H.shape}")
    return H
