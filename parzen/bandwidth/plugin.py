"""PLUGIN: the two-stage direct plug-in bandwidth for univariate data.

Andrzejewski et al. (paper 000 in docs/statistics.md), section 4.4, eqs. (12)-(19), with the
diagonal term inside the bracket of Psi_r (docs/departures.md, item 1) -- the method of
Sheather & Jones (1991) / Wand & Jones (1995, section 3.6), as in ``KernSmooth::dpik(level = 2)``.
The bandwidth h is in data units (:mod:`parzen.bandwidth.convention`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .._validate import Data, as_data, check_variance, check_weights, choose, power_of_two, standardised
from ..backends import resolve_backend
from ..backends.reference import derivative_order
from ..binned.chunked import binned_quantiles, checked_moments, chunked_binner, is_weighted, units_of
from ..binned.chunked import weighted_covariance as chunked_weighted_covariance
from ..binned.grid import BinCounts, GridSpec, linear_bin
from ..binned.plugin import binned_pilot_stages, check_grid_size, check_tolerance
from ..binned.source import ChunkedData, as_chunked
from ..kernels import GAUSS_MU2, GAUSS_RK, gauss_derivative_at_zero
from .method import METHODS, choose_method, report
from .rules import NORMAL_IQR
from .weight_kind import check_weight_kind, sample_size, tied_pairs, weighted_covariance, weighted_quantiles

#: Orders r of the functionals Psi_r = int f^(r) f that psi_functional estimates.
_PSI_ORDERS = (0, 2, 4, 6, 8)

SCALES = ("sd", "minim")

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


def _psi(pair_sum, n: float, order: int, g):
    """Psi_r(g) from ``pair_sum(kind, g)``, the backend's 1-D pair sum over the data.

    Plain arithmetic on what ``pair_sum`` returns (a float, or a device number: see
    :class:`parzen.backends.PairSums1D`), so ``g`` may itself be such a number.
    """
    return (2.0 * pair_sum(f"gauss_d{order}", g) + n * gauss_derivative_at_zero(order)) / (n * n * g ** (order + 1))


def plugin_stages(
    x,
    *,
    weights=None,
    weight_kind: str = "probability",
    scale: str = "sd",
    backend: str = "auto",
    dtype=None,
    method: str = "auto",
    grid_size: int | None = None,
    tolerance: float = 1e-4,
    progress: bool = False,
) -> PluginStages:
    """PLUGIN with its intermediates; see :func:`plugin`.

    Parameters
    ----------
    x : array_like of shape (n,), or ChunkedData
        The univariate sample.
    weights, weight_kind, scale, backend, dtype, method, grid_size, tolerance, progress
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
    weight_kind = check_weight_kind(weight_kind)
    tolerance = check_tolerance(tolerance)
    grid_size = check_grid_size(grid_size)
    chunked = as_chunked(x)
    column = data = None
    sample: _Sample | None = None
    if weights is not None:
        if chunked is not None:
            raise ValueError(f"weights= was given for {chunked.description}, which is read in chunks; weighted PLUGIN "
                             "needs the rows in memory (or use normal_scale, scott or silverman with a weights column)")
        return _weighted_stages(x, weights, scale, backend, dtype, method, weight_kind, tolerance, grid_size)
    if chunked is not None:
        sample = _chunked_sample(chunked, scale, progress, weight_kind)
        n = sample.n
    else:
        column = _float_column(x)
        if column is None:  # not a plain float array: validate (and convert) it here, with its name
            data = _univariate(x)
            column = data.values[:, 0]
        n = column.size
        if n < 2:
            as_data(column, name="x")  # raises: too few rows
    be = resolve_backend(backend, dtype, work=0.5 * n * n)
    method = choose_method(
        method, n=round(n), exact_up_to=AUTO_EXACT_MAX_N.get(be.name, AUTO_EXACT_MAX_N["cpu"]), what="PLUGIN",
        chunked=None if chunked is None else chunked.description,
    )
    if sample is None:
        assert column is not None
        sample = _binned_sample(column, data, scale, be) if method == "binned" else _sample(
            data if data is not None else column, scale)
    sigma, unit = sample.sigma, sample.unit
    g1 = first_pilot(sigma, n)
    sized_by = tolerance if grid_size is None else None  # what chose the grid
    if method == "binned":
        assert sample.bin_on is not None  # in memory, _binned_sample's
        binned = binned_pilot_stages(sample.bin_on, sample.low, sample.high, g1, sigma, tolerance=tolerance,
                                     grid_size=grid_size, backend=be, n=sample.pairs_n)
        psi6, g2, psi4, h, grid_size = binned.psi6, binned.g2, binned.psi4, binned.h, binned.grid_size
    else:
        assert sample.values is not None  # exact only in memory (choose_method)
        psi6, g2, psi4, h = be.prepare_pair_sum_1d(sample.values, dtype=dtype).evaluate(_pilot_stages, n, g1)
        grid_size = None
    report("plugin", method, n=round(n), grid_size=grid_size, tolerance=sized_by)
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


