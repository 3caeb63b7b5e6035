"""Input checks shared by every public function: one place for the error messages.

Each check raises ``ValueError`` naming what is wrong and how to fix it.
"""

from __future__ import annotations

import sys
import warnings
from dataclasses import dataclass

import numpy as np


class TiedDataWarning(UserWarning):
    """Data contain duplicated values: LSCV is not well-behaved (as R's ``ks`` warns).

    Pairs at distance 0 make the LSCV criterion fall without bound as the bandwidth shrinks
    (docs/departures.md, item 8).
    """


@dataclass(frozen=True)
class Data:
    """A validated float64 data matrix with its column names.

    Parameters
    ----------
    values : numpy.ndarray
        (n, d), float64, C-contiguous, finite.
    columns : tuple of str
        d column names.
    """

    values: np.ndarray  # (n, d), float64, C-contiguous, finite
    columns: tuple[str, ...]

    @property
    def n(self) -> int:
        """The number of rows (observations)."""
        return self.values.shape[0]

    @property
    def d(self) -> int:
        """The number of columns (the dimension)."""
        return self.values.shape[1]


def _to_numpy(X) -> tuple[np.ndarray, tuple[str, ...] | None]:
    """Accept NumPy arrays, lists, pandas and polars Series/DataFrames."""
    columns = None
    if isinstance(X, Data):
        return X.values, X.columns
    if _is_numeric_pandas(X):  # nullable dtypes (Float64, Int64): pd.NA becomes NaN
        columns = tuple(str(c) for c in X.columns) if X.ndim == 2 else None
        if X.ndim == 1 and X.name not in (None, ""):
            columns = (str(X.name),)
        return X.to_numpy(dtype=np.float64, na_value=np.nan), columns
    if hasattr(X, "columns") and hasattr(X, "to_numpy"):  # polars DataFrame
        columns = tuple(str(c) for c in X.columns)
        X = X.to_numpy()
    elif hasattr(X, "to_numpy") and hasattr(X, "name"):  # pandas / polars Series
        name = X.name
        columns = (str(name),) if name not in (None, "") else None
        X = X.to_numpy()
    return np.asarray(X), columns


def _is_numeric_pandas(X) -> bool:
    """A pandas Series/DataFrame whose columns are all numeric (incl. nullable dtypes).

    pandas is not imported here: an object of pandas exists only once its caller imported it,
    so ``import parzen`` stays free of pandas (and of the pyarrow it loads).
    """
    pd = sys.modules.get("pandas")
    if pd is None or not isinstance(X, (pd.Series, pd.DataFrame)):
        return False
    dtypes = [X.dtype] if isinstance(X, pd.Series) else list(X.dtypes)
    return all(
        pd.api.types.is_numeric_dtype(t) and not pd.api.types.is_complex_dtype(t) for t in dtypes
    )


