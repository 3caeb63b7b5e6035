"""Rules of thumb: bandwidths that are optimal if the data were normal.

Each follows the convention of :mod:`parzen.bandwidth.convention`: for 1-D data the bandwidth
h (a float, the kernel's standard deviation), for d > 1 the bandwidth matrix H (d x d, the
kernel's covariance), a multiple of the sample covariance.  Formulas and sources:
docs/statistics.md, "Rules of thumb".
"""

from __future__ import annotations

import numpy as np

from .._validate import Data, as_data, check_spd, check_variance, check_weights, covariance
from ..binned.chunked import QUANTILE_INTERVALS, binned_quantiles, checked_moments, weighted_covariance
from ..binned.source import ChunkedData, Moments, as_chunked
from .convention import from_factor
from .method import report

#: IQR of the standard normal, Phi^-1(3/4) - Phi^-1(1/4).
NORMAL_IQR = 1.3489795003921634


def _sample(X, weights, progress: bool = False) -> tuple[float, int, np.ndarray]:
    """(effective n, d, covariance) of a validated sample, optionally weighted.

    Weights are frequency-like (any positive scale).  With weights the covariance is the weighted one and n is Kish's effective sample
    size (sum w)^2 / sum w^2.  Data served in chunks: the same from their moments
    (:func:`parzen.binned.chunked.weighted_covariance`), their weights a column of theirs.
    """
    chunked = as_chunked(X)
    if chunked is not None:
        return _chunked_sample(chunked, weights, progress)[:3]
    data = as_data(X)
    sigma = covariance(data)
    if weights is None:
        return float(data.n), data.d, sigma
    w = check_weights(weights, data.n)
    weighted = Data(data.values[w > 0], data.columns)
    if weighted.n < 2:
        raise ValueError(
            "only one row has a positive weight; a weighted bandwidth needs at least 2 "
            "rows with positive weights"
        )
    check_variance(weighted, name="the rows with positive weights of X")
    sigma = np.atleast_2d(np.cov(data.values, rowvar=False, aweights=w, ddof=1))
    check_spd(sigma, what="the weighted covariance matrix of X", columns=data.columns)
    return float(w.sum() ** 2 / (w * w).sum()), data.d, sigma


def _chunked_sample(data: ChunkedData, weights, progress: bool) -> tuple[float, int, np.ndarray, Moments]:
    """:func:`_sample` of data served in chunks, with their moments."""
    if weights is not None:
        raise ValueError(
            f"weights= was given for {data.description}, which is read in chunks: serve the weights as a column "
            "of the data instead (weights= of ParquetData, DuckDBData or ArrayChunks)"
        )
    moments = checked_moments(data, progress=progress)
    sigma, n = weighted_covariance(data, moments, progress=progress)
    check_spd(sigma, what=f"the covariance matrix of {data.description}", columns=data.columns)
    return n, data.d, sigma, moments


def normal_scale(X, *, weights=None, progress: bool = False) -> float | np.ndarray:
    """Normal-scale (AMISE-optimal for normal data) bandwidth.

    H_NS = (4 / (d + 2))^(2/(d+4)) n^(-2/(d+4)) Sigma, Sigma the sample covariance
    (Wand & Jones 1995, eq. 4.14; R ``ks::Hns``).  Andrzejewski et al. (paper 000 in
    docs/statistics.md), eq. (37), omits the square: docs/departures.md, item 3.  In 1-D:
    h = (4/3)^(1/5) sd n^(-1/5) = 1.06 sd n^(-1/5).

    Parameters
    ----------
    X : array_like of shape (n,) or (n, d), or ChunkedData
        The sample (NumPy, pandas or polars; at least 2 rows, finite, not constant), or data
        served in chunks (:class:`parzen.binned.ParquetData`, ...; its weights a column of its
        own): Sigma and n from its moments, one pass (two when weighted).
    weights : array_like of shape (n,), optional
        Non-negative frequency-like weights (any positive scale); then Sigma is the weighted
        covariance and n is Kish's effective sample size (sum w)^2 / sum w^2.
    progress : bool, default False
        Show a progress bar over each pass of data served in chunks.

    Returns
    -------
    float or ndarray of shape (d, d)
        The bandwidth h in data units for 1-D data, the matrix H otherwise.

    Raises
    ------
    ValueError
        If X or the weights are invalid (non-finite, constant columns, fewer than 2 rows with
        positive weight).
    """
    n, d, sigma = _sample(X, weights, progress)
    factor = (4.0 / (d + 2)) ** (1.0 / (d + 4)) * n ** (-1.0 / (d + 4))
    report("normal_scale", "exact", n=round(n))
    return from_factor(factor, sigma)