@dataclass(frozen=True)
class _Sample:
    """The sample as PLUGIN computes on it: divided by ``unit`` (a power of two, so that sigma is
    near 1; :func:`parzen._validate.standardised`), with its size, range and scale estimate."""

    n: float  # the n of eqs. (15)-(19): rows, or the effective size of weighted rows
    low: float
    high: float
    sigma: float  # the scale estimate of the divided sample
    unit: float  # the power of two the data were divided by
    bin_on: Callable[[GridSpec], BinCounts] | None  # GridSpec (divided units) -> the counts; None: exact only
    values: np.ndarray | None  # the divided sample, None for data served in chunks
    pairs_n: float | None = None  # n of the binned stages where it is not the counts' total (Kish's)


def _float_column(x) -> np.ndarray | None:
    """x as a 1-D float32 or float64 NumPy array without a copy, when it is one (or one
    column of one); None for anything else (which :func:`_univariate` then validates)."""
    if not isinstance(x, np.ndarray) or x.dtype not in (np.float32, np.float64):
        return None
    if x.ndim == 1:
        return x
    return x[:, 0] if x.ndim == 2 and x.shape[1] == 1 else None


def _univariate(x):
    """x validated (:func:`parzen._validate.as_data`) and checked to be one column."""
    data = as_data(x, name="x")
    if data.d != 1:
        raise ValueError(
            f"PLUGIN is univariate: x has {data.d} columns; select one column, "
            "or use lscv_h / lscv_H / normal_scale for multivariate data"
        )
    return data


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


def _binned_sample(column: np.ndarray, data, scale: str, be) -> _Sample:
    """An in-memory sample for the binned path: one pass over the data on the backend (streamed
    through the GPU there), not as_data's float64 copy, so 10^9 float32 values bin from host memory.

    The sample is binned as it is given, on the grid covering [low * unit, high * unit]: its
    counts are those of x / unit on [low, high] (dividing by a power of two rounds nothing, and
    the node positions (x - low) / (high - low) (m - 1) do not change)."""
    summary = be.column_summary(column)
    if not summary.finite:
        as_data(column, name="x")  # raises, naming the first NaN or infinity
    low, high = float(summary.lows[0]), float(summary.highs[0])
    if low == high:  # raises: x is constant
        check_variance(data if data is not None else as_data(column[:2], name="x"), name="x")
    range_unit = float(power_of_two(high - low))
    assert summary.sds is not None  # asked for (moments=True)
    sigma = float(summary.sds[0]) / range_unit  # np.std(x / range_unit, ddof=1), as standardised()
    if scale == "minim":
        q75, q25 = np.percentile(np.asarray(column, dtype=np.float64), [75, 25]) / range_unit
        sigma = _minim(sigma, float(q75), float(q25))
    unit_sigma = float(power_of_two(sigma))
    unit = range_unit * unit_sigma

    def bin_on(spec: GridSpec) -> BinCounts:
        scaled = GridSpec.covering(spec.lows[0] * unit, spec.highs[0] * unit, spec.sizes)
        return BinCounts(spec, be.linear_bin(column, scaled).counts)

    return _Sample(len(column), low / unit, high / unit, sigma / unit_sigma, unit, bin_on, None)


def _sample(x, scale: str) -> _Sample:
    """An in-memory sample, validated and divided by powers of two (exact)."""
    data = _univariate(x)
    check_variance(data, name="x")
    # standardise by powers of two (exact): first the spread, then sigma; scale back at the end
    data, units = standardised(data)
    v = data.values[:, 0]
    sigma = _scale_estimate(v, scale)
    unit_sigma = float(power_of_two(sigma))
    v = v / unit_sigma
    return _Sample(v.size, float(v.min()), float(v.max()), sigma / unit_sigma, float(units[0]) * unit_sigma,
                   None, v)