def as_data(X, *, name: str = "X", min_rows: int = 2) -> Data:
    """Validate a data sample: numeric, 1-D or 2-D, finite, with at least ``min_rows`` rows.

    Parameters
    ----------
    X : array_like, pandas or polars Series / DataFrame, or Data
        The sample.  A 1-D input is one column (n observations of a univariate variable).  An
        already validated :class:`Data` passes through (with its column names) after the row check.
    name : str, default "X"
        What the error messages call it.
    min_rows : int, default 2
        The fewest rows accepted.

    Returns
    -------
    Data
        The values as (n, d) float64 with the column names (a DataFrame's, else x or x0, x1, ...).

    Raises
    ------
    ValueError
        For complex, non-numeric, 3-D or empty-column input, NaN or infinite values (naming the
        first one's row and column), fewer than ``min_rows`` rows, or data served in chunks
        (:class:`parzen.binned.ChunkedData`: the functions that take them check first).
    TypeError
        For a SciPy sparse matrix (as scikit-learn raises).
    """
    from .binned.source import ChunkedData  # the binned package imports this module

    if isinstance(X, ChunkedData):  # a ValueError as for every bad input (the CLI prints those as errors)
        raise ValueError(  # noqa: TRY004
            f"{name} is {X.description}, read in chunks, and this function needs its rows in memory; load them "
            "into an array (or a sample of them), or use a selector or KDE, which bin data read in chunks"
        )
    if hasattr(X, "tocsr") and hasattr(X, "nnz"):  # a SciPy sparse matrix or array
        raise TypeError(f"{name} is a sparse matrix; parzen needs dense data: pass {name}.toarray()")
    arr, columns = _to_numpy(X)
    if np.iscomplexobj(arr):
        raise ValueError(
            f"Complex data not supported: {name} has complex values; a density needs real numbers: pass the real "
            "and imaginary parts as two columns (np.c_[z.real, z.imag])"
        )
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise ValueError(
            f"{name} must be numeric, got values of type {arr.dtype}; "
            "convert or drop non-numeric columns first"
        )
    if arr.ndim == 1:
        arr = arr[:, None]
    elif arr.ndim != 2:
        raise ValueError(
            f"{name} must be 1-D (n,) or 2-D (n, d), got an array of shape {arr.shape}"
        )
    arr = np.ascontiguousarray(arr, dtype=np.float64)
    n, d = arr.shape
    if d == 0:
        raise ValueError(f"{name} has no columns: 0 feature(s) (shape={arr.shape}) while a minimum of 1 is required.")
    if columns is None:
        columns = tuple(f"x{k}" for k in range(d)) if d > 1 else ("x",)
    bad = ~np.isfinite(arr)
    if bad.any():
        rows, cols = np.nonzero(bad)
        raise ValueError(
            f"{name} contains {bad.sum()} NaN or infinite value(s), first in row {rows[0]}, "
            f"column {columns[cols[0]]!r}; drop or impute them first (e.g. df.dropna())"
        )
    if n < min_rows:
        raise ValueError(
            f"{name} has {n} row(s); this needs at least {min_rows} observations (n_samples = {n})"
        )
    return Data(arr, columns)


def power_of_two(values) -> np.ndarray:
    """The power of two just above each value.

    Parameters
    ----------
    values : array_like
        Numbers.

    Returns
    -------
    numpy.ndarray
        2^k with 2^(k-1) <= |v| < 2^k for each value v (1 for 0 or a non-finite v).
    """
    values = np.asarray(values, dtype=np.float64)
    _, exponent = np.frexp(np.where(np.isfinite(values), values, 0.0))
    return np.ldexp(1.0, np.where(values == 0.0, 0, exponent))


def standardised(data: Data) -> tuple[Data, np.ndarray]:
    """The data with each column divided by a power of two near its spread (max - min), and those
    powers u (d,).

    The selectors work on these numbers, so that their intermediate quantities (sigma^9 in PLUGIN,
    |Sigma|^1/2 in LSCV) neither overflow nor underflow whatever the data's units (the data may be
    scaled by 1e-36 or 1e35).  Dividing by 2^k rounds nothing, so results on ordinary data are
    unchanged to the last bits and scale back exactly: h(x) = u h(x / u), H(X) = D H(X D^-1) D with
    D = diag(u).  (docs/departures.md, item 13.)

    Parameters
    ----------
    data : Data
        The sample.

    Returns
    -------
    scaled : Data
        The data divided column by column by ``units``.
    units : numpy.ndarray
        (d,) powers of two, :func:`power_of_two` of each column's max - min.
    """
    units = power_of_two(np.ptp(data.values, axis=0))
    return Data(data.values / units, data.columns), units


def check_variance(data: Data, *, name: str = "X") -> None:
    """Check that every column varies: a constant column has no density to estimate.

    Parameters
    ----------
    data : Data
        The sample.
    name : str, default "X"
        What the error message calls it.

    Raises
    ------
    ValueError
        Naming the constant columns.
    """
    const = [c for c, v in zip(data.columns, np.ptp(data.values, axis=0)) if v == 0.0]
    if const:
        raise ValueError(
            f"{name} has zero variance in column(s) {', '.join(map(repr, const))}; "
            "a constant column has no density: drop it"
        )


def covariance(data: Data, *, name: str = "X") -> np.ndarray:
    """The sample covariance, checked positive definite.

    Sigma = (X - mean)^T (X - mean) / (n - 1) (ddof = 1; Andrzejewski et al., paper 000 in
    docs/statistics.md, eqs. 21-23).

    Parameters
    ----------
    data : Data
        The sample.
    name : str, default "X"
        What the error messages call it.

    Returns
    -------
    numpy.ndarray
        (d, d) Sigma.

    Raises
    ------
    ValueError
        For a constant column, or a singular Sigma (naming the linearly dependent columns).
    """
    return covariance_factor(data, name=name)[0]


