"""Kernel functions as data: radial profiles, their normalising constants and the
Gaussian derivatives the bandwidth selectors need.

Every kernel is *radially symmetric*: K(u) = c_d k(|u|^2) on R^d, with k the profile
(k(0) = 1) and c_d the constant that makes K integrate to one.  Evaluated through
:meth:`Kernel.unit_scale`, every kernel has the identity covariance, so a bandwidth
matrix H is the covariance of the kernel K_H whatever the kernel (the convention of
R's ``density`` and of KDEpy), and a bandwidth chosen for the Gaussian carries over.

References (full citations in ``docs/statistics.md``, "Sources"): Wand & Jones, *Kernel
Smoothing* (1995), sections 2.7 and 4.2; Andrzejewski et al. (paper 000 in docs/statistics.md),
eqs. (5) and (15)-(19).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache

import numpy as np
from numpy.polynomial import hermite_e
from scipy import integrate


@dataclass(frozen=True)
class Kernel:
    """A radial kernel K(u) = c_d k(|u|^2) (Wand & Jones 1995, section 4.2).

    Parameters
    ----------
    name : str
        The kernel's name, its key in :data:`KERNELS`.
    profile : callable
        Maps squared radii s = |u|^2 (an array) to k(s), with k(0) = 1.
    support : float, default 1.0
        The radius beyond which k vanishes (``inf`` for the Gaussian).
    """

    name: str
    profile: Callable[[np.ndarray], np.ndarray] = field(repr=False)
    support: float = 1.0

    def norm_const(self, d: int) -> float:
        """The normalising constant c_d = 1 / int_{R^d} k(|u|^2) du.

        Computed in polar coordinates, c_d^-1 = S_{d-1} int_0^R k(r^2) r^(d-1) dr with S_{d-1}
        the area of the unit sphere; (2 pi)^(-d/2) for the Gaussian.

        Parameters
        ----------
        d : int
            The dimension.

        Returns
        -------
        float
            c_d (cached per kernel and d).
        """
        return _norm_const(self.name, d)

    def log_profile(self, s: np.ndarray) -> np.ndarray:
        """The log-profile log k(s), for log-densities.

        Parameters
        ----------
        s : array_like
            Squared radii |u|^2.

        Returns
        -------
        numpy.ndarray
            -s/2 for the Gaussian (finite at every s, where k underflows beyond s ~ 1490); the log
            of the profile for the others, -inf outside their support (the density is 0 there).
        """
        s = np.asarray(s, dtype=np.float64)
        if self.name == "gaussian":
            return -0.5 * s
        with np.errstate(divide="ignore"):
            return np.log(self.profile(s))

    def unit_scale(self, d: int) -> float:
        """The scale sigma such that sigma^d K(sigma u) has the identity covariance.

        sigma^2 is the per-coordinate variance of K, E|U|^2 / d = (S_{d-1} int k(r^2) r^(d+1) dr)
        / (d S_{d-1} int k(r^2) r^(d-1) dr); 1 for the Gaussian.

        Parameters
        ----------
        d : int
            The dimension.

        Returns
        -------
        float
            sigma (cached per kernel and d).
        """
        return _unit_scale(self.name, d)


def _gaussian(s):
    return np.exp(-0.5 * s)


def _epanechnikov(s):
    return np.maximum(1.0 - s, 0.0)


def _uniform(s):
    return (s <= 1.0).astype(np.float64)


def _triangular(s):
    return np.maximum(1.0 - np.sqrt(s), 0.0)


def _biweight(s):
    return np.maximum(1.0 - s, 0.0) ** 2


def _cosine(s):
    r = np.sqrt(s)
    return np.where(r <= 1.0, np.cos(0.5 * np.pi * np.minimum(r, 1.0)), 0.0)


KERNELS: dict[str, Kernel] = {
    k.name: k
    for k in (
        Kernel("gaussian", _gaussian, math.inf),
        Kernel("epanechnikov", _epanechnikov),
        Kernel("uniform", _uniform),
        Kernel("triangular", _triangular),
        Kernel("biweight", _biweight),
        Kernel("cosine", _cosine),
    )
}


def get_kernel(name: str) -> Kernel:
    """Look a kernel up by name.

    Parameters
    ----------
    name : str
        One of the keys of :data:`KERNELS`: gaussian, epanechnikov, uniform, triangular,
        biweight, cosine.

    Returns
    -------
    Kernel

    Raises
    ------
    ValueError
        For another name; the message lists the valid names.
    """
    try:
        return KERNELS[name]
    except (KeyError, TypeError):
        raise ValueError(
            f"unknown kernel {name!r}; choose one of {', '.join(sorted(KERNELS))}"
        ) from None


def _sphere_area(d: int) -> float:
    """Surface area of the unit sphere in R^d: 2 pi^(d/2) / Gamma(d/2)."""
    return 2.0 * math.pi ** (d / 2) / math.gamma(d / 2)


def _radial_moment(name: str, d: int, power: int) -> float:
    """S_{d-1} * int_0^R k(r^2) r^(d-1+power) dr."""
    kernel = KERNELS[name]
    f = lambda r: float(kernel.profile(np.asarray(r * r))) * r ** (d - 1 + power)
    value, _ = integrate.quad(f, 0.0, kernel.support, epsabs=0.0, epsrel=1e-13, limit=200)
    return _sphere_area(d) * value


@cache
def _norm_const(name: str, d: int) -> float:
    if name == "gaussian":
        return (2.0 * math.pi) ** (-d / 2)
    return 1.0 / _radial_moment(name, d, 0)


@cache
def _unit_scale(name: str, d: int) -> float:
    if name == "gaussian":
        return 1.0
    variance = _radial_moment(name, d, 2) / _radial_moment(name, d, 0) / d
    return math.sqrt(variance)


# --- Gaussian kernel constants and derivatives (paper 000 in docs/statistics.md, eqs. 15-19) ---

#: R(K) = int K^2 = 1 / (2 sqrt(pi)) for the univariate Gaussian.
GAUSS_RK = 1.0 / (2.0 * math.sqrt(math.pi))
#: mu_2(K) = int u^2 K(u) du = 1 for the Gaussian.
GAUSS_MU2 = 1.0


def gauss_derivative(order: int, x: np.ndarray) -> np.ndarray:
    """The r-th derivative of the standard normal density phi.

    phi^(r)(x) = (-1)^r He_r(x) phi(x), He_r the probabilists' Hermite polynomial; e.g.
    K^(4)(x) = phi(x)(x^4 - 6x^2 + 3) and K^(6)(x) = phi(x)(x^6 - 15x^4 + 45x^2 - 15)
    (Andrzejewski et al., paper 000 in docs/statistics.md, eqs. 16 and 18; Wand & Jones 1995,
    section 3.5).

    Parameters
    ----------
    order : int
        r >= 0.
    x : array_like
        Where to evaluate.

    Returns
    -------
    numpy.ndarray
        phi^(r)(x), float64, of the shape of ``x``.
    """
    x = np.asarray(x, dtype=np.float64)
    coeffs = np.zeros(order + 1)
    coeffs[order] = 1.0
    sign = -1.0 if order % 2 else 1.0
    return sign * hermite_e.hermeval(x, coeffs) * np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)


def gauss_derivative_even_coefficients(order: int) -> np.ndarray:
    """The coefficients c_0..c_{r/2} with phi^(r)(u) = sum_m c_m s^m exp(-s/2) / sqrt(2 pi), s = u^2.

    For even r, He_r has only even powers of u, so the fast backends evaluate phi^(r) as a
    polynomial in s = u^2 times one exponential.

    Parameters
    ----------
    order : int
        An even r >= 0.

    Returns
    -------
    numpy.ndarray
        r/2 + 1 coefficients, lowest power first.

    Raises
    ------
    ValueError
        For an odd or negative r.
    """
    if order % 2 or order < 0:
        raise ValueError(f"only even derivative orders are polynomials in u^2, got r = {order}")
    return hermite_e.herme2poly([0.0] * order + [1.0])[::2].copy()


@cache
def gauss_derivative_at_zero(order: int) -> float:
    """phi^(r)(0): K^(4)(0) = 3/sqrt(2 pi), K^(6)(0) = -15/sqrt(2 pi).

    Parameters
    ----------
    order : int
        r >= 0.

    Returns
    -------
    float
        phi^(r)(0) (cached: PLUGIN asks at each call).
    """
    return float(gauss_derivative(order, np.zeros(1))[0])