def _chunked_sample(data: ChunkedData, scale: str, progress: bool, weight_kind: str = "probability") -> _Sample:
    """Data served in chunks: moments in one pass, then each binning a pass of its own.

    sigma is the standard deviation from the moments (Chan et al.'s pairwise update,
    :class:`parzen.binned.source.Moments`), equal to the in-memory one to rounding; with
    ``scale="minim"`` the IQR comes from the counts on a fine grid, one more pass
    (:func:`parzen.binned.chunked.binned_quantiles`: each quartile within (max - min) / 2^16, so
    the IQR within twice that).  A weights column bins with its weights (the weighted
    Psi_r of :func:`_weighted_stages`); n and sigma are those of ``weight_kind``
    (:mod:`parzen.bandwidth.weight_kind`): frequency weights, n = W = sum w and the scatter over
    W - 1, the replicated data's; probability weights, Kish's n and NumPy's ``aweights`` variance
    (one more pass, for sum w^2: :func:`parzen.binned.chunked.weighted_covariance`).
    """
    if data.d != 1:
        raise ValueError(f"PLUGIN is univariate: {data.description} has {data.d} columns; serve one column")
    moments = checked_moments(data, progress=progress)
    n, pairs_n, variance = float(moments.rows), None, float(moments.covariance[0, 0])
    if is_weighted(moments):
        if weight_kind == "frequency":  # the scatter over W - 1 is moments.covariance (which raises for W <= 1)
            n = float(moments.weight)
        else:
            covariance, n = chunked_weighted_covariance(data, moments, progress=progress)
            variance, pairs_n = float(covariance[0, 0]), n
    unit = float(units_of(moments)[0])
    sd = math.sqrt(variance) / unit
    if scale == "minim":
        q75, q25 = binned_quantiles(data, moments, [0.75, 0.25], progress=progress) / unit
        sd = _minim(sd, float(q75), float(q25))
    unit_sigma = float(power_of_two(sd))
    unit *= unit_sigma
    return _Sample(n, float(moments.lows[0]) / unit, float(moments.highs[0]) / unit, sd / unit_sigma, unit,
                   chunked_binner(data, [unit], progress=progress), None, pairs_n)


def _weighted_stages(x, weights, scale: str, backend, dtype, method: str, weight_kind: str,
                     tolerance: float, grid_size: int | None) -> PluginStages:
    """PLUGIN of weighted data: the stages of :func:`_pilot_stages` with weighted pair sums, exact
    or binned.

    With w normalised to sum 1, the weighted estimate
    Psi_r(g) = g^-(r+1) [2 sum_{i<j} w_i w_j K^(r)((X_i - X_j)/g) + sum w_i^2 K^(r)(0)]
    is eq. (16)'s formula with n = n_e and the pair sum n_e^2 [sum_{i<j} w_i w_j K^(r)(...) + t K^(r)(0)],
    t the tied pairs of :func:`parzen.bandwidth.weight_kind.tied_pairs` (0 for probability weights);
    sigma is the weighted standard deviation (or min(sd, IQR/1.349) from the weighted quartiles)
    and n_e the n of eqs. (15), (17) and (19): Kish's effective size for probability weights,
    sum w for frequency weights (:mod:`parzen.bandwidth.weight_kind`).  Equal weights give the
    unweighted h; frequency weights give the h of the replicated data.

    Binned, Psi_r(g) is the same double sum over all i, j (the diagonal sum w_i^2 K^(r)(0) included)
    from the weighted linear-binning counts (Wand & Jones 1995, appendix D; Hall & Wand 1996):
    linear binning adds w_i where a copy adds 1, so frequency weights give the replicated data's
    counts, and the binned h equals theirs to rounding."""
    data = _univariate(x)
    w = check_weights(weights, data.n)
    data = Data(data.values[w > 0], data.columns)
    counts = w[w > 0]
    w = counts / counts.sum()
    if data.n < 2:
        raise ValueError("only one row has a positive weight; a weighted bandwidth needs at least 2 rows with positive weights")
    check_variance(data, name="the rows with positive weights of x")
    n_e = sample_size(counts, weight_kind)
    tied = tied_pairs(counts, weight_kind)
    be = resolve_backend(backend, dtype, work=0.5 * data.n * data.n)
    method = choose_method(method, n=data.n, exact_up_to=AUTO_EXACT_MAX_N.get(be.name, AUTO_EXACT_MAX_N["cpu"]), what="PLUGIN")
    data, units = standardised(data)
    v = data.values[:, 0]
    sigma = math.sqrt(float(weighted_covariance(v[:, None], counts, weight_kind)[0, 0]))
    if scale == "minim":
        q75, q25 = weighted_quantiles(v, counts, [0.75, 0.25], weight_kind)
        sigma = _minim(sigma, float(q75), float(q25))
    unit_sigma = float(power_of_two(sigma))
    v, sigma, unit = v / unit_sigma, sigma / unit_sigma, float(units[0]) * unit_sigma
    g1 = first_pilot(sigma, n_e)
    if method == "binned":
        binned = binned_pilot_stages(lambda spec: linear_bin(v, spec, counts, backend=be), float(v.min()), float(v.max()),
                                     g1, sigma, tolerance=tolerance, grid_size=grid_size, backend=be, n=n_e)
        psi6, g2, psi4, h, size = binned.psi6, binned.g2, binned.psi4, binned.h, binned.grid_size
        report("plugin", "binned", n=round(n_e), grid_size=size, tolerance=tolerance if grid_size is None else None)
        return PluginStages(h=h * unit, sigma=sigma * unit, g1=g1 * unit, psi6=psi6 / unit**7, g2=g2 * unit,
                            psi4=psi4 / unit**5, method="binned", grid_size=size)
    root_2pi = math.sqrt(2.0 * math.pi)

    def pair_sum(kind: str, g):
        order = derivative_order(kind)
        pairs = float(be.pair_sum_hermite(v[:, None] / g, np.array([[order]]), w, dtype=dtype)[0]) / root_2pi
        return n_e * n_e * (pairs + tied * gauss_derivative_at_zero(order))

    psi6, g2, psi4, h = _pilot_stages(pair_sum, n_e, g1)
    report("plugin", "exact", n=round(n_e))
    return PluginStages(h=h * unit, sigma=sigma * unit, g1=g1 * unit, psi6=psi6 / unit**7, g2=g2 * unit, psi4=psi4 / unit**5,
                        method="exact", grid_size=None)