def covariance_factor(data: Data, *, name: str = "X") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The sample covariance with its Cholesky factor and the centred data, computed once.

    Parameters
    ----------
    data : Data
        The sample.
    name : str, default "X"
        What the error messages call it.

    Returns
    -------
    sigma : numpy.ndarray
        (d, d) sample covariance (ddof = 1), as :func:`covariance`.
    factor : numpy.ndarray
        (d, d) lower-triangular L with L L^T = Sigma.
    centred : numpy.ndarray
        (n, d) X - mean, from which Sigma was computed.

    Raises
    ------
    ValueError
        As :func:`covariance`.
    """
    check_variance(data, name=name)
    centred = data.values - data.values.mean(axis=0)
    sigma = centred.T @ centred / (data.n - 1)
    return sigma, check_spd(sigma, what=f"the covariance matrix of {name}", columns=data.columns), centred


def check_spd(M: np.ndarray, *, what: str, columns=None) -> np.ndarray:
    """The Cholesky factor of M, or an error that explains why M is not positive definite.

    M counts as singular when the smallest eigenvalue of its correlation form
    D^-1/2 M D^-1/2 (D = diag(M)) is at most 1e-12 times the largest.

    Parameters
    ----------
    M : numpy.ndarray
        A (d, d) matrix.
    what : str
        What the error messages call it.
    columns : sequence of str, optional
        d column names: a singular M's message then names the columns of its null direction.

    Returns
    -------
    numpy.ndarray
        (d, d) lower-triangular L with L L^T = M.

    Raises
    ------
    ValueError
        When M has NaN or infinite entries, is not symmetric, or is singular or indefinite.
    """
    M = np.asarray(M, dtype=np.float64)
    if not np.all(np.isfinite(M)):
        raise ValueError(f"{what} contains NaN or infinite entries")
    if not np.allclose(M, M.T, rtol=1e-10, atol=0.0):
        raise ValueError(f"{what} is not symmetric")
    scale = np.sqrt(np.abs(np.diag(M)))
    scale[scale == 0] = 1.0
    corr = M / np.outer(scale, scale)
    eig = np.linalg.eigvalsh(corr)
    if eig[0] <= 1e-12 * max(eig[-1], 1.0):
        hint = ""
        if columns is not None and len(columns) == M.shape[0]:
            _, v = np.linalg.eigh(corr)
            involved = [c for c, coef in zip(columns, v[:, 0]) if abs(coef) > 1e-3]
            hint = f" (columns {', '.join(map(repr, involved))} are linearly dependent)"
        raise ValueError(
            f"{what} is singular or not positive definite{hint}; remove redundant "
            "columns or use a diagonal or scalar bandwidth"
        )
    return np.linalg.cholesky(M)


def warn_if_tied(data: Data, *, method: str) -> None:
    """Warn when values repeat within a column.

    LSCV over bandwidth matrices can shrink H along that column, where the tied pairs make
    g(H) tend to -inf (docs/departures.md, item 8).

    Parameters
    ----------
    data : Data
        The sample.
    method : str
        The selector's name, for the message.

    Warns
    -----
    TiedDataWarning
        Naming the columns with repeated values.
    """
    tied = tied_columns(data)
    if tied:
        warnings.warn(
            f"data contain duplicated values (column(s) {', '.join(map(repr, tied))}): "
            f"{method} is not well-behaved on tied data (rounded measurements); "
            "consider 'plugin' or a rule of thumb",
            TiedDataWarning,
            stacklevel=3,
        )


def tied_columns(data: Data) -> list[str]:
    """The names of the columns in which some value repeats.

    Parameters
    ----------
    data : Data
        The sample.

    Returns
    -------
    list of str
        Those columns, in order.
    """
    ordered = np.sort(data.values, axis=0)  # one sort for all columns: ties are equal neighbours
    repeats = np.any(ordered[1:] == ordered[:-1], axis=0)
    return [c for c, repeated in zip(data.columns, repeats) if repeated]


def warn_if_repeated_rows(data: Data, *, method: str) -> None:
    """Warn when a row (a whole observation) repeats.

    With H = h^2 Sigma the pair's distance is 0 for every h, so LSCV_h tends to -inf as h -> 0
    once such pairs are many (docs/departures.md, item 8).  ``ks`` checks ``duplicated(x)``, i.e.
    rows, as here.  Ties within one column only matter where H can shrink along that column
    (LSCV_H, diagonal LSCV: :func:`warn_if_tied`).  Equal rows have equal first values, so one
    sort of the first column finds the candidates, which are then compared whole.

    Parameters
    ----------
    data : Data
        The sample.
    method : str
        The selector's name, for the message.

    Warns
    -----
    TiedDataWarning
        Naming the first two equal rows.
    """
    values = data.values
    order = np.argsort(values[:, 0], kind="stable")
    shared = np.diff(values[order, 0]) == 0.0
    candidates = np.sort(order[np.r_[shared, False] | np.r_[False, shared]])  # rows sharing a first value
    if not candidates.size:
        return
    _, inverse, counts = np.unique(values[candidates], axis=0, return_inverse=True, return_counts=True)
    repeated = np.flatnonzero(counts > 1)
    if repeated.size:
        first, second = candidates[np.flatnonzero(inverse.ravel() == repeated[0])[:2]]
        warnings.warn(
            f"data contain duplicated values (rows {first} and {second} are the same observation): "
            f"{method} is not well-behaved on tied data (rounded measurements); "
            "consider 'plugin' or a rule of thumb",
            TiedDataWarning,
            stacklevel=3,
        )


def check_weights(weights, n: int) -> np.ndarray:
    """Validate observation weights: n finite non-negative numbers, not all zero.

    Parameters
    ----------
    weights : array_like, pandas or polars Series
        One weight per row; an (n, 1) or (1, n) array is flattened.
    n : int
        The number of rows of the data.

    Returns
    -------
    numpy.ndarray
        (n,) float64 (not normalised).

    Raises
    ------
    ValueError
        For non-numeric values, another length, negative or non-finite weights, or a zero sum.
    """
    w, _ = _to_numpy(weights)
    if np.iscomplexobj(w) or not (np.issubdtype(w.dtype, np.number) or w.dtype == bool):
        raise ValueError(
            f"weights must be {n} numbers, one per row of the data; got values of type {w.dtype}"
        )
    w = np.asarray(w, dtype=np.float64)
    if w.ndim == 2 and 1 in w.shape:
        w = w.ravel()
    if w.shape != (n,):
        raise ValueError(f"weights must be {n} numbers, one per row of the data; got shape {np.shape(w)}")
    bad = np.flatnonzero(~np.isfinite(w) | (w < 0))
    if bad.size:
        raise ValueError(f"weights must be finite and non-negative, got {float(w[bad[0]]):g} for row {int(bad[0])}"
                         f"{f' (and {bad.size - 1} more)' if bad.size > 1 else ''}; give such rows weight 0 or "
                         "drop them (weights are relative: any non-negative scale)")
    if w.sum() <= 0:
        raise ValueError("weights sum to zero; at least one row needs a positive weight")
    return w


def as_queries(Q, d: int, *, name: str = "query points") -> np.ndarray:
    """Validate evaluation points against a fitted dimension d.

    Parameters
    ----------
    Q : array_like, pandas or polars Series / DataFrame
        m points: (m, d), or (m,) when d = 1, or one point (d,).  An empty array
        (``np.empty(0)`` or ``np.empty((0, d))``) is no points.
    d : int
        The fitted dimension.
    name : str, default "query points"
        What the error messages call them.

    Returns
    -------
    numpy.ndarray
        (m, d) float64.

    Raises
    ------
    ValueError
        For another number of columns, or values :func:`as_data` rejects.
    """
    arr, _ = _to_numpy(Q)
    if arr.ndim == 1 and arr.size == 0:
        arr = arr.reshape(0, d)
    if d == 1 and arr.ndim <= 1:
        arr = np.atleast_1d(arr).reshape(-1, 1)
    elif arr.ndim == 1 and arr.size == d:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.shape[1] != d:
        raise ValueError(
            f"{name} must have {d} column(s) like the fitted data, got shape {arr.shape}"
        )
    data = as_data(arr, name=name, min_rows=0)
    return data.values


def choose(value, options, *, what: str):
    """Check a string option against its valid choices.

    Parameters
    ----------
    value : str
        The option given.
    options : sequence of str
        The valid choices.
    what : str
        What the option is, for the message (e.g. "kernel").

    Returns
    -------
    str
        ``value``, unchanged.

    Raises
    ------
    ValueError
        For another value; the message lists the valid choices.
    """
    if value not in options:
        raise ValueError(f"unknown {what} {value!r}; choose one of {', '.join(map(repr, options))}")
    return value
