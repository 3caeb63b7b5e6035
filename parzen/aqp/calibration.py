"""Calibration estimators: a sample's answer adjusted to margins that the table holds exactly.

Pure functions on numbers and arrays.  :mod:`parzen.aqp.answers` decides which one a query gets
(docs/algorithms.md, "Calibration"); the gridded form (:mod:`parzen.aqp.grid`) supplies the exact
margins.  Sources (full citations in docs/statistics.md, "Sources"): Deming and Stephan (1940) for
raking, Deville and Saerndal (1992) for calibration estimators, Efron and Morris (1973) for the
empirical Bayes shrinkage.
"""

from __future__ import annotations

import math

import numpy as np


def ratio_factor(target: float, estimate: float) -> float:
    """The ratio estimator's factor M / X (Deville and Saerndal 1992, calibration to one total).

    Parameters
    ----------
    target : float
        M, the table's exact rows in a range column's box (from its gridded form).
    estimate : float
        X = sum_i w_i P_c(x_ic), the sample's (weighted) kernel estimate of M.

    Returns
    -------
    float
        M / X, by which COUNT and SUM estimates are multiplied; 1 when X <= 0 (nothing to scale).
    """
    return target / estimate if estimate > 0.0 else 1.0


def rake_2x2(n11: float, n1: float, m1: float, n: float, row_target: float, column_target: float) -> float | None:
    """Cell (1, 1) of a 2 x 2 table raked to two exact margins (Deming and Stephan 1940).

    The table is [[n11, n1 - n11], [m1 - n11, n - n1 - m1 + n11]]; raking (iterative proportional
    fitting) to the margins (R, n - R) and (C, n - C) keeps its odds ratio
    theta = n11 n00 / (n10 n01), so the raked cell x solves

        x (n - R - C + x) = theta (R - x) (C - x),

    a quadratic with one root between max(0, R + C - n) and min(R, C).

    Parameters
    ----------
    n11 : float
        The sample's estimate of the rows in both boxes.
    n1, m1 : float
        The sample's estimates of the rows in the first and in the second box.
    n : float
        The table's rows.
    row_target, column_target : float
        R and C: the table's exact rows in the first and in the second box.

    Returns
    -------
    float or None
        The raked cell x; None when a cell of the table is empty or no root lies in the range
        (then one margin calibrates, :func:`ratio_factor`).
    """
    n10, n01 = n1 - n11, m1 - n11
    n00 = n - n1 - m1 + n11
    if min(n11, n10, n01, n00) <= 0.0:
        return None
    theta = n11 * n00 / (n10 * n01)
    r, c = row_target, column_target
    low, high = max(0.0, r + c - n), min(r, c)
    qa, qb, qc = 1.0 - theta, (n - r - c) + theta * (r + c), -theta * r * c
    if abs(qa) < 1e-12:
        roots = [-qc / qb] if qb != 0.0 else []
    else:
        disc = qb * qb - 4.0 * qa * qc
        if disc < 0.0:
            return None
        q = -0.5 * (qb + math.copysign(math.sqrt(disc), qb))
        roots = [q / qa] + ([qc / q] if q != 0.0 else [])
    slack = 1e-9 * max(n, 1.0)
    inside = [x for x in roots if low - slack <= x <= high + slack]
    return min(max(inside[0], low), high) if inside else None


def shrink_to_independence(x: float, n: float, row_target: float, column_target: float, drawn: float,
                           fraction: float) -> float:
    """The raked 2 x 2 cell shrunk towards independence by as much as the sample cannot tell the two apart.

    With both margins exact (R = ``row_target``, C = ``column_target`` of n rows) the table has one
    free cell.  Its departure from independence d = (x - R C / n) / n is estimated with variance

        s^2 = (1 - f) / (m sum_ij 1 / p_ij),

    p_ij the raked table's shares, m = ``drawn`` the (effective) sampled rows and f = ``fraction``
    the sampled fraction of the table's rows: the variance of the cell's indicator left after its
    regression on both margins' indicators, which is what raking's calibration leaves (Deville and
    Saerndal 1992; the residual lies along the table's one free direction (+1, -1, -1, +1) / p_ij),
    i.e. the inverse Fisher information of that cell.  With a normal prior d ~ N(0, tau^2) and
    tau^2 estimated by max(0, d^2 - s^2), the posterior mean is the empirical Bayes form of Stein's
    rule (Efron and Morris 1973)

        d (1 - s^2 / d^2)  when d^2 > s^2,   else 0.

    Columns whose dependence the sample shows clearly (|d| >> s) keep the raked cell; independent
    ones get R C / n.  Simulated (d_hat ~ N(d, s^2)), the rule's mean squared error is 0.33 s^2 at
    d = 0 and at most 1.49 s^2 (near |d| = 2.5 s), against the raked cell's s^2.  The result keeps
    both margins (it mixes two tables that have them).

    Parameters
    ----------
    x : float
        The raked cell (:func:`rake_2x2`).
    n : float
        The table's rows.
    row_target, column_target : float
        R and C, the exact margins.
    drawn : float
        m, the effective sampled rows (Kish's, for a stratified sample).
    fraction : float
        f, the sampled fraction of the table's rows.

    Returns
    -------
    float
        The shrunk cell; ``x`` itself when a cell is empty or nothing was drawn.
    """
    independent = row_target * column_target / n
    cells = (x, row_target - x, column_target - x, n - row_target - column_target + x)
    if drawn <= 0.0 or min(cells) <= 0.0:
        return x
    variance = max(1.0 - fraction, 0.0) / (drawn * n * sum(1.0 / c for c in cells))
    d = (x - independent) / n
    if d * d <= variance:
        return independent
    return independent + (x - independent) * (1.0 - variance / (d * d))