def _scale_estimate(v: np.ndarray, scale: str) -> float:
    """sigma: the standard deviation, eqs. (12)-(13), or min(sd, IQR/1.349) for "minim"."""
    sigma = float(np.std(v, ddof=1))
    if scale == "minim":
        q75, q25 = np.percentile(v, [75, 25])
        sigma = _minim(sigma, float(q75), float(q25))
    return sigma


def _minim(sd: float, q75: float, q25: float) -> float:
    """min(sd, IQR / 1.349), the IQR only where it is positive (``KernSmooth::dpik``'s "minim")."""
    return min(sd, (q75 - q25) / NORMAL_IQR) if q75 > q25 else sd


def _pilot_stages(pair_sum, n: float, g1):
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
    weights=None,
    weight_kind: str = "probability",
    scale: str = "sd",
    backend: str = "auto",
    dtype=None,
    method: str = "auto",
    grid_size: int | None = None,
    tolerance: float = 1e-4,
    progress: bool = False,
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
    :data:`AUTO_EXACT_MAX_N` points (per backend) and binned beyond
    (:func:`parzen.bandwidth.method.choose_method`).  :func:`plugin_stages` tells which was used
    and the grid size, and so do the log (``"parzen.bandwidth"``, INFO) and
    :func:`parzen.bandwidth.selection`.

    Parameters
    ----------
    x : array_like of shape (n,), or ChunkedData
        The univariate sample (one column; at least 2 rows, finite, not constant), or one column
        served in chunks (:class:`parzen.binned.ParquetData`, :class:`parzen.binned.DuckDBData`,
        :class:`parzen.binned.ArrayChunks`, ...): then always binned, from a pass for the
        moments and one per binning (``scale="minim"``: one more, whose quartiles are within
        (max - min) / 2^16 of the exact ones; :func:`parzen.binned.chunked.binned_quantiles`).
    weights : array_like of shape (n,), optional
        Non-negative weights of the rows (any positive scale; in memory only): the functionals
        become weighted pair sums, sigma the weighted standard deviation (quartiles), and n Kish's
        effective sample size (sum w)^2 / sum w^2, as for the weighted rules of thumb.  Binned
        (``method="binned"``, or "auto" past its exact limit), the counts are the weighted
        linear-binning counts (docs/statistics.md, "Weighted data").
    weight_kind : {"probability", "frequency"}, default "probability"
        What the weights are (:mod:`parzen.bandwidth.weight_kind`): probability weights as
        above, or frequency weights, counts of each row's copies: then n = sum w, the standard
        deviation divides by sum w - 1 and the copies' pairs enter the sums, so that the answer
        equals PLUGIN's on the replicated data (docs/statistics.md, "Weighted data").
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
    progress : bool, default False
        Show a progress bar over each pass of data served in chunks.

    Returns
    -------
    float
        h in data units, the Gaussian kernel's standard deviation.

    Raises
    ------
    ValueError
        If x has more than one column, is constant, or ``scale``, ``method``, ``grid_size`` or
        ``tolerance`` is invalid; or ``method="exact"`` or weights for data served in chunks;
        or the weights are invalid (:func:`parzen._validate.check_weights`; frequency weights
        that are not whole numbers or sum to 1 or less).
    """
    return plugin_stages(
        x, weights=weights, weight_kind=weight_kind, scale=scale, backend=backend, dtype=dtype, method=method, grid_size=grid_size, tolerance=tolerance,
        progress=progress,
    ).h
