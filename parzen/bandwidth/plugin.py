"""PLUGIN: the two-stage direct plug-in bandwidth for univariate data.

Andrzejewski et al. (paper 000 in docs/statistics.md), section 4.4, eqs. (12)-(19), with the
diagonal term inside the bracket of Psi_r (docs/departures.md, item 1) -- the method of
Sheather & Jones (1991) / Wand & Jones (1995, section 3.6), as in ``KernSmooth::dpik(level = 2)``.
The bandwidth h is in data units (:mod:`parzen.bandwidth.convention`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._validate import as_data, check_variance, choose, power_of_two, standardised
from ..backends import resolve_backend
from ..binned.plugin import binned_pilot_stages, check_grid_size, check_tolerance
from ..kernels import GAUSS_MU2, GAUSS_RK, gauss_derivative_at_zero
from .rules import NORMAL_IQR

#: Orders r of the functionals Psi_r = int f^(r) f that psi_functional estimates.
_PSI_ORDERS = (0, 2, 4, 6, 8)

SCALES = ("sd", "minim")

METHODS = ("auto", "exact", "binned")

#: method="auto" sums pairs exactly up to this n on each backend, and bins beyond: the largest n
#: where the exact PLUGIN took no longer than the binned one (0.4 ms at tolerance 1e-4 for
#: n <= 2048, 0.9 ms at n = 16 384), measured on the 2-core CPU (numpy 0.35 ms at n = 128, 2.7 ms
#: at 256; cpu 0.40 ms at 256, 0.74 ms at 512); the GPU's 0.9 ms at n = 32 768 is from
#: benchmarks/results/gpu_backend.md.
AUTO_EXACT_MAX_N = {"numpy": 128, "cpu": 256, "gpu": 32768}


@dataclass(frozen=True)
class PluginStages:
    """The intermediate quantities of PLUGIN (paper 000 in docs/statistics.md, eqs. 13-19), in
    data units (Psi_r in units^-(r+1))."""

    h: float  # the bandwidth, eq. (19), in data units
    sigma: float  # the scale estimate, eq. (13) (or min(sd, IQR/1.349))
    g1: float  # pilot bandwidth for Psi_6, eq. (15)
    psi6: float  # eq. (16)
    g2: float  # pilot bandwidth for Psi_4, eq. (17)
    psi4: float  # eq. (18)
    method: str = "exact"  # "exact" (every pair) or "binned" (parzen.binned.plugin)
    grid_size: int | None = None  # the binned grid's number of nodes (None when exact)


def psi_functional(x: np.ndarray, order: int, g: float, *, backend="auto", dtype=None) -> float:
    """Kernel estimate of Psi_r = int f^(r) f with pilot bandwidth g.

    Psi_r(g) = n^-2 g^-(r+1) [2 sum_{i<j} K^(r)((X_i - X_j)/g) + n K^(r)(0)]
    (Andrzejewski et al., paper 000 in docs/statistics.md, eqs. 16, 18, with docs/departures.md,
    item 1; paper 002, eqs. 1.5, 1.8).

    Parameters
    ----------
    x : array_like of shape (n,)
        The univariate sample.
    order : int
        r, one of 0, 2, 4, 6, 8 (even derivatives of the Gaussian).
    g : float
        The pilot bandwidth, positive and finite, in data units.
    backend : str, default "auto"
        Backend of the pair sums (``parzen.backends``).
    dtype : None or numpy float type
        Compute precision of the backend (None: its default).

    Returns
    -------
    float
        The estimate of Psi_r.

    Raises
    ------
    ValueError
        If x has more than one column, ``order`` or ``g`` is invalid.
    """
    data = as_data(x, name="x")
    if data.d != 1:
        raise ValueError(f"psi_functional is univariate: x has {data.d} columns; select one column")
    if order not in _PSI_ORDERS:
        raise ValueError(f"order must be one of {_PSI_ORDERS} (even derivatives of the Gaussian), got {order!r}")
    if not (np.isfinite(g) and g > 0):
        raise ValueError(f"the pilot bandwidth g must be a positive finite number, got {g!r}")
    x = data.values[:, 0]
    be = resolve_backend(backend, dtype, work=0.5 * x.size * x.size)
    return float(_psi(be.prepare_pair_sum_1d(x, dtype=dtype).sum, x.size, order, g))


def _psi(pair_sum, n: int, order: int, g):
    """Psi_r(g) from ``pair_sum(kind, g)``, the backend's 1-D pair sum over the data.

    Plain arithmetic on what ``pair_sum`` returns (a float, or a device number: see
    :class:`parzen.backends.PairSums1D`), so ``g`` may itself be such a number.
    """
    return (2.0 * pair_sum(f"gauss_d{order}", g) + n * gauss_derivative_at_zero(order)) / (n * n * g ** (order + 1))


def plugin_stages(
    x,
    *,
    scale: str = "sd",
    backend: str = "auto",
    dtype=None,
    method: str = "auto",
    grid_size: int | None = None,
    tolerance: float = 1e-4,
) -> PluginStages:
    """PLUGIN with its intermediates; see :func:`plugin`.

    Parameters
    ----------
    x : array_like of shape (n,)
        The univariate sample.
    scale, backend, dtype, method, grid_size, tolerance
        As in :func:`plugin`.

    Returns
    -------
    PluginStages
        h, sigma, g1, psi6, g2 and psi4, in data units; ``method`` ("exact" or "binned", what
        "auto" chose) and ``grid_size`` (the binned grid's nodes, None when exact).

    Raises
    ------
    ValueError
        As :func:`plugin`.
    """
    choose(scale, SCALES, what="scale")
    choose(method, METHODS, what="method")
    tolerance = check_tolerance(tolerance)
    grid_size = check_grid_size(grid_size)
    data = as_data(x, name="x")
    if data.d != 1:
        raise ValueError(
            f"PLUGIN is univariate: x has {data.d} columns; select one column, "
            "or use lscv_h / lscv_H / normal_scale for multivariate data"
        )
    check_variance(data, name="x")
    # standardise by powers of two (exact): first the spread, then sigma; scale back at the end
    data, units = standardised(data)
    v = data.values[:, 0]
    sigma = _scale_estimate(v, scale)
    unit_sigma = float(power_of_two(sigma))
    v, sigma, unit = v / unit_sigma, sigma / unit_sigma, float(units[0]) * unit_sigma
    n = v.size
    g1 = first_pilot(sigma, n)
    be = resolve_backend(backend, dtype, work=0.5 * n * n)
    if method == "auto":
        method = "exact" if n <= AUTO_EXACT_MAX_N.get(be.name, AUTO_EXACT_MAX_N["cpu"]) else "binned"
    if method == "binned":
        binned = binned_pilot_stages(v, g1, sigma, tolerance=tolerance, grid_size=grid_size)
        psi6, g2, psi4, h, grid_size = binned.psi6, binned.g2, binned.psi4, binned.h, binned.grid_size
    else:
        psi6, g2, psi4, h = be.prepare_pair_sum_1d(v, dtype=dtype).evaluate(_pilot_stages, n, g1)
        grid_size = None
    with np.errstate(over="ignore", under="ignore"):  # Psi_r in data units: u^-(r+1) (may not fit a float)
        psi6, psi4 = (float(psi / np.float64(unit) ** (order + 1)) for psi, order in ((psi6, 6), (psi4, 4)))
    return PluginStages(
        h=h * unit,
        sigma=sigma * unit,
        g1=g1 * unit,
        psi6=psi6,
        g2=g2 * unit,
        psi4=psi4,
        method=method,
        grid_size=grid_size,
    )


def first_pilot(sigma: float, n: float) -> float:
    """g_1, the pilot bandwidth of Psi_6: [-2 K^(6)(0) / (mu_2 Psi_8^NS n)]^(1/9), with the normal
    reference Psi_8^NS = 105 / (32 sqrt(pi) sigma^9) (paper 000 in docs/statistics.md, eqs. 14-15;
    Wand & Jones 1995, section 3.6).

    Parameters
    ----------
    sigma : float
        The scale estimate of eq. (13), best near 1 (PLUGIN passes it scaled by a power of two:
        sigma^9 may not fit a float in the data's units).
    n : float
        The number of data the functionals are estimated from.

    Returns
    -------
    float
        g_1 in the units of ``sigma``.
    """
    psi8_ns = 105.0 / (32.0 * math.sqrt(math.pi) * sigma**9)  # eq. (14)
    return (-2.0 * gauss_derivative_at_zero(6) / (GAUSS_MU2 * psi8_ns * n)) ** (1 / 9)  # eq. (15)


def _scale_estimate(v: np.ndarray, scale: str) -> float:
    """sigma: the standard deviation, eqs. (12)-(13), or min(sd, IQR/1.349) for "minim"."""
    sigma = float(np.std(v, ddof=1))
    if scale == "minim":
        q75, q25 = np.percentile(v, [75, 25])
        if q75 > q25:
            sigma = min(sigma, float(q75 - q25) / NORMAL_IQR)
    return sigma


def _pilot_stages(pair_sum, n: int, g1):
    """(psi6, g2, psi4, h) from the pair sums over n points, eqs. (16)-(19).

    Plain arithmetic on what ``pair_sum`` returns: on the GPU g2 follows from psi6 on the
    device and both stages run back to back (see :meth:`parzen.backends.PairSums1D.evaluate`).
    """
    psi6 = _psi(pair_sum, n, 6, g1)  # eq. (16)
    g2 = (-2.0 * gauss_derivative_at_zero(4) / (GAUSS_MU2 * psi6 * n)) ** (1 / 7)  # eq. (17)
    psi4 = _psi(pair_sum, n, 4, g2)  # eq. (18)
    h = (GAUSS_RK / (GAUSS_MU2**2 * psi4 * n)) ** 0.2  # eq. (19)
    return psi6, g2, psi4, h


def plugin(
    x,
    *,
    scale: str = "sd",
    backend: str = "auto",
    dtype=None,
    method: str = "auto",
    grid_size: int | None = None,
    tolerance: float = 1e-4,
) -> float:
    """Two-stage direct plug-in bandwidth h for univariate data (Andrzejewski et al., paper 000
    in docs/statistics.md, eqs. 12-19).

    h = [R(K) / (mu_2(K)^2 Psi_4(g_2) n)]^(1/5), with Psi_4 and Psi_6 estimated by
    kernel sums over all pairs (docs/departures.md, item 1) and Psi_8 from a normal reference.

    ``scale="sd"`` follows the papers (normal reference scaled by the standard deviation);
    ``scale="minim"`` uses min(sd, IQR/1.349), the default of ``KernSmooth::dpik`` and
    ``ks::hpi`` (docs/departures.md, item 2).

    ``method="exact"`` sums every pair; ``method="binned"`` estimates both pair sums from
    linear-binning counts by FFT (:mod:`parzen.binned.plugin`, as ``dpik`` does), on a grid sized
    so that the predicted relative error on h is at most ``tolerance``; ``"auto"`` is exact up to
    :data:`AUTO_EXACT_MAX_N` points (per backend) and binned beyond.  :func:`plugin_stages`
    tells which was used and the grid size.

    Parameters
    ----------
    x : array_like of shape (n,)
        The univariate sample (one column; at least 2 rows, finite, not constant).
    scale : {"sd", "minim"}, default "sd"
        The scale estimate of the normal reference.
    backend : str, default "auto"
        Backend of the pair sums (``parzen.backends``).
    dtype : None or numpy float type
        Compute precision of the backend (None: its default).  The binned method computes in
        float64 on the CPU whatever the backend and dtype.
    method : {"auto", "exact", "binned"}, default "auto"
        Exact pair sums, binned ones, or exact up to :data:`AUTO_EXACT_MAX_N` points.
    grid_size : int, optional
        The binned grid's number of nodes (2 to 2^20), overriding the one chosen from ``tolerance``.
    tolerance : float, default 1e-4
        The relative error on h the binned grid is sized for, in (0, 0.1].

    Returns
    -------
    float
        h in data units, the Gaussian kernel's standard deviation.

    Raises
    ------
    ValueError
        If x has more than one column, is constant, or ``scale``, ``method``, ``grid_size`` or
        ``tolerance`` is invalid.
    """
    return plugin_stages(
        x, scale=scale, backend=backend, dtype=dtype, method=method, grid_size=grid_size, tolerance=tolerance
    ).h
