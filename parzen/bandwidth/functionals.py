"""Multivariate density-derivative functionals Psi_r and the scalar pilots of the plug-in selectors.

Psi_r = integral of D^{(x)r} f(x) f(x) dx, the vector of the r-th order partial derivatives
(Chacon & Duong 2010, TEST 19, 375-398, section 2; docs/statistics.md, "Multivariate plug-in").
Its kernel estimate with pilot G = g^2 I (Chacon & Duong 2010, eq. 5) is
Psi_hat_r = n^-2 sum_{i,j} D^{(x)r} phi_G(x_i - x_j), each distinct partial derivative summed over
the pairs by :meth:`parzen.backends.KDEBackend.pair_sum_hermite`.  The pilots' formulas are those
of R ``ks`` 1.14 (``gsamse``, ``gdscalar``, ``psins``, ``nu``), which :mod:`parzen.bandwidth.plugin_matrix`
and :mod:`parzen.bandwidth.scv` follow (docs/departures.md, item 18).

A multi-index alpha (d non-negative integers, |alpha| = r) stands for the partial derivative
d^|alpha| / dx_1^alpha_1 ... dx_d^alpha_d; :func:`multi_indices` lists them in ``ks``'s order.
"""

from __future__ import annotations

import math
from functools import cache, partial

import numpy as np


@cache
def multi_indices(d: int, r: int) -> np.ndarray:
    """The distinct multi-indices of order r in d variables, in R ``ks``'s order.

    ``ks`` orders the d^r entries of D^{(x)r} as R's ``vec`` does (the first index fastest) and
    lists each distinct partial derivative where it first appears (``dmvnorm.deriv(...,
    only.index=TRUE)``).

    Parameters
    ----------
    d, r : int
        Variables and order.

    Returns
    -------
    numpy.ndarray
        (C(r + d - 1, d - 1), d) int64, read-only.
    """
    counts = _vec_counts(d, r)
    _, first = np.unique(counts, axis=0, return_index=True)
    out = counts[np.sort(first)]
    out.flags.writeable = False
    return out


