"""Smoothed cross-validation bandwidth matrix :func:`scv_H` (Chacon & Duong 2011; R ``ks::Hscv``).

SCV(H) = (4 pi)^(-d/2) / (n |H|^1/2) + max(0, Q(2H + 2G) - 2 Q(H + 2G) + Q(2G)),
Q(Sigma) = n^-2 sum_{i,j} phi_Sigma(x_i - x_j)

(Chacon & Duong 2011, eq. 2 with the diagonal terms, as ``ks:::scv.mat`` with ``binned = FALSE``),
minimised over full H on the sphered data x* with the pilot G = g^2 I of ``ks``'s defaults:
for d = 2 the AMSE pilot of ``ks:::gamse.scv`` from a one-stage plug-in matrix and Psi_6,
otherwise the scalar pilot (:func:`parzen.bandwidth.functionals.dscalar_pilot`, SCV branch);
docs/departures.md, item 18.  Each Q is one Gaussian pair sum on the rows whitened by Sigma
(:meth:`parzen.backends.KDEBackend.pair_sum_hermite` with alpha = 0).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import linalg

from ..backends import resolve_backend
from .binned_matrix import DEFAULT_TOLERANCE
from .convention import from_matrix
from .functionals import dscalar_pilot, full_tensor, multi_indices, samse_pilot
from .plugin_matrix import amise, exact_functionals, minimise_full, normal_scale_start, prepared_sample, selected


def gaussian_pair_mean(backend, Y: np.ndarray, Sigma: np.ndarray, weights: np.ndarray | None = None, *, dtype=None) -> float:
    """Q(Sigma) = sum_{i,j} w_i w_j phi_Sigma(y_i - y_j), the pairs i = j included, w_i = 1/n or the
    weights divided by their sum.

    Parameters
    ----------
    backend : KDEBackend
    Y : numpy.ndarray
        (n, d).
    Sigma : numpy.ndarray
        (d, d) positive definite.
    weights : numpy.ndarray, optional
        Positive weights of the rows (None: equal).
    dtype : None or dtype

    Returns
    -------
    float
    """
    n, d = Y.shape
    w = np.full(n, 1.0 / n) if weights is None else weights / weights.sum()
    L = linalg.cholesky(Sigma, lower=True)
    Z = linalg.solve_triangular(L, Y.T, lower=True).T
    pairs = float(backend.pair_sum_hermite(Z, np.zeros((1, d), dtype=np.int64), w, dtype=dtype)[0])
    return (2.0 * pairs + float(w @ w)) * (2 * np.pi) ** (-d / 2) / float(np.prod(np.diag(L)))


def scv_objective(H: np.ndarray, G: np.ndarray, backend, sample, *, dtype=None, functionals=None) -> float:
    """SCV(H) of the module docstring (``ks:::scv.mat``, ``r = 0``); inf where H is not positive definite.

    With ``functionals`` (:class:`parzen.bandwidth.binned_matrix.BinnedFunctionals`) each Q is its
    binned ``gaussian_mean``; otherwise :func:`gaussian_pair_mean` over every pair of the sample's rows."""
    d = H.shape[0]
    if not np.all(np.linalg.eigvalsh(H) > 0):
        return math.inf
    if functionals is None:
        Y, w = sample.Y, sample.weights

        def Q(Sigma: np.ndarray) -> float:
            return gaussian_pair_mean(backend, Y, Sigma, w, dtype=dtype)
    else:
        Q = functionals.gaussian_mean
    bias = Q(2 * H + 2 * G) - 2 * Q(H + 2 * G) + Q(2 * G)
    return (4 * np.pi) ** (-d / 2) / (sample.n * math.sqrt(np.linalg.det(H))) + max(bias, 0.0)


def amse_pilot(sample, backend, *, dtype=None, functionals=None) -> float:
    """The pilot g of ``ks:::gamse.scv`` (one stage) for d = 2.

    H_amise: the one-stage SAMSE plug-in matrix of x* (Psi_4 with the normal-scale SAMSE pilot);
    Psi_6 with the normal-scale g6; then with C11 = 1/4 Psi_6^T (H (x) I_{d^4} (x) H) Psi_6,
    C12 = 3/4 (4 pi)^(-d/2) vec(H (x) I_d (x) H)^T Psi_6, C22 = (4 pi)^(-d) (4 tr H^2 + (d + 8) (tr H)^2) / 64,
    g = (2 (d + 4) C22 / (n (-(d + 2) C12 + sqrt((d + 2)^2 C12^2 + 8 (d + 4) C11 C22))))^(1/(d+6)).
    ``functionals`` (g, alphas) -> Psi_alpha(g) replaces the exact :func:`psi_hat` of the rows (the
    binned ones of :class:`parzen.bandwidth.binned_matrix.BinnedFunctionals`).
    """
    n, sigma = sample.n, sample.sigma_star
    d = sigma.shape[0]
    psi = functionals if functionals is not None else exact_functionals(sample, backend, dtype)
    g4 = samse_pilot(sigma, n, 4)
    psi4 = full_tensor(psi(g4, multi_indices(d, 4)), d, 4)
    H = minimise_full(lambda A: amise(A, psi4, n), normal_scale_start(sample))
    g6 = samse_pilot(sigma, n, 6)
    psi6 = full_tensor(psi(g6, multi_indices(d, 6)), d, 6)
    C11 = 0.25 * float(np.einsum("abcdef,ag,fh,gbcdeh->", psi6, H, H, psi6))
    C12 = 0.75 * (4 * np.pi) ** (-d / 2) * float(np.einsum("abckke,ab,ce->", psi6, H, H))
    C22 = (4 * np.pi) ** (-d) * (4 * np.trace(H @ H) + (d + 8) * np.trace(H) ** 2) / 64
    den = -(d + 2) * C12 + math.sqrt((d + 2) ** 2 * C12 * C12 + 8 * (d + 4) * C11 * C22)
    return (2 * (d + 4) * C22 / (den * n)) ** (1.0 / (d + 6))


