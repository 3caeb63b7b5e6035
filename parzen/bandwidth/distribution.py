"""The plug-in bandwidth of the kernel distribution function, F(x) = n^-1 sum_i Phi((x - X_i) / h).

A distribution function is smoother to estimate than a density: its AMISE
n^-1 int F(1 - F) - n^-1 h nu(K) + (h^4 / 4) mu_2(K)^2 R(f')  (nu = 2 int u K(u) Kc(u) du = 1/sqrt(pi)
for the Gaussian; Azzalini 1981, Biometrika 68(1); Jones 1990, Statistica Neerlandica 44(2)) is
least at h = [nu(K) / (mu_2(K)^2 (-Psi_2) n)]^(1/3), Psi_2 = int f'' f = -R(f') (the n^(-1/3) rate,
against n^(-1/5) for the density).  :func:`plugin_cdf` estimates Psi_2 by the two-stage plug-in
of R's ``ks::hpi.kcde(x, nstage = 2)`` (the bandwidth ``ks::kcde`` chooses for 1-D data;
Polansky & Baker 2000, J. Statist. Comput. Simul. 65(1), 63-80):

    Psi_6^NS = -15 / (16 sqrt(pi) sigma^7)                     (normal reference, sigma the sd)
    g_4 = [2 phi^(4)(0) / (-mu_2 Psi_6^NS n)]^(1/7),  Psi_4 = Psi_4(g_4)
    g_2 = [2 phi''(0) / (-mu_2 Psi_4 n)]^(1/5),       Psi_2 = Psi_2(g_2)
    h = [2 m_1 / (-mu_2^2 Psi_2 n)]^(1/3),  2 m_1 = nu(K) = 1 / sqrt(pi),

each Psi_r(g) = n^-2 sum_{i,j} phi_g^(r)(X_i - X_j) (diagonal included) from the backends' exact
pair sums (:func:`parzen.bandwidth.psi_functional`) or binned ones
(:class:`parzen.binned.pair_sums.BinnedPairSums1D`), as for PLUGIN.
"""

from __future__ import annotations

import math

from .._validate import as_data, check_variance, power_of_two
from ..backends import resolve_backend
from ..binned.grid import GridSpec, linear_bin
from ..binned.pair_sums import BinnedPairSums1D
from ..binned.plugin import check_tolerance, prior_grid_size
from ..binned.source import as_chunked
from ..kernels import gauss_derivative_at_zero
from .method import choose_method, report
from .plugin import AUTO_EXACT_MAX_N, psi_functional


def plugin_cdf(x, *, method: str = "auto", backend="auto", dtype=None, tolerance: float = 1e-4) -> float:
    """The two-stage plug-in bandwidth of the kernel distribution function of a 1-D sample.

    ``ks::hpi.kcde(x, nstage = 2)`` (module docstring; docs/statistics.md, "The kernel
    distribution function"): AMISE-optimal for F, of order n^(-1/3), in data units.

    Parameters
    ----------
    x : array_like of shape (n,) or (n, 1)
        The univariate sample, in memory.
    method : {"auto", "exact", "binned"}, default "auto"
        Psi_4 and Psi_2 from every pair ("exact") or from linear-binning counts ("binned", on
        PLUGIN's grid for ``tolerance``); "auto" is exact up to PLUGIN's break-even n
        (:data:`parzen.bandwidth.plugin.AUTO_EXACT_MAX_N`) and binned beyond.
    backend : str or KDEBackend, default "auto"
        Backend of the pair sums.
    dtype : None or numpy float type
        Compute precision of the exact pair sums.
    tolerance : float, default 1e-4
        Sets the binned grid's spacing (PLUGIN's rule, :func:`parzen.binned.plugin.prior_grid_size`).

    Returns
    -------
    float
        h in data units.

    Raises
    ------
    ValueError
        If x is not one column of at least two rows with positive variance, is served in chunks,
        or an option is invalid.
    """
    if as_chunked(x) is not None:
        raise ValueError("plugin_cdf needs the data in memory; load the column into an array (or a sample of it)")
    data = as_data(x, name="x")
    if data.d != 1:
        raise ValueError(f"plugin_cdf is univariate: x has {data.d} columns; select one column")
    check_variance(data, name="x")
    tolerance = check_tolerance(tolerance)
    values = data.values[:, 0]
    n = values.size
    unit = float(power_of_two(values.std(ddof=1)))  # exact rescaling: sigma in [1/2, 1)
    z = values / unit
    sigma = float(z.std(ddof=1))
    be = resolve_backend(backend, dtype, work=0.5 * n * n)
    method = choose_method(method, n=n, exact_up_to=AUTO_EXACT_MAX_N.get(be.name, AUTO_EXACT_MAX_N["cpu"]),
                           what="plugin_cdf")
    if method == "binned":
        low, high = float(z.min()), float(z.max())
        size = prior_grid_size(high - low, sigma, tolerance)
        sums = BinnedPairSums1D(linear_bin(z, GridSpec.covering(low, high, size), backend=be), be)

        def psi(order: int, g: float) -> float:
            return float(sums.psi(order, g))
    else:
        size = None

        def psi(order: int, g: float) -> float:
            return psi_functional(z, order, g, backend=be, dtype=dtype)

    psi6 = -15.0 / (16.0 * math.sqrt(math.pi) * sigma**7)
    g4 = (2.0 * gauss_derivative_at_zero(4) / (-psi6 * n)) ** (1 / 7)
    psi4 = psi(4, g4)
    g2 = (2.0 * gauss_derivative_at_zero(2) / (-psi4 * n)) ** (1 / 5)
    psi2 = psi(2, g2)
    report("plugin_cdf", method, n=n, grid_size=size, tolerance=tolerance if size else None)
    return unit * (1.0 / (math.sqrt(math.pi) * -psi2 * n)) ** (1 / 3)