def _vec_counts(d: int, r: int) -> np.ndarray:
    """(d^r, d): for each entry of vec(D^{(x)r}) (first index fastest), how often each variable occurs."""
    positions = np.arange(d**r)
    digits = (positions[:, None] // d ** np.arange(r)) % d
    return np.stack([(digits == k).sum(axis=1) for k in range(d)], axis=1)


def multiplicity(alpha: np.ndarray) -> np.ndarray:
    """How many entries of D^{(x)r} each multi-index stands for: r! / prod_k alpha_k!.

    Parameters
    ----------
    alpha : numpy.ndarray
        (m, d) multi-indices.

    Returns
    -------
    numpy.ndarray
        (m,) float64.
    """
    alpha = np.atleast_2d(alpha)
    return np.array([math.factorial(int(a.sum())) / math.prod(math.factorial(int(v)) for v in a) for a in alpha])


def full_tensor(values: np.ndarray, d: int, r: int) -> np.ndarray:
    """The symmetric d x ... x d (r axes) tensor whose entries are ``values`` of the multi-indices
    of :func:`multi_indices` (d, r).

    Parameters
    ----------
    values : numpy.ndarray
        One value per distinct multi-index.
    d, r : int
        Variables and order.

    Returns
    -------
    numpy.ndarray
        shape (d,) * r.
    """
    index = {tuple(a): k for k, a in enumerate(multi_indices(d, r))}
    positions = _vec_counts(d, r)
    flat = np.array([values[index[tuple(c)]] for c in positions])
    return flat.reshape((d,) * r, order="F")


def psi_hat(backend, Y: np.ndarray, g: float, alphas: np.ndarray, weights: np.ndarray | None = None, *, dtype=None) -> np.ndarray:
    """Kernel estimates of Psi_alpha with pilot G = g^2 I, diagonal terms included (as R ``ks::kfe``).

    Psi_hat_alpha = sum_{i,j} w_i w_j D^alpha phi_G(y_i - y_j), w_i = 1/n unweighted, else the
    weights divided by their sum (Chacon & Duong 2010, eq. 5; the pairs i = j included, as ``ks``
    does: ``inc = 1``).  D^alpha phi_{g^2 I}(z) = (2 pi)^(-d/2) g^(-d-|alpha|) exp(-|u|^2/2)
    prod_k He_{alpha_k}(u_k) with u = z / g for even |alpha|.

    Parameters
    ----------
    backend : KDEBackend
        Sums the pairs (:meth:`parzen.backends.KDEBackend.pair_sum_hermite`).
    Y : numpy.ndarray
        (n, d) data.
    g : float
        The pilot scale.
    alphas : numpy.ndarray
        (m, d) multi-indices of one even order.
    weights : numpy.ndarray, optional
        Non-negative weights (None: equal).
    dtype : None or dtype
        The backend's compute type.

    Returns
    -------
    numpy.ndarray
        (m,) float64.
    """
    alphas = np.atleast_2d(alphas)
    n, d = Y.shape
    w = np.full(n, 1.0 / n) if weights is None else weights / weights.sum()
    pairs = backend.pair_sum_hermite(Y / g, alphas, w, dtype=dtype)
    at_zero = np.prod([[_hermite_at_zero(int(a)) for a in alpha] for alpha in alphas], axis=1)
    order = int(alphas[0].sum())
    return (2.0 * pairs + float(w @ w) * at_zero) * (2.0 * np.pi) ** (-d / 2) * g ** (-d - order)


def _hermite_at_zero(m: int) -> float:
    """He_m(0): 0 for odd m, (-1)^(m/2) (m - 1)!! for even m."""
    return 0.0 if m % 2 else (-1.0) ** (m // 2) * odd_factorial(m)


def odd_factorial(m: int) -> float:
    """(m - 1)!! = m! / (2^(m/2) (m/2)!) for even m (R ``ks:::OF``)."""
    return math.factorial(m) / (2 ** (m // 2) * math.factorial(m // 2))


def gaussian_derivative_at_zero(alphas: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    """D^alpha phi_Sigma(0) for each multi-index: phi_Sigma(0) (-1)^(r/2) times the sum over the
    pairings of alpha's r index positions of the products of the paired entries of Sigma^-1 (0 for odd r).

    Parameters
    ----------
    alphas : numpy.ndarray
        (m, d) multi-indices.
    sigma : numpy.ndarray
        (d, d) covariance.

    Returns
    -------
    numpy.ndarray
        (m,) float64.
    """
    alphas = np.atleast_2d(alphas)
    d = sigma.shape[0]
    A = np.linalg.inv(sigma)
    peak = (2.0 * np.pi) ** (-d / 2) / math.sqrt(np.linalg.det(sigma))
    out = np.zeros(len(alphas))
    for m, alpha in enumerate(alphas):
        positions = [k for k, a in enumerate(alpha) for _ in range(int(a))]
        if len(positions) % 2:
            continue
        out[m] = peak * (-1.0) ** (len(positions) // 2) * _pairings(tuple(positions), A)
    return out


def _pairings(positions: tuple[int, ...], A: np.ndarray) -> float:
    """sum over the perfect matchings of ``positions`` of prod A[a, b] over the matched (a, b)."""
    if not positions:
        return 1.0
    first, rest = positions[0], positions[1:]
    return sum(A[first, rest[k]] * _pairings(rest[:k] + rest[k + 1 :], A) for k in range(len(rest)))


def psi_normal_scale(alphas: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    """Psi_alpha of the normal density N(0, Sigma): D^alpha phi_{2 Sigma}(0) (R ``ks:::psins``).

    Parameters
    ----------
    alphas : numpy.ndarray
        (m, d) multi-indices.
    sigma : numpy.ndarray
        (d, d).

    Returns
    -------
    numpy.ndarray
        (m,) float64.
    """
    return gaussian_derivative_at_zero(alphas, 2.0 * sigma)


def nu(r: int, A: np.ndarray) -> float:
    """nu_r(A) = r! 2^r times the r-th coefficient of the recursion of R ``ks:::nu`` (the r-th
    moment-like invariant of A: nu_1(A) = tr A, nu_2(A) = tr(A)^2 + 2 tr(A^2)).

    Parameters
    ----------
    r : int
    A : numpy.ndarray
        (d, d) symmetric.

    Returns
    -------
    float
    """
    eigen = np.linalg.eigvalsh(A)
    traces = [float(np.sum(eigen**p)) for p in range(1, r + 1)]
    values = [1.0]
    for p in range(1, r + 1):
        values.append(sum(t * v for t, v in zip(traces[:p], reversed(values))) / (2 * p))
    return math.factorial(r) * 2**r * values[r]


def even_indices(d: int, r: int) -> np.ndarray:
    """The multi-indices of :func:`multi_indices` (d, r) whose entries are all even, in that order."""
    alphas = multi_indices(d, r)
    return alphas[(alphas % 2 == 0).all(axis=1)]


def samse_pilot(sigma: np.ndarray, n: float, order: int, psi6: np.ndarray | None = None, *, follow_ks: bool = True) -> float:
    """The SAMSE pilot scale g for Psi_order (order 4 or 6), G = g^2 I (Chacon & Duong 2010,
    section 3.2; R ``ks:::gsamse``).

    g = (gamma n)^(-1/(order + d + 2)), gamma = (-B2 + sqrt(B2^2 + 4 B1 B3)) / (2 B1), with
    B1 = (2 order + 2 d) sum K_alpha^2, B2 = (order + d - 2) sum K_alpha c_alpha, B3 = sum c_alpha^2,
    over the even multi-indices alpha of the order, K_alpha = D^alpha phi_I(0) and
    c_alpha = sum_j Psi_{alpha + 2 e_j}: of the normal with covariance ``sigma`` (one stage), or
    from the estimated Psi_6 (``psi6``, order 4, two stages).

    Parameters
    ----------
    sigma : numpy.ndarray
        (d, d) covariance of the (pre-transformed) data.
    n : float
        Sample size.
    order : int
        4 or 6.
    psi6 : numpy.ndarray, optional
        Estimates of Psi_alpha for :func:`multi_indices` (d, 6), for the second stage of order 4.
    follow_ks : bool, default True
        With ``psi6``: read c_alpha as ``ks`` 1.14 does, the entry of vec(Psi_6) at the position
        that alpha + 2 e_j has in the list of distinct multi-indices (docs/departures.md, item 18);
        False reads Psi_{alpha + 2 e_j} itself, as the formula says.

    Returns
    -------
    float
    """
    d = sigma.shape[0]
    alphas = even_indices(d, order)
    K = gaussian_derivative_at_zero(alphas, np.eye(d))
    shifted = [alphas + 2 * np.eye(d, dtype=np.int64)[j] for j in range(d)]
    if psi6 is None:
        c = np.sum([psi_normal_scale(s, sigma) for s in shifted], axis=0)
    else:
        listed = {tuple(a): k for k, a in enumerate(multi_indices(d, 6))}
        source = full_tensor(psi6, d, 6).ravel(order="F") if follow_ks else psi6
        c = np.sum([[source[listed[tuple(a)]] for a in s] for s in shifted], axis=0)
    B1 = (2 * order + 2 * d) * float(K @ K)
    B2 = (order + d - 2) * float(K @ c)
    B3 = float(c @ c)
    gamma = (-B2 + math.sqrt(B2 * B2 + 4 * B1 * B3)) / (2 * B1)
    return (gamma * n) ** (-1.0 / (order + d + 2))


def laplacian_cubed_indices(d: int) -> tuple[np.ndarray, np.ndarray]:
    """The multi-indices 2 beta (|beta| = 3) and their counts 3! / prod beta_k!, so that
    (vec I)^{(x)3} . D^{(x)6} f = sum counts * D^{2 beta} f (the sixth-order scalar functional of ``ks``)."""
    betas = multi_indices(d, 3)
    return np.ascontiguousarray(2 * betas), multiplicity(betas)


def dscalar_pilot(
    backend, Y: np.ndarray | None, n: float, weights: np.ndarray | None = None, *, scv: bool = False, dtype=None,
    sigma: np.ndarray | None = None, functionals=None,
) -> float:
    """The two-stage scalar pilot g for Psi_4 (Chacon & Duong 2010, section 3.3; R ``ks:::gdscalar``
    with ``r = 0, nstage = 2``; ``scv`` as ``ks::Hscv`` asks for it).

    Stage 1: the normal-scale g6 for eta_6 = (vec I)^{(x)3} . Psi_6 from the sample covariance S,
    g6 = (2 B1 / (-B2 + sqrt(B2^2 + 4 B1 B3)))^(1/(d+8)) n^(-1/(d+8)); stage 2: eta_6 estimated
    with G = g6^2 I, then g = (2 A1 / ((-A2 + sqrt(A2^2 + 4 A1 A3)) n))^(1/(d+6)) with
    A1 = c1 (2d + 8) phi(0)^2 3 nu_2(I), A2 = c2 (d + 2) phi(0) 3 eta_6, A3 = c3 eta_6^2
    (c = 1, 1, 1; for SCV 2^-d, 2^(1-d/2), 4 and the B's of ``ks``'s SCV branch).

    Parameters
    ----------
    backend : KDEBackend
    Y : numpy.ndarray or None
        (n, d) the pre-transformed data (None with ``functionals`` and ``sigma``).
    n : float
        Sample size.
    weights : numpy.ndarray, optional
        Positive weights of the rows (None: equal): the weighted covariance and functionals.
    scv : bool, default False
        The pilot for smoothed cross-validation.
    dtype : None or dtype
    sigma : numpy.ndarray, optional
        (d, d) the covariance S of Y (default: ``np.cov`` with the weights as ``aweights``; the
        matrix selectors pass their sample's, which frequency weights define otherwise).
    functionals : callable, optional
        (g, alphas) -> the estimates of Psi_alpha(g) in place of :func:`psi_hat` of Y (the binned
        ones of :class:`parzen.bandwidth.binned_matrix.BinnedFunctionals`).

    Returns
    -------
    float
    """
    if functionals is None or sigma is None:
        if Y is None:
            raise ValueError("dscalar_pilot needs the rows Y unless both functionals and sigma are given")
        S = np.atleast_2d(np.cov(Y, rowvar=False, aweights=weights)) if sigma is None else sigma
        functionals = functionals or partial(psi_hat, backend, Y, weights=weights, dtype=dtype)
    else:
        S = sigma
    d = S.shape[0]
    alphas6 = multi_indices(d, 6)
    lap = np.sum([psi_normal_scale(alphas6 + 2 * np.eye(d, dtype=np.int64)[j], S) for j in range(d)], axis=0)
    B3 = float(multiplicity(alphas6) @ lap**2)
    rising = math.prod(d + 2 * i for i in range(4))
    if scv:
        B1 = 2.0**-5 * (4 * np.pi) ** -d * odd_factorial(6) * rising
        B2 = -(d + 4) * 2.0**-6 * (4 * np.pi) ** -d / math.sqrt(np.linalg.det(S)) * odd_factorial(6) * nu(4, np.linalg.inv(S))
        B3 *= 4
        c1, c2, c3 = 2.0**-d, 2.0 ** (-d / 2 + 1), 4.0
    else:
        B1 = 2 * (2 * np.pi) ** -d * odd_factorial(6) * rising
        B2 = -(d + 4) * 2.0 ** (-d / 2 + 2) * (2 * np.pi) ** -d / math.sqrt(np.linalg.det(S)) * odd_factorial(6) * nu(4, np.linalg.inv(S))
        c1, c2, c3 = 1.0, 1.0, 1.0
    g6 = (2 * B1 / (-B2 + math.sqrt(B2 * B2 + 4 * B1 * B3))) ** (1.0 / (d + 8)) * n ** (-1.0 / (d + 8))
    indices, counts = laplacian_cubed_indices(d)
    eta6 = float(counts @ functionals(g6, indices))
    L0 = (2 * np.pi) ** (-d / 2)
    A1 = c1 * (2 * d + 8) * L0 * L0 * odd_factorial(4) * nu(2, np.eye(d))
    A2 = c2 * (d + 2) * L0 * odd_factorial(4) * eta6
    A3 = c3 * eta6 * eta6
    return (2 * A1 / ((-A2 + math.sqrt(A2 * A2 + 4 * A1 * A3)) * n)) ** (1.0 / (d + 6))


def pairs_of(d: int) -> list[tuple[int, int]]:
    """The (i, j), i <= j, of a d x d symmetric matrix, in R ``vech``'s order (column by column)."""
    return [(i, j) for j in range(d) for i in range(j, d)]


__all__ = [
    "dscalar_pilot",
    "even_indices",
    "full_tensor",
    "gaussian_derivative_at_zero",
    "multi_indices",
    "multiplicity",
    "nu",
    "odd_factorial",
    "psi_hat",
    "psi_normal_scale",
    "samse_pilot",
]