def scv_H(X, *, weights=None, weight_kind: str = "probability", backend: str = "auto", dtype=None,
          method: str = "auto", tolerance: float = DEFAULT_TOLERANCE, grid_size=None) -> float | np.ndarray:
    """Smoothed cross-validation bandwidth matrix H (full): argmin of SCV(H) (Chacon & Duong 2011,
    Electronic Journal of Statistics 5, 1-23), as R ``ks::Hscv(x, binned = FALSE)``.

    On the sphered data x* = x S^-1/2 with ``ks``'s default pilot G = g^2 I (:func:`amse_pilot` for
    d = 2, the scalar SCV pilot otherwise), BFGS over a symmetric square root of H from the
    normal-scale matrix, then H = S^1/2 H* S^1/2.  Exact: each evaluation of SCV is three
    Gaussian sums over the n(n-1)/2 pairs.  ``ks`` computes the d = 2 pilot's plug-in matrix on a
    binned grid whatever ``binned`` says; here it is exact (docs/departures.md, item 18).

    Parameters
    ----------
    X : array_like of shape (n,) or (n, d)
        The sample (at least d + 2 rows, finite, covariance positive definite).
    weights : array_like of shape (n,), optional
        Non-negative weights of the rows: weighted pair sums, covariance and Kish's n, as in
        :func:`parzen.bandwidth.plugin_H`.
    weight_kind : {"probability", "frequency"}, default "probability"
        As in :func:`parzen.bandwidth.plugin_H`: frequency weights give the answer on the
        replicated data.
    backend : str, default "auto"
        Backend of the pair sums (``parzen.backends``).
    dtype : None or numpy float type
        Compute precision of the backend (None: its default for the pilot's functionals, float64
        for the SCV criterion, whose terms cancel).
    method : {"auto", "exact", "binned"}, default "auto"
        "exact": every pair; "binned" (d <= 4): the pilot's functionals and the three Gaussian
        means Q from linear-binning counts of x* with the binning error's delta^2 term taken out
        (:mod:`parzen.bandwidth.binned_matrix`); "auto": exact below
        :data:`parzen.bandwidth.binned_matrix.AUTO_BINNED_FROM` rows, binned from there.  Data
        served in chunks (:class:`parzen.binned.ChunkedData`) are always binned.
    tolerance : float, default 1e-3
        Binned: the relative (Frobenius) error allowed on H against the exact H; sets the grid
        (:mod:`parzen.bandwidth.binned_matrix`).
    grid_size : int or sequence of int, optional
        Binned: nodes per axis, overriding ``tolerance``.

    Returns
    -------
    float or ndarray of shape (d, d)
        H in data units; for 1-D data the float h = sqrt(H) (:mod:`parzen.bandwidth.convention`).

    Raises
    ------
    ValueError
        If X is invalid (fewer than d + 2 rows, non-finite values, a constant column, a singular
        covariance) or the weights are (as :func:`parzen.bandwidth.plugin_H`).
    """
    sample, chosen = prepared_sample(X, weights, "sphere", weight_kind, method, "scv_H")
    be = resolve_backend(backend) if chosen == "exact" else None
    d = sample.sigma_star.shape[0]
    # the criterion's bias is a difference of three pair means that cancel: float32 sums moved H by
    # 3e-2 (H100, n = 10^4, d = 2, benchmarks/results/gpu_plugin_H.md), so they run in float64
    # unless a dtype is asked for
    criterion_dtype = np.float64 if dtype is None else dtype

    def solve(functionals) -> np.ndarray:
        g = amse_pilot(sample, be, dtype=dtype, functionals=functionals) if d == 2 else dscalar_pilot(
            be, getattr(sample, "Y", None), sample.n, sample.weights if functionals is None else None, scv=True,
            dtype=dtype, sigma=sample.sigma_star, functionals=functionals,
        )
        G = g * g * np.eye(d)
        return minimise_full(lambda H: scv_objective(H, G, be, sample, dtype=criterion_dtype, functionals=functionals),
                             normal_scale_start(sample))

    H_star = selected(sample, chosen, solve, what="scv_H", tolerance=tolerance, grid_size=grid_size, method=method)
    return from_matrix(sample.back(H_star))
