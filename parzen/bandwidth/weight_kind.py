"""What the selectors' ``weight_kind=`` means: probability weights or frequency weights.

Weighted data enter a selector through three numbers (issue 20, item 2; docs/statistics.md,
"Weighted data"):

- the pair sums, always with w normalised to sum 1: sum_{i<j} w_i w_j K(x_i - x_j);
- the sample size n of the selector's formulas;
- the covariance (or standard deviation) of the normal references.

``"probability"`` (the default): w are sampling or importance weights of any scale; n is Kish's
effective sample size (sum w)^2 / sum w^2 and the covariance is NumPy's ``aweights`` one,
sum w (x - m)(x - m)^T / (sum w - sum w^2 / sum w).

``"frequency"``: w_i counts how often row i occurs (whole numbers: :func:`sample_size` refuses
others); n = N = sum w and the covariance divides by N - 1, as for the data with each row
repeated w_i times.  In pair sums over i != j the repeated copies of one row are
pairs at distance 0: there are sum_i w_i (w_i - 1) / 2 of them, which :func:`tied_pairs`
counts, so that a selector's answer on frequency-weighted data equals its answer on the
replicated data (to rounding; tests/test_weight_kind.py holds it to 1e-10).
"""

from __future__ import annotations

import numpy as np

from .._validate import choose

#: The accepted values of ``weight_kind``.
WEIGHT_KINDS = ("probability", "frequency")


def check_weight_kind(weight_kind: str) -> str:
    """``weight_kind`` validated (with or without weights: a typo fails either way).

    Parameters
    ----------
    weight_kind : {"probability", "frequency"}
        What the weights are (module docstring).

    Returns
    -------
    str

    Raises
    ------
    ValueError
        If ``weight_kind`` is not one of :data:`WEIGHT_KINDS`.
    """
    return choose(weight_kind, WEIGHT_KINDS, what="weight_kind")


def sample_size(w: np.ndarray, weight_kind: str) -> float:
    """n of the selectors' formulas for positive weights ``w`` (any scale).

    Parameters
    ----------
    w : numpy.ndarray
        (n,) positive weights as given (not normalised).
    weight_kind : {"probability", "frequency"}

    Returns
    -------
    float
        Kish's (sum w)^2 / sum w^2 for probability weights, sum w for frequency weights.

    Raises
    ------
    ValueError
        If frequency weights sum to 1 or less (the replicated data would have fewer than 2 rows)
        or are not whole numbers.
    """
    total = float(w.sum())
    if weight_kind == "probability":
        return total * total / float(w @ w)
    if total <= 1.0:
        raise ValueError(f"frequency weights count the rows' copies and must sum to more than 1, got {total:g}; "
                         "pass weight_kind='probability' for weights of any scale")
    fractional = np.flatnonzero(w != np.round(w))
    if fractional.size:
        more = f" and {fractional.size - 1} more" if fractional.size > 1 else ""
        raise ValueError(f"frequency weights count the rows' copies and must be whole numbers, got {float(w[fractional[0]]):g}"
                         f"{more}; pass weight_kind='probability' for weights that are not counts, or round them")
    return total


def weighted_covariance(X: np.ndarray, w: np.ndarray, weight_kind: str) -> np.ndarray:
    """(d, d) weighted covariance of the rows of ``X`` (n, d) with positive weights ``w`` (any scale).

    Parameters
    ----------
    X : numpy.ndarray
        (n, d) rows.
    w : numpy.ndarray
        (n,) positive weights as given.
    weight_kind : {"probability", "frequency"}

    Returns
    -------
    numpy.ndarray
        ``np.cov(X, aweights=w)`` for probability weights; for frequency weights
        sum w (x - m)(x - m)^T / (sum w - 1), NumPy's ``fweights`` covariance extended to
        fractional counts.
    """
    sigma = np.atleast_2d(np.cov(X, rowvar=False, aweights=w))
    if weight_kind == "probability":
        return sigma
    total = float(w.sum())
    return sigma * ((total - float(w @ w) / total) / (total - 1.0))


def tied_pairs(w: np.ndarray, weight_kind: str) -> float:
    """Pairs i < j of the replicated data that are copies of one row, over N^2 (N = sum w).

    Parameters
    ----------
    w : numpy.ndarray
        (n,) positive weights as given.
    weight_kind : {"probability", "frequency"}

    Returns
    -------
    float
        0 for probability weights; sum_i w_i (w_i - 1) / (2 N^2) for frequency weights.  A pair
        sum over i < j of the replicated data is N^2 [sum_{i<j} v_i v_j K(x_i - x_j) + this K(0)],
        v = w / N.
    """
    if weight_kind == "probability":
        return 0.0
    total = float(w.sum())
    return float(w @ (w - 1.0)) / (2.0 * total * total)


def weighted_quantiles(x: np.ndarray, w: np.ndarray, probs, weight_kind: str) -> np.ndarray:
    """Quantiles of ``x`` under positive weights ``w``, equal to ``np.percentile``'s for equal weights.

    Parameters
    ----------
    x : numpy.ndarray
        (n,) values.
    w : numpy.ndarray
        (n,) positive weights as given.
    probs : array_like
        Probabilities in [0, 1].
    weight_kind : {"probability", "frequency"}

    Returns
    -------
    numpy.ndarray
        Frequency weights: :func:`frequency_quantiles`, the quantiles of the replicated data.
        Probability weights: the same with w rescaled to sum to n, the number of rows, so that the
        answer does not change when w is scaled and equal weights give ``np.percentile(x, 100 p)``
        (linear interpolation, Hyndman & Fan 1996's definition 7) -- docs/statistics.md,
        "Weighted data".
    """
    counts = w if weight_kind == "frequency" else w * (w.size / float(w.sum()))
    return frequency_quantiles(x, counts, probs)


def frequency_quantiles(x: np.ndarray, w: np.ndarray, probs) -> np.ndarray:
    """Quantiles of ``x`` with each value repeated w_i times, as ``np.percentile`` (linear) gives them.

    Parameters
    ----------
    x : numpy.ndarray
        (n,) values.
    w : numpy.ndarray
        (n,) positive counts (fractional counts: the same positions on the cumulative counts).
    probs : array_like
        Probabilities in [0, 1].

    Returns
    -------
    numpy.ndarray
        x_(k) + f (x_(k+1) - x_(k)) at the position p (N - 1) = k + f of the sorted replicated
        values (N = sum w), as ``np.percentile(np.repeat(x, w), 100 p)``.
    """
    order = np.argsort(x, kind="stable")
    values, ends = x[order], np.cumsum(w[order])
    last = ends[-1] - 1.0
    position = np.asarray(probs, dtype=np.float64) * last
    below = np.floor(position)

    def at(k):  # the k-th sorted replicated value (0-based): the first value whose copies end past k
        return values[np.minimum(np.searchsorted(ends, k, side="right"), values.size - 1)]

    low = at(below)
    return low + (position - below) * (at(np.minimum(below + 1.0, last)) - low)
