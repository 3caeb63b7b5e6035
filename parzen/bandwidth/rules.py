"""Rules of thumb: bandwidths that are optimal if the data were normal.

Each follows the convention of :mod:`parzen.bandwidth.convention`: for 1-D data the bandwidth
h (a float, the kernel's standard deviation), for d > 1 the bandwidth matrix H (d x d, the
kernel's covariance), a multiple of the sample covariance.  Formulas and sources:
docs/statistics.md, "Rules of thumb".
"""

from __future__ import annotations

import numpy as np

from .._validate import Data, as_data, check_spd, check_variance, check_weights, covariance
from ..binned.chunked import QUANTILE_INTERVALS, binned_quantiles, checked_moments, is_weighted
from ..binned.chunked import weighted_covariance as weighted_covariance_chunked
from ..binned.source import ChunkedData, Moments, as_chunked
from .convention import from_factor
from .method import report
from .weight_kind import check_weight_kind, sample_size, weighted_covariance, weighted_quantiles

#: IQR of the standard normal, Phi^-1(3/4) - Phi^-1(1/4).
NORMAL_IQR = 1.3489795003921634


def _sample(X, weights, progress: bool = False, weight_kind: str = "probability") -> tuple[float, int, np.ndarray]:
    """(n, d, covariance) of a validated sample, optionally weighted.

    With weights, n and the covariance are those of :mod:`parzen.bandwidth.weight_kind`: Kish's
    effective sample size (sum w)^2 / sum w^2 and NumPy's ``aweights`` covariance for probability
    weights, N = sum w and the covariance of the replicated data for frequency weights.  Data
    served in chunks: the same from their moments (:func:`_chunked_sample`), their weights a
    column of theirs.
    """
    weight_kind = check_weight_kind(weight_kind)
    chunked = as_chunked(X)
    if chunked is not None:
        return _chunked_sample(chunked, weights, progress, weight_kind)[:3]
    data = as_data(X)
    if weights is None:
        return float(data.n), data.d, covariance(data)
    weighted, counts = _weighted_rows(data, weights)
    n = sample_size(counts, weight_kind)
    sigma = weighted_covariance(weighted.values, counts, weight_kind)
    check_spd(sigma, what="the weighted covariance matrix of X", columns=data.columns)
    return n, data.d, sigma


def _weighted_rows(data: Data, weights) -> tuple[Data, np.ndarray]:
    """The rows with positive weights and their weights, checked (at least 2 rows, varying)."""
    w = check_weights(weights, data.n)
    weighted = Data(data.values[w > 0], data.columns)
    if weighted.n < 2:
        raise ValueError(
            "only one row has a positive weight; a weighted bandwidth needs at least 2 "
            "rows with positive weights"
        )
    check_variance(weighted, name="the rows with positive weights of X")
    return weighted, w[w > 0]


def _chunked_sample(data: ChunkedData, weights, progress: bool,
                    weight_kind: str = "probability") -> tuple[float, int, np.ndarray, Moments]:
    """:func:`_sample` of data served in chunks, with their moments.

    A weights column of probability weights: NumPy's ``aweights`` covariance and Kish's n
    (:func:`parzen.binned.chunked.weighted_covariance`, one more pass for sum w^2); of frequency
    weights: the scatter over W - 1 and n = W, W = sum w, from the moments alone (their being whole
    numbers is not checked here: the rows are not in memory).
    """
    if weights is not None:
        raise ValueError(
            f"weights= was given for {data.description}, which is read in chunks: serve the weights as a column "
            "of the data instead (weights= of ParquetData, DuckDBData or ArrayChunks)"
        )
    moments = checked_moments(data, progress=progress)
    if weight_kind == "frequency" and is_weighted(moments):
        total = float(moments.weight)
        if total <= 1.0:
            sample_size(np.array([total]), "frequency")  # raises, naming the fix
        sigma, n = moments.scatter / (total - 1.0), total
    else:
        sigma, n = weighted_covariance_chunked(data, moments, progress=progress)
    check_spd(sigma, what=f"the covariance matrix of {data.description}", columns=data.columns)
    return n, data.d, sigma, moments


