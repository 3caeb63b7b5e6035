"""The sums per cell of a per-row term's powers, and the per-row sums they are of, in compiled passes (Numba).

The variances of the stratified totals (:func:`parzen.aqp.answers._stratified_variance`, the domain
variances of :func:`parzen.aqp.domains.domain_spread`) and their effective degrees of freedom
(:mod:`parzen.aqp.tails`) read, per cell (a stratum, or a stratum x domain), the rows m, the sums of
v, v^2 and v^4 of the rows' terms v, and the rows whose term is not 0.  Each comes from one loop over
the rows here, instead of one ``np.bincount`` (and one temporary array) per sum; the sums add the
rows in the same order as ``np.bincount`` does (row by row, from 0.0), so they are the same floats.
:func:`add_scaled` and :func:`add_scaled_kept` build the linear combination z_i of a ratio's variance
(:mod:`parzen.aqp.ratios`) and :func:`terms_of_kept` reads a domain's rows' terms (:mod:`parzen.aqp.domains`), each in one loop
over the rows with the arithmetic of the NumPy expressions they replace.  :func:`add_scaled_rows`,
:func:`add_scaled_kept_rows` and :func:`stratum_sums_of_runs` do the same for one answer row over the rows
where z may be other than 0 (a ratio's terms are 0 where its kernels reach no row): adding a term +0.0
leaves every sum as it was (a sum from +0.0 is never -0.0), so the sums are those over every row;
:func:`stratum_sums_of_last_scaled` adds the last leaf and sums in the same pass, and
:func:`stratum_sums_of_two_scaled` makes z of two leaves (a ratio's) and sums it in one pass.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)  # answers may run in several threads (parzen serve)
def cell_sums(values, cell, cells):
    """Per cell: its rows, the sums of v, v^2 and (v^2)^2, and its rows with v != 0.

    Parameters
    ----------
    values : numpy.ndarray of float64
        Per row, its term v.
    cell : numpy.ndarray of int
        Per row, its cell, in [0, cells).
    cells : int
        The cells.

    Returns
    -------
    rows, s1, s2, s4, carrying : numpy.ndarray of float64
        Per cell: sum 1, sum v, sum v^2, sum (v^2)^2 and sum 1[v != 0] over its rows, each added in
        row order from 0.0 (``np.bincount(cell, weights=...)``'s floats).
    """
    rows = np.zeros(cells)
    s1 = np.zeros(cells)
    s2 = np.zeros(cells)
    s4 = np.zeros(cells)
    carrying = np.zeros(cells)
    if values.size == 0:
        return rows, s1, s2, s4, carrying
    # a run of rows of one cell adds in registers: loaded when it starts, stored when it ends (the
    # same additions in the same order as adding to the arrays row by row)
    c = cell[0]
    m, a1, a2, a4, k = rows[c], s1[c], s2[c], s4[c], carrying[c]
    for i in range(values.size):
        if cell[i] != c:
            rows[c], s1[c], s2[c], s4[c], carrying[c] = m, a1, a2, a4, k
            c = cell[i]
            m, a1, a2, a4, k = rows[c], s1[c], s2[c], s4[c], carrying[c]
        v = values[i]
        square = v * v
        m += 1.0
        a1 += v
        a2 += square
        a4 += square * square
        if v != 0.0:
            k += 1.0
    rows[c], s1[c], s2[c], s4[c], carrying[c] = m, a1, a2, a4, k
    return rows, s1, s2, s4, carrying


@njit(cache=True, nogil=True)
def domain_cell_sums(values, stratum, group, groups, cells):
    """:func:`cell_sums` over the cells stratum x domain (cell ``stratum * groups + group``, fewer
    than ``cells``), kept to the cells that hold rows, ascending.

    Parameters
    ----------
    values : numpy.ndarray of float64
        Per row, its term.
    stratum, group : numpy.ndarray of int
        Per row, its stratum and its domain.
    groups : int
        The domains.
    cells : int
        An upper bound on the cells' indices (strata x groups).

    Returns
    -------
    ids : numpy.ndarray of int64
        The cells that hold rows, ascending.
    rows, s1, s2, s4 : numpy.ndarray of float64
        Per such cell, as :func:`cell_sums`.
    """
    rows = np.zeros(cells)
    s1 = np.zeros(cells)
    s2 = np.zeros(cells)
    s4 = np.zeros(cells)
    if values.size:  # runs of one cell add in registers, as in cell_sums
        c = stratum[0] * groups + group[0]
        m, a1, a2, a4 = rows[c], s1[c], s2[c], s4[c]
        for i in range(values.size):
            d = stratum[i] * groups + group[i]
            if d != c:
                rows[c], s1[c], s2[c], s4[c] = m, a1, a2, a4
                c = d
                m, a1, a2, a4 = rows[c], s1[c], s2[c], s4[c]
            v = values[i]
            square = v * v
            m += 1.0
            a1 += v
            a2 += square
            a4 += square * square
        rows[c], s1[c], s2[c], s4[c] = m, a1, a2, a4
    ids = np.flatnonzero(rows)
    return ids.astype(np.int64), rows[ids], s1[ids], s2[ids], s4[ids]


@njit(cache=True, nogil=True)
def add_scaled(z, factor, group, term):
    """z_i += factor[group_i] term_i in place, as NumPy's ``z += factor[group] * term`` (the same floats,
    without the temporaries).

    Parameters
    ----------
    z : numpy.ndarray of float64
        Per row, the sum so far (written).
    factor : numpy.ndarray of float64
        Per group, the factor.
    group : numpy.ndarray of int
        Per row, its group.
    term : numpy.ndarray of float64
        Per row, the term.
    """
    for i in range(z.size):
        z[i] = z[i] + factor[group[i]] * term[i]


@njit(cache=True, nogil=True)
def add_scaled_kept(z, factor, group, term, keep):
    """z_i += factor[group_i] (term_i keep_i) in place, as NumPy's ``z += factor[group] * (term * keep)``
    with ``keep`` as 1.0 / 0.0 (the same floats, without the product's array).

    Parameters
    ----------
    z : numpy.ndarray of float64
        Per row, the sum so far (written).
    factor : numpy.ndarray of float64
        Per group, the factor.
    group : numpy.ndarray of int
        Per row, its group.
    term : numpy.ndarray of float64
        Per row, the term.
    keep : numpy.ndarray of bool
        Per row, whether its term counts (else it is multiplied by 0.0).
    """
    for i in range(z.size):
        z[i] = z[i] + factor[group[i]] * (term[i] * (1.0 if keep[i] else 0.0))


@njit(cache=True, nogil=True)
def terms_of_kept(rows, keep, kept, terms, masses, valid):
    """The terms of the rows ``kept`` from those of ``rows``: per kept row, its term and mass times
    validity where it is among ``rows``, else 0.

    Parameters
    ----------
    rows : numpy.ndarray of int
        The rows that have terms (any order).
    keep : numpy.ndarray of bool
        Per sampled row, whether it is kept.
    kept : numpy.ndarray of int
        The kept rows, ascending (those where ``keep`` holds).
    terms, masses, valid : numpy.ndarray of float64
        Per row of ``rows``: its term, its kernels' mass and whether its inputs are all present (1.0 / 0.0).

    Returns
    -------
    kept_terms, kept_counts : numpy.ndarray of float64
        Per kept row: its term, and its mass times its validity (0.0 and 0.0 where it has none).
    """
    position = np.empty(keep.size, dtype=np.intp)  # per sampled row, the kept rows before it: its index in kept
    before = 0
    for r in range(keep.size):
        position[r] = before
        if keep[r]:
            before += 1
    kept_terms = np.zeros(kept.size)
    kept_counts = np.zeros(kept.size)
    for i in range(rows.size):
        r = rows[i]
        if keep[r]:
            j = position[r]
            kept_terms[j] = terms[i]
            kept_counts[j] = masses[i] * valid[i]
    return kept_terms, kept_counts


@njit(cache=True, nogil=True)
def add_scaled_rows(z, factor, term, rows):
    """z_j += factor term[rows_j] in place: :func:`add_scaled` of one group on the rows ``rows`` only
    (z_j is row rows_j's sum so far).

    Parameters
    ----------
    z : numpy.ndarray of float64
        Per row of ``rows``, the sum so far (written).
    factor : float
        The factor.
    term : numpy.ndarray of float64
        Per sampled row, the term.
    rows : numpy.ndarray of int
        The rows.
    """
    for j in range(z.size):
        z[j] = z[j] + factor * term[rows[j]]


@njit(cache=True, nogil=True)
def add_scaled_kept_rows(z, factor, term, keep, rows):
    """z_j += factor (term[rows_j] keep[rows_j]) in place: :func:`add_scaled_kept` of one group on the rows
    ``rows`` only (``keep`` as 1.0 / 0.0).

    Parameters
    ----------
    z : numpy.ndarray of float64
        Per row of ``rows``, the sum so far (written).
    factor : float
        The factor.
    term : numpy.ndarray of float64
        Per sampled row, the term.
    keep : numpy.ndarray of bool
        Per sampled row, whether its term counts (else it is multiplied by 0.0).
    rows : numpy.ndarray of int
        The rows.
    """
    for j in range(z.size):
        r = rows[j]
        z[j] = z[j] + factor * (term[r] * (1.0 if keep[r] else 0.0))


@njit(cache=True, nogil=True)
def stratum_sums_of_runs(values, bounds):
    """Per stratum s, the sums of v, v^2 and (v^2)^2 over ``values[bounds[s]:bounds[s + 1]]``, added in
    order from 0.0 (:func:`domain_cell_sums`'s sums of one group where each stratum's rows are one run:
    the sample's strata, ``Synopsis.strata``, on rows taken in ascending order).

    Parameters
    ----------
    values : numpy.ndarray of float64
        Per row, its term v, the rows of each stratum one run.
    bounds : numpy.ndarray of int
        Where each stratum's run starts, and after the last one where it ends.

    Returns
    -------
    s1, s2, s4 : numpy.ndarray of float64
        Per stratum.
    """
    strata = bounds.size - 1
    s1 = np.zeros(strata)
    s2 = np.zeros(strata)
    s4 = np.zeros(strata)
    for c in range(strata):
        a1, a2, a4 = s1[c], s2[c], s4[c]
        for j in range(bounds[c], bounds[c + 1]):
            v = values[j]
            square = v * v
            a1 += v
            a2 += square
            a4 += square * square
        s1[c], s2[c], s4[c] = a1, a2, a4
    return s1, s2, s4


@njit(cache=True, nogil=True)
def stratum_sums_of_last_scaled(z, factor, term, keep, kept, rows, bounds):
    """:func:`stratum_sums_of_runs` of z + factor term (times 1.0 / 0.0 by ``keep`` where ``kept``) on the
    rows ``rows``, in one pass: :func:`add_scaled_rows` (or :func:`add_scaled_kept_rows`) of a ratio's
    last leaf and the sums of the result, each row's z_j made as those make it and added to its
    stratum's sums as that adds them (the same floats), without writing z back.

    Parameters
    ----------
    z : numpy.ndarray of float64
        Per row of ``rows``, the sum of the other leaves' scaled terms (read only).
    factor : float
        The last leaf's factor.
    term : numpy.ndarray of float64
        Per sampled row, its term.
    keep : numpy.ndarray of bool
        Per sampled row, whether its term counts (else it is multiplied by 0.0); read only where ``kept``.
    kept : bool
        Whether the leaf has a categorical filter (``keep``).
    rows : numpy.ndarray of int
        The rows, ascending.
    bounds : numpy.ndarray of int
        Where each stratum's run of ``rows`` starts, and after the last one where it ends.

    Returns
    -------
    s1, s2, s4 : numpy.ndarray of float64
        Per stratum.
    """
    strata = bounds.size - 1
    s1 = np.zeros(strata)
    s2 = np.zeros(strata)
    s4 = np.zeros(strata)
    for c in range(strata):
        a1, a2, a4 = s1[c], s2[c], s4[c]
        for j in range(bounds[c], bounds[c + 1]):
            r = rows[j]
            t = term[r] * (1.0 if keep[r] else 0.0) if kept else term[r]
            v = z[j] + factor * t
            square = v * v
            a1 += v
            a2 += square
            a4 += square * square
        s1[c], s2[c], s4[c] = a1, a2, a4
    return s1, s2, s4


@njit(cache=True, nogil=True)
def stratum_sums_of_two_scaled(first_factor, first_term, first_keep, first_kept, factor, term, keep, kept, rows,
                               bounds):
    """:func:`stratum_sums_of_last_scaled` of z = 0.0 + first_factor first_term (:func:`add_scaled_rows` or
    :func:`add_scaled_kept_rows` of a first leaf onto zeros) and the last leaf, in one pass: z of a ratio's
    two leaves made row by row as those make it (the same floats, +0.0 added first as they add it) and
    summed at once, without z's array or its pass.

    Parameters
    ----------
    first_factor : float
        The first leaf's factor.
    first_term : numpy.ndarray of float64
        Per sampled row, the first leaf's term.
    first_keep : numpy.ndarray of bool
        Per sampled row, whether the first leaf's term counts; read only where ``first_kept``.
    first_kept : bool
        Whether the first leaf has a categorical filter.
    factor, term, keep, kept
        The last leaf's, as :func:`stratum_sums_of_last_scaled` reads them.
    rows : numpy.ndarray of int
        The rows, ascending.
    bounds : numpy.ndarray of int
        Where each stratum's run of ``rows`` starts, and after the last one where it ends.

    Returns
    -------
    s1, s2, s4 : numpy.ndarray of float64
        Per stratum.
    """
    strata = bounds.size - 1
    s1 = np.zeros(strata)
    s2 = np.zeros(strata)
    s4 = np.zeros(strata)
    for c in range(strata):
        a1, a2, a4 = s1[c], s2[c], s4[c]
        for j in range(bounds[c], bounds[c + 1]):
            r = rows[j]
            u = first_term[r] * (1.0 if first_keep[r] else 0.0) if first_kept else first_term[r]
            t = term[r] * (1.0 if keep[r] else 0.0) if kept else term[r]
            v = (0.0 + first_factor * u) + factor * t
            square = v * v
            a1 += v
            a2 += square
            a4 += square * square
        s1[c], s2[c], s4[c] = a1, a2, a4
    return s1, s2, s4


@njit(cache=True, nogil=True, error_model="numpy")  # x / 0 as NumPy's (inf, NaN), not an exception
def one_domain_cells(drawn, table_rows, rows, s1, s2, s4):
    """The cells (strata) of one domain's variance: each cell's term of it, their sum, and the kurtosis
    terms that :func:`parzen.aqp.tails.effective_df_of_cells` averages, in one loop over the cells with
    the arithmetic of the NumPy expressions of :func:`parzen.aqp.domains._variances_of_cells` and
    ``effective_df_of_cells`` (the same floats: each element's operations in their order; the sum added
    in cell order from 0.0, as ``np.bincount`` adds).

    Parameters
    ----------
    drawn, table_rows : numpy.ndarray of float64
        Per cell: its stratum's drawn rows n and table rows N.
    rows : numpy.ndarray of float64
        Per cell: the sampled rows m whose terms enter it.
    s1, s2, s4 : numpy.ndarray of float64
        Per cell: the sums of its terms v, of v^2 and of v^4.

    Returns
    -------
    contribution : numpy.ndarray of float64
        Per cell, N^2 S^2 / n (1 - n / N) (0 where n <= 1; NaN as 0.0 and +-inf as the largest floats, as
        ``np.nan_to_num``), S^2 = max(s2 - s1^2 / n, 0) / (n - 1).
    variance : float
        The contributions' sum.
    weighted, counted : numpy.ndarray of float64
        Over the cells whose s2 is above 0, in cell order: m kappa_c (kappa_c = m s4 / s2^2) and m, whose
        sums (``ndarray.sum``) give the borrowed kurtosis.
    """
    largest = np.finfo(np.float64).max
    cells = drawn.size
    contribution = np.zeros(cells)
    weighted = np.zeros(cells)
    counted = np.zeros(cells)
    variance = 0.0
    shown = 0
    for c in range(cells):
        n, total = drawn[c], table_rows[c]
        spread = s2[c] - s1[c] * s1[c] / n
        spread = spread if np.isnan(spread) or spread > 0.0 else 0.0  # np.maximum(spread, 0.0): NaN stays
        var = spread / (n - 1) if n > 1 else 0.0
        share = 1.0 - n / total
        share = share if np.isnan(share) or share > 0.0 else 0.0  # np.maximum(0.0, share)
        v = total * total * var / n * share
        if np.isnan(v):
            v = 0.0
        elif v == np.inf:
            v = largest
        elif v == -np.inf:
            v = -largest
        contribution[c] = v
        variance += v
        if s2[c] > 0.0:
            weighted[shown] = rows[c] * (rows[c] * s4[c] / (s2[c] * s2[c]))
            counted[shown] = rows[c]
            shown += 1
    return contribution, variance, weighted[:shown], counted[:shown]


@njit(cache=True, nogil=True, error_model="numpy")
def one_domain_df(contribution, rows, kappa):
    """:func:`parzen.aqp.tails.effective_df_of_cells` of one answer row from its cells' contributions
    V_s and rows m_s and the borrowed kurtosis ``kappa``: Satterthwaite's (sum V_s)^2 / sum V_s^2 / d_s,
    d_s = 2 m_s / kappa, over the cells with a finite V_s > 0 and d_s > 0, the sums added in cell order
    from 0.0 (``np.bincount``'s floats); inf where that sum is not above 0 or a V_s is not finite.

    Parameters
    ----------
    contribution, rows : numpy.ndarray of float64
        Per cell, V_s and m_s.
    kappa : float
        The kurtosis.

    Returns
    -------
    float
    """
    variance = 0.0
    spread = 0.0
    finite = True
    for c in range(contribution.size):
        v = contribution[c]
        cell_df = 2.0 * rows[c] / kappa
        if not np.isfinite(v):
            finite = False
        elif v > 0.0 and cell_df > 0.0:
            variance += v
            spread += v * v / cell_df
    return variance * variance / spread if spread > 0.0 and finite else np.inf


@njit(cache=True, nogil=True)
def weighted_total(weight, values):
    """sum_i weight_i values_i, each product rounded and added in row order from 0.0: the floats of
    ``np.bincount(group, weights=weight * values)`` of one group.

    Parameters
    ----------
    weight, values : numpy.ndarray of float64
        Per row.

    Returns
    -------
    float
    """
    total = 0.0
    for i in range(values.size):
        total += weight[i] * values[i]
    return total