def scott(X, *, weights=None, progress: bool = False) -> float | np.ndarray:
    """Scott's rule: H = n^(-2/(d+4)) Sigma (Scott 1992, eq. 6.42; SciPy's "scott").

    In 1-D: h = sd n^(-1/5).

    Parameters
    ----------
    X : array_like of shape (n,) or (n, d), or ChunkedData
        The sample (NumPy, pandas or polars; at least 2 rows, finite, not constant), or data
        served in chunks (:class:`parzen.binned.ParquetData`, ...; its weights a column of its
        own): Sigma and n from its moments, one pass (two when weighted).
    weights : array_like of shape (n,), optional
        Non-negative frequency-like weights (any positive scale); then Sigma is the weighted
        covariance and n is Kish's effective sample size (sum w)^2 / sum w^2.
    progress : bool, default False
        Show a progress bar over each pass of data served in chunks.

    Returns
    -------
    float or ndarray of shape (d, d)
        The bandwidth h in data units for 1-D data, the matrix H otherwise.

    Raises
    ------
    ValueError
        If X or the weights are invalid (non-finite, constant columns, fewer than 2 rows with
        positive weight).
    """
    n, d, sigma = _sample(X, weights, progress)
    report("scott", "exact", n=round(n))
    return from_factor(n ** (-1.0 / (d + 4)), sigma)


def silverman(X, *, weights=None, progress: bool = False) -> float | np.ndarray:
    """Silverman's rule of thumb.

    1-D: h = 0.9 min(sd, IQR / 1.349) n^(-1/5) (Silverman 1986, eq. 3.31; R ``bw.nrd0``),
    robust to heavy tails and bimodality (weighted quantiles when weighted).  d > 1: SciPy's "silverman",
    H = (n (d + 2) / 4)^(-2/(d+4)) Sigma, which equals :func:`normal_scale`.

    Parameters
    ----------
    X : array_like of shape (n,) or (n, d), or ChunkedData
        The sample (NumPy, pandas or polars; at least 2 rows, finite, not constant), or data
        served in chunks (:class:`parzen.binned.ParquetData`, ...; its weights a column of its
        own): Sigma and n from its moments, one pass (two when weighted).
    weights : array_like of shape (n,), optional
        Non-negative frequency-like weights (any positive scale); then Sigma is the weighted
        covariance and n is Kish's effective sample size (sum w)^2 / sum w^2.
    progress : bool, default False
        Show a progress bar over each pass of data served in chunks.

    Returns
    -------
    float or ndarray of shape (d, d)
        The bandwidth h in data units for 1-D data, the matrix H otherwise.

    Raises
    ------
    ValueError
        If X or the weights are invalid (non-finite, constant columns, fewer than 2 rows with
        positive weight).
    """
    chunked = as_chunked(X)
    if chunked is not None and chunked.d > 1 or chunked is None and as_data(X).d > 1:
        return normal_scale(X, weights=weights, progress=progress)
    if chunked is not None:  # quartiles from the counts on a fine grid: within (max - min) / 2^16
        n, _, sigma, moments = _chunked_sample(chunked, weights, progress)
        q75, q25 = binned_quantiles(chunked, moments, [0.75, 0.25], progress=progress)
        report("silverman", "binned", n=round(n), grid_size=QUANTILE_INTERVALS + 1)
    else:
        n, _, sigma = _sample(X, weights)
        x = as_data(X).values[:, 0]
        if weights is None:
            q75, q25 = np.percentile(x, [75, 25])
        else:
            q75, q25 = _weighted_quantiles(x, check_weights(weights, x.size), [0.75, 0.25])
        report("silverman", "exact", n=round(n))
    sd = float(np.sqrt(sigma[0, 0]))
    spread = min(sd, (q75 - q25) / NORMAL_IQR) if q75 > q25 else sd
    return 0.9 * spread * n ** (-0.2)


def _weighted_quantiles(x: np.ndarray, w: np.ndarray, probs) -> np.ndarray:
    """Quantiles of the weighted empirical distribution (midpoint interpolation)."""
    order = np.argsort(x)
    cum = np.cumsum(w[order]) - 0.5 * w[order]
    return np.interp(np.asarray(probs) * w.sum(), cum, x[order])