def normal_scale(X, *, weights=None, weight_kind: str = "probability", progress: bool = False) -> float | np.ndarray:
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
        Non-negative weights of the rows; then Sigma is the weighted covariance and n the
        effective sample size of ``weight_kind`` (docs/statistics.md, "Weighted data").
    weight_kind : {"probability", "frequency"}, default "probability"
        What the weights are (:mod:`parzen.bandwidth.weight_kind`): probability weights of any
        scale, n = Kish's (sum w)^2 / sum w^2 (Kish 1965, 1992; SciPy's
        ``gaussian_kde.neff``), or frequency weights, whole counts of each row's copies,
        n = sum w, the answer on the replicated data.
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
        positive weight, frequency weights that are not whole numbers or sum to 1 or less), or
        ``weight_kind`` is not one of the two.
    """
    n, d, sigma = _sample(X, weights, progress, weight_kind)
    factor = (4.0 / (d + 2)) ** (1.0 / (d + 4)) * n ** (-1.0 / (d + 4))
    report("normal_scale", "exact", n=round(n))
    return from_factor(factor, sigma)


def scott(X, *, weights=None, weight_kind: str = "probability", progress: bool = False) -> float | np.ndarray:
    """Scott's rule: H = n^(-2/(d+4)) Sigma (Scott 1992, eq. 6.42; SciPy's "scott").

    In 1-D: h = sd n^(-1/5).

    Parameters
    ----------
    X : array_like of shape (n,) or (n, d), or ChunkedData
        The sample (NumPy, pandas or polars; at least 2 rows, finite, not constant), or data
        served in chunks (:class:`parzen.binned.ParquetData`, ...; its weights a column of its
        own): Sigma and n from its moments, one pass (two when weighted).
    weights : array_like of shape (n,), optional
        Non-negative weights of the rows; then Sigma is the weighted covariance and n the
        effective sample size of ``weight_kind`` (docs/statistics.md, "Weighted data").
    weight_kind : {"probability", "frequency"}, default "probability"
        What the weights are (:mod:`parzen.bandwidth.weight_kind`): probability weights of any
        scale, n = Kish's (sum w)^2 / sum w^2 (Kish 1965, 1992; SciPy's
        ``gaussian_kde.neff``), or frequency weights, whole counts of each row's copies,
        n = sum w, the answer on the replicated data.
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
        positive weight, frequency weights that are not whole numbers or sum to 1 or less), or
        ``weight_kind`` is not one of the two.
    """
    n, d, sigma = _sample(X, weights, progress, weight_kind)
    report("scott", "exact", n=round(n))
    return from_factor(n ** (-1.0 / (d + 4)), sigma)


def silverman(X, *, weights=None, weight_kind: str = "probability", progress: bool = False) -> float | np.ndarray:
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
        Non-negative weights of the rows; then Sigma is the weighted covariance and n the
        effective sample size of ``weight_kind`` (docs/statistics.md, "Weighted data").
    weight_kind : {"probability", "frequency"}, default "probability"
        What the weights are (:mod:`parzen.bandwidth.weight_kind`): probability weights of any
        scale, n = Kish's (sum w)^2 / sum w^2 (Kish 1965, 1992; SciPy's
        ``gaussian_kde.neff``), or frequency weights, whole counts of each row's copies,
        n = sum w, the answer on the replicated data.
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
        positive weight, frequency weights that are not whole numbers or sum to 1 or less), or
        ``weight_kind`` is not one of the two.
    """
    chunked = as_chunked(X)
    if chunked is not None and chunked.d > 1 or chunked is None and as_data(X).d > 1:
        return normal_scale(X, weights=weights, weight_kind=weight_kind, progress=progress)
    weight_kind = check_weight_kind(weight_kind)
    if chunked is not None:  # quartiles from the counts on a fine grid: within (max - min) / 2^16
        n, _, sigma, moments = _chunked_sample(chunked, weights, progress, weight_kind)
        q75, q25 = binned_quantiles(chunked, moments, [0.75, 0.25], progress=progress)
        report("silverman", "binned", n=round(n), grid_size=QUANTILE_INTERVALS + 1)
    else:
        n, _, sigma = _sample(X, weights, weight_kind=weight_kind)
        data = as_data(X)
        if weights is None:
            q75, q25 = np.percentile(data.values[:, 0], [75, 25])
        else:
            weighted, counts = _weighted_rows(data, weights)
            q75, q25 = weighted_quantiles(weighted.values[:, 0], counts, [0.75, 0.25], weight_kind)
        report("silverman", "exact", n=round(n))
    sd = float(np.sqrt(sigma[0, 0]))
    spread = min(sd, (q75 - q25) / NORMAL_IQR) if q75 > q25 else sd
    return 0.9 * spread * n ** (-0.2)