def rake_groups(inside: np.ndarray, rows: np.ndarray, target: float) -> np.ndarray:
    """Per answer group: the factor that rakes the groups x (in, out of a box) table to exact margins.

    The margins are the groups' exact ``rows`` and the table's exact rows in the box (``target``);
    iterative proportional fitting (Deming and Stephan 1940) alternates the two.  With one group it
    is the ratio estimator target / inside.  Each group's estimate then shares the correction of the
    sum of all groups' (independent, stratified) errors: with G equal groups its variance falls by
    about 1/G.

    Parameters
    ----------
    inside : numpy.ndarray
        The groups' estimated rows in the box (out of it: the rest of each group's ``rows``).
    rows : numpy.ndarray
        The groups' exact rows.
    target : float
        The table's exact rows in the box.

    Returns
    -------
    numpy.ndarray
        One factor per group (1 where a group has no estimated rows in the box).
    """
    start = np.asarray(inside, dtype=np.float64)
    cells_in, cells_out = start.copy(), np.maximum(rows - start, 0.0)
    total = float(rows.sum())
    for _ in range(200):
        have_in, have_out = cells_in.sum(), cells_out.sum()
        if have_in <= 0.0:
            return np.ones_like(start)
        cells_in *= target / have_in
        if have_out > 0.0:
            cells_out *= max(total - target, 0.0) / have_out
        both = cells_in + cells_out
        scale = np.divide(rows, both, out=np.ones_like(both), where=both > 0)
        cells_in *= scale
        cells_out *= scale
        if abs(cells_in.sum() - target) <= 1e-12 * max(total, 1.0):
            break
    return np.divide(cells_in, start, out=np.ones_like(start), where=start > 0)


def rake_2x2_each(n11: np.ndarray, n1: np.ndarray, m1: np.ndarray, n: float, row_target: np.ndarray,
                  column_target: np.ndarray) -> np.ndarray:
    """:func:`rake_2x2` of many tables at once (a histogram's bins), the same operations elementwise
    (so the same numbers), NaN where it gives None.

    Parameters
    ----------
    n11, n1, m1 : numpy.ndarray
        Per table, as :func:`rake_2x2` takes them.
    n : float
        The table's rows.
    row_target, column_target : numpy.ndarray
        Per table, R and C.

    Returns
    -------
    numpy.ndarray
        Per table, the raked cell, or NaN.
    """
    n11, n1, m1 = (np.asarray(v, dtype=np.float64) for v in (n11, n1, m1))
    r, c = np.broadcast_arrays(np.asarray(row_target, dtype=np.float64), np.asarray(column_target, dtype=np.float64))
    with np.errstate(divide="ignore", invalid="ignore"):
        n10, n01 = n1 - n11, m1 - n11
        n00 = n - n1 - m1 + n11
        cells = np.minimum(np.minimum(n11, n10), np.minimum(n01, n00)) > 0.0
        theta = n11 * n00 / (n10 * n01)
        low, high = np.maximum(0.0, r + c - n), np.minimum(r, c)
        qa, qb, qc = 1.0 - theta, (n - r - c) + theta * (r + c), -theta * r * c
        linear = np.abs(qa) < 1e-12
        disc = qb * qb - 4.0 * qa * qc
        q = -0.5 * (qb + np.copysign(np.sqrt(np.maximum(disc, 0.0)), qb))
        first = np.where(linear, np.where(qb != 0.0, -qc / qb, np.nan), q / qa)
        second = np.where(linear | (q == 0.0), np.nan, qc / q)
        slack = 1e-9 * max(n, 1.0)

        def inside(x):
            return (low - slack <= x) & (x <= high + slack)

        root = np.where(inside(first), first, np.where(inside(second), second, np.nan))
        root = np.where(cells & (linear | (disc >= 0.0)), root, np.nan)
        return np.where(np.isnan(root), np.nan, np.minimum(np.maximum(root, low), high))


def shrink_to_independence_each(x: np.ndarray, n: float, row_target: np.ndarray, column_target: np.ndarray,
                                drawn: float, fraction: float) -> np.ndarray:
    """:func:`shrink_to_independence` of many raked cells at once, the same operations elementwise
    (so the same numbers).

    Parameters
    ----------
    x : numpy.ndarray
        The raked cells (:func:`rake_2x2_each`).
    n : float
        The table's rows.
    row_target, column_target : numpy.ndarray
        Per cell, R and C.
    drawn : float
        m, the effective sampled rows.
    fraction : float
        f, the sampled fraction of the table's rows.

    Returns
    -------
    numpy.ndarray
    """
    x = np.asarray(x, dtype=np.float64)
    r, c = np.asarray(row_target, dtype=np.float64), np.asarray(column_target, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        independent = r * c / n
        cells = (x, r - x, c - x, n - r - c + x)
        kept = (drawn <= 0.0) | (np.minimum(np.minimum(cells[0], cells[1]), np.minimum(cells[2], cells[3])) <= 0.0)
        variance = max(1.0 - fraction, 0.0) / (drawn * n * (((0.0 + 1.0 / cells[0]) + 1.0 / cells[1]) + 1.0 / cells[2]
                                                            + 1.0 / cells[3]))
        d = (x - independent) / n
        shrunk = np.where(d * d <= variance, independent, independent + (x - independent) * (1.0 - variance / (d * d)))
        return np.where(kept, x, shrunk)
