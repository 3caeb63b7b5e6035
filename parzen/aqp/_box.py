"""The per-row kernel masses of :mod:`parzen.aqp.estimate` as compiled loops (Numba).

For each sampled value x with bandwidth h: the mass of N(x, h^2) in [a, b] and its first moment
(plus the reflected kernel N(2L - x, h^2) when the column has a lower edge L), with Phi from
erfc.  Rows deeper than ``reach`` bandwidths inside the box get (1, x) and rows further outside
(0, 0) without any special function; NaN (NULL) rows get (0, 0); h = 0 (a point mass) gives the
indicator of a <= x <= b.

:func:`box_masses` returns the per-row masses of one column (the intervals' standard errors, the tests);
:func:`box_sums` fuses a whole query: the product of the masses of every range column per
row that all of them reach and its weighted sums per answer row, in one pass.  Both are
serial: on this project's two-core machines two threads halved :func:`box_sums`'s median on
flights' 2-D queries (0.72 -> 0.34 ms) but put its 90th percentile per call at 5-8 ms (a thread
waiting for a core that another process holds) against 1.8 ms in one thread.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

_SQRT_HALF = math.sqrt(0.5)
#: Entries (a power of 2) of :func:`box_sums`'s per-range cache of kernel integrals.
_CACHE = 64
_CACHE_MAX = 2.0**62  # values whose int() is defined
#: The position of a 64-bit word's only set bit: _DE_BRUIJN[(bit * _DE_BRUIJN_MAGIC) >> 58].
_DE_BRUIJN_MAGIC = np.uint64(0x03F79D71B4CB0A89)
_DE_BRUIJN = np.zeros(64, dtype=np.intp)
for _k in range(64):
    _DE_BRUIJN[((1 << _k) * 0x03F79D71B4CB0A89 % (1 << 64)) >> 58] = _k
del _k
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


@njit(cache=True)
def _phi_cdf(z):
    return 0.5 * math.erfc(-z * _SQRT_HALF)


#: Phi and phi at z_k = -8.5 + k / 256 (beyond, Phi is 0 or 1 to 5e-18) for :func:`phi_table`.
_TABLE_LOW, _TABLE_STEP = -8.5, 1.0 / 256.0
_TABLE_Z = _TABLE_LOW + _TABLE_STEP * np.arange(round(17.0 / _TABLE_STEP) + 1)
_TABLE_CDF = np.array([0.5 * math.erfc(-z * _SQRT_HALF) for z in _TABLE_Z])
_TABLE_PDF = _INV_SQRT_2PI * np.exp(-0.5 * _TABLE_Z * _TABLE_Z)


@njit(cache=True)
def phi_table(z):
    """Phi(z) by cubic Hermite interpolation of the table (slopes phi): within 3e-13 of erfc's,
    four times faster (the kernel integrals near a box's ends are most of a query's time)."""
    u = (z - _TABLE_LOW) * (1.0 / _TABLE_STEP)
    if not u > 0.0:  # also NaN
        return 0.0 if u <= 0.0 else z
    last = _TABLE_CDF.size - 1
    if u >= last:
        return 1.0
    k = int(u)
    f = u - k
    f2 = f * f
    f3 = f2 * f
    return ((2.0 * f3 - 3.0 * f2 + 1.0) * _TABLE_CDF[k] + (f3 - 2.0 * f2 + f) * _TABLE_STEP * _TABLE_PDF[k]
            + (3.0 * f2 - 2.0 * f3) * _TABLE_CDF[k + 1] + (f3 - f2) * _TABLE_STEP * _TABLE_PDF[k + 1])


@njit(cache=True)
def _normal_box(x, a, b, h, moment):
    alpha = (a - x) / h
    beta = (b - x) / h
    if alpha > 0.0:  # the box is in the upper tail: Phi(-alpha) - Phi(-beta) avoids cancellation
        mass = phi_table(-alpha) - phi_table(-beta)
    else:
        mass = phi_table(beta) - phi_table(alpha)
    if not moment:
        return mass, 0.0
    density = (math.exp(-0.5 * beta * beta) - math.exp(-0.5 * alpha * alpha)) * _INV_SQRT_2PI
    return mass, x * mass - h * density


@njit(cache=True)
def row_box(x, a, b, h, lower, reflect, reach, moment):
    """(mass, moment) of one row's kernel (bandwidth h, reflected at ``lower`` if ``reflect``) in [a, b];
    the moment is 0 near the ends unless ``moment`` (it costs two exponentials)."""
    if math.isnan(x):
        return 0.0, 0.0
    if h == 0.0:
        if a <= x <= b:
            return 1.0, x
        return 0.0, 0.0
    r = reach * h
    if x >= a + r and x <= b - r:
        return 1.0, x
    m = 0.0
    mo = 0.0
    if a - r < x < b + r:
        m, mo = _normal_box(x, a, b, h, moment)
    if reflect and x < 2.0 * lower - a + r:
        m2, mo2 = _normal_box(2.0 * lower - x, a, b, h, moment)
        m += m2
        mo += mo2
    return m, mo


@njit(cache=True, nogil=True)  # answers may run in several threads (parzen serve)
def box_masses(x, scale, h0, a, b, lower, reflect, reach):
    """(mass, moment) per row: bandwidth h0 * scale[i], reflection at ``lower`` if ``reflect``."""
    n = x.size
    mass = np.zeros(n)
    moment = np.zeros(n)
    for i in range(n):
        mass[i], moment[i] = row_box(x[i], a, b, h0 * scale[i], lower, reflect, reach, True)
    return mass, moment


@njit(cache=True)
def _mark(rows, n):
    """One bit per sampled row (13 kB for 100 000 rows), set for ``rows``."""
    bits = np.zeros((n + 63) // 64, dtype=np.uint64)
    for t in range(rows.size):
        i = rows[t]
        bits[i >> 6] |= np.uint64(1) << np.uint64(i & 63)
    return bits


@njit(cache=True)
def _set_rows(bits):
    """The rows whose bits are set, ascending: visiting them in the sample's order reads each
    column forwards (the hardware prefetches it) instead of at random (flights' 2-D queries from
    cold caches 2.1 -> 1.0 ms)."""
    rows = np.empty(bits.size * 64, dtype=np.intp)
    count = 0
    for word in range(bits.size):
        b = bits[word]
        while b != 0:
            low = b & (~b + np.uint64(1))  # the lowest set bit
            rows[count] = (word << 6) + _DE_BRUIJN[(low * _DE_BRUIJN_MAGIC) >> np.uint64(58)]
            count += 1
            b ^= low
    return rows[:count]


@njit(cache=True, inline="always")
def _cached_row_box(j, x, a, b, h, lower, reflect, reach, moment, cache_x, cache_h, cache_m, cache_mo):
    """:func:`row_box` of range j through its direct-mapped cache of (value, bandwidth) -> (mass,
    moment): integer columns repeat a few values near a box's ends, integrated once each (on
    continuous columns the cache never hits and made lineitem's GROUP BY queries 35 % slower)."""
    if not abs(x) < _CACHE_MAX:  # an infinity, a huge value: no cache slot
        return row_box(x, a, b, h, lower, reflect, reach, moment)
    slot = int(x) & (_CACHE - 1)  # integers k and k + 64 share a slot
    if cache_x[j, slot] == x and cache_h[j, slot] == h:
        return cache_m[j, slot], cache_mo[j, slot]
    m, mo = row_box(x, a, b, h, lower, reflect, reach, moment)
    cache_x[j, slot], cache_h[j, slot], cache_m[j, slot], cache_mo[j, slot] = x, h, m, mo
    return m, mo


@dataclass(frozen=True)
class BoxQuery:
    """One query's box integrals over a sample: what :func:`box_sums` reads.

    Built by :func:`parzen.aqp.answers.box_query` (the one place).  Range j is on
    ``data[columns[j]]`` over [lows[j], highs[j]], with bandwidth ``bandwidths[j] * row_scale[i]``
    (``bandwidths[j]`` when ``row_scale`` is empty) and the reflection edge ``lowers[j]`` if
    ``reflects[j]``; ``rows[starts[j]:starts[j + 1]]`` are rows its kernels can reach (any superset
    of them).  A row i of stratum s = ``stratum_of_row[i]`` counts with weight
    ``weight_of_stratum[s]`` in answer row ``output_of_stratum[s]`` (skipped when -1), of ``groups``.
    ``aggregated[q]`` is the row in ``data`` of aggregated column q and ``constrained[q]`` its range
    index (its moment then replaces y p), or -1; ``moments[j]``: whether range j's moments are
    needed (some ``constrained[q] == j``); ``repeats[j]``: whether range j's column has few distinct
    values (:meth:`~parzen.aqp.estimate.SampleView.repeats`), whose kernel integrals near the box's
    ends are then cached.  Kernel mass beyond ``reach`` bandwidths of a box is left out.  Arrays are
    writable and C-contiguous (the types Numba compiled for).
    """

    rows: np.ndarray  # intp
    starts: np.ndarray  # intp, ranges + 1
    data: np.ndarray  # float64, columns x sampled rows
    columns: np.ndarray  # intp, per range
    lows: np.ndarray
    highs: np.ndarray
    bandwidths: np.ndarray  # per range; or k x ranges (:func:`box_sums`)
    lowers: np.ndarray
    reflects: np.ndarray  # bool
    row_scale: np.ndarray  # per sampled row, or empty
    stratum_of_row: np.ndarray  # intp
    output_of_stratum: np.ndarray  # intp
    weight_of_stratum: np.ndarray
    groups: int
    aggregated: np.ndarray  # intp
    constrained: np.ndarray  # intp
    reach: float
    moments: np.ndarray  # bool, per range
    repeats: np.ndarray  # bool, per range


def box_sums(query: BoxQuery) -> np.ndarray:
    """Weighted sums over the sampled rows that every range's kernels reach, per answer row.

    Only the rows in all of the ranges' candidate sets (an AND of bit sets) can have a product of
    masses p > 0: flights' 2-D queries visit 10 600 rows instead of 28 000 (median).

    ``query.bandwidths`` may also hold k rows of bandwidths (k x ranges): the sums of each in one
    pass that reads each reached row once (the answers at the bandwidths c h of
    :mod:`parzen.aqp.contract`'s bias term); ``rows`` must then hold the rows that the widest row's
    kernels reach.  Each row's sums are those of its own pass, bit for bit: a row that only wider
    kernels reach has a product of masses 0 for the narrower ones and is left out of their sums.

    Parameters
    ----------
    query : BoxQuery
        The ranges, the sample and the answer rows (see :class:`BoxQuery`).

    Returns
    -------
    numpy.ndarray
        out[g, :] (``groups`` rows): [sum w p, then per aggregated column q: sum w COUNT-term,
        sum w SUM-term], with p the product of the ranges' kernel masses of a row; the SUM-term is
        the constrained column's moment times the other masses, or y_i p (NULL y left out).  With
        k rows of bandwidths, out[f, g, :] for row f.
    """
    q = query
    several = q.bandwidths.ndim == 2
    out = _box_sums(q.rows, q.starts, q.data, q.columns, q.lows, q.highs,
                    q.bandwidths if several else q.bandwidths[np.newaxis], q.lowers, q.reflects,
                    q.row_scale, q.stratum_of_row, q.output_of_stratum, q.weight_of_stratum, q.groups, q.aggregated,
                    q.constrained, q.reach, q.moments, q.repeats)
    return out if several else out[0]


@njit(cache=True, nogil=True)
def _reached_rows(rows, starts, n):
    """The rows (ascending) in every range's candidate set ``rows[starts[j]:starts[j + 1]]``."""
    bits = _mark(rows[starts[0]:starts[1]], n)
    for j in range(1, starts.size - 1):
        bits &= _mark(rows[starts[j]:starts[j + 1]], n)
    return _set_rows(bits)


@njit(cache=True, inline="always")
def _add_row(out, f, g, w, p, i, data, mass, moment, aggregated, constrained):
    """Add one reached row (weight ``w``, product of masses ``p``, the ranges' ``mass`` and
    ``moment``) to answer row ``g`` of pass ``f``: sum w p, and per aggregated column its COUNT and
    SUM terms."""
    out[f, g, 0] += w * p
    for q in range(aggregated.size):
        c = constrained[q]
        if c >= 0:
            others = 1.0
            for j in range(mass.size):
                if j != c:
                    others *= mass[j]
            out[f, g, 1 + 2 * q] += w * p
            out[f, g, 2 + 2 * q] += w * moment[c] * others
        else:
            y = data[aggregated[q], i]
            if not math.isnan(y):
                out[f, g, 1 + 2 * q] += w * p
                out[f, g, 2 + 2 * q] += w * y * p


@njit(cache=True, nogil=True)
def _box_sums(rows, starts, data, columns, lows, highs, bandwidths, lowers, reflects, row_scale, stratum_of_row,
              output_of_stratum, weight_of_stratum, groups, aggregated, constrained, reach, moments, repeats):
    """:func:`box_sums`, compiled: the fields of :class:`BoxQuery` in order (``bandwidths``: k rows)."""
    r = columns.size
    k = aggregated.size
    passes = bandwidths.shape[0]
    out = np.zeros((passes, groups, 1 + 2 * k))
    mass = np.empty(r)
    moment = np.empty(r)
    cache_x = np.full((passes * r, _CACHE), np.nan)  # range j of pass f: cache row f r + j
    cache_h = np.zeros((passes * r, _CACHE))
    cache_m = np.zeros((passes * r, _CACHE))
    cache_mo = np.zeros((passes * r, _CACHE))
    scaled = row_scale.size > 0  # empty: every factor is 1 (whole-table answers), nothing to read
    if scaled:  # bandwidths all 0: h = 0 whatever the factor (it is finite)
        smooth = False
        for f in range(passes):
            for j in range(r):
                smooth = smooth or bandwidths[f, j] > 0.0
        scaled = smooth
    reached = _reached_rows(rows, starts, data.shape[1])
    for t in range(reached.size):
        i = reached[t]
        stratum = stratum_of_row[i]
        g = output_of_stratum[stratum]
        if g < 0:
            continue
        s = row_scale[i] if scaled else 1.0
        for f in range(passes):
            p = 1.0
            for j in range(r):
                # rows deep inside or far outside (point masses and NULLs too) by a select, not a
                # branch: the rows come in random order of value, and mispredicted branches made
                # flights' 2-D queries 2.5 times slower (0.21 -> 0.53 ms); an inlined function for
                # this step made the test table's queries 30 % slower
                x = data[columns[j], i]
                h = bandwidths[f, j] * s
                a = lows[j]
                b = highs[j]
                rh = reach * h
                inside = (x >= a + rh) & (x <= b - rh)  # h = 0: a <= x <= b; NaN: never
                m = 1.0 if inside else 0.0
                mo = x if inside else 0.0
                if h > 0.0 and not inside and ((a - rh < x) & (x < b + rh)
                                               | (reflects[j] & (x < 2.0 * lowers[j] - a + rh))):
                    if repeats[j]:
                        m, mo = _cached_row_box(f * r + j, x, a, b, h, lowers[j], reflects[j], reach, moments[j],
                                                cache_x, cache_h, cache_m, cache_mo)
                    else:
                        m, mo = row_box(x, a, b, h, lowers[j], reflects[j], reach, moments[j])
                p *= m
                mass[j] = m
                moment[j] = mo
            if p != 0.0:
                _add_row(out, f, g, weight_of_stratum[stratum], p, i, data, mass, moment, aggregated, constrained)
    return out


@njit(cache=True, nogil=True)
def box_terms(rows, data, columns, lows, highs, bandwidths, lowers, reflects, row_scale, reach, aggregated,
              constrained, moments):
    """Per row of ``rows``, the per-row terms of :func:`parzen.aqp.estimate.row_terms` in one pass: the
    product p of the ranges' kernel masses, and per aggregated column q its COUNT and SUM terms.

    Range j is on ``data[columns[j]]`` over [lows[j], highs[j]] (empty where highs[j] < lows[j]: mass
    0), bandwidth ``bandwidths[j] * row_scale[i]`` (``bandwidths[j]`` when ``row_scale`` is empty),
    reflected at ``lowers[j]`` if ``reflects[j]``; ``moments[j]``: whether its first moment is needed.
    ``aggregated[q]`` is the row in ``data`` of column q, ``constrained[q]`` its range or -1.  The floats
    are those of :meth:`parzen.aqp.estimate.ColumnModel.mass_and_moment` and the products of
    ``row_terms``: p = ((1 m_1) m_2) ..., COUNT(y) = m_y prod_{j != y} m_j and SUM(y) = M_y prod_{j != y} m_j
    for a constrained y, else p and y p (0 and 0 where y is NULL).

    Returns
    -------
    p : numpy.ndarray
        Per row.
    count_y, sum_y : numpy.ndarray
        (aggregated columns x rows).
    """
    n = rows.size
    r = columns.size
    k = aggregated.size
    p = np.empty(n)
    count_y = np.empty((k, n))
    sum_y = np.empty((k, n))
    mass = np.empty(r)
    moment = np.empty(r)
    scaled = row_scale.size > 0
    for t in range(n):
        i = rows[t]
        s = row_scale[i] if scaled else 1.0
        product = 1.0
        for j in range(r):
            if highs[j] < lows[j]:
                m, mo = 0.0, 0.0
            else:
                m, mo = row_box(data[columns[j], i], lows[j], highs[j], bandwidths[j] * s, lowers[j], reflects[j],
                                reach, moments[j])
            mass[j] = m
            moment[j] = mo
            product = product * m
        p[t] = product
        for q in range(k):
            c = constrained[q]
            if c >= 0:
                others = 1.0
                for j in range(r):
                    if j != c:
                        others = others * mass[j]
                count_y[q, t] = mass[c] * others
                sum_y[q, t] = moment[c] * others
            else:
                y = data[aggregated[q], i]
                if math.isnan(y):
                    count_y[q, t] = 0.0
                    sum_y[q, t] = 0.0
                else:
                    count_y[q, t] = product
                    sum_y[q, t] = y * product
    return p, count_y, sum_y


@njit(cache=True)
def _mass_sum(values, weights, start, stop, a, b, h, lower, reflect, reach):
    total = 0.0
    for k in range(start, stop):
        total += weights[k] * row_box(values[k], a, b, h, lower, reflect, reach, False)[0]
    return total


@njit(cache=True)
def sorted_mass(values, weights, cumulative, a, b, h, lower, reflect, reach):
    """sum_i w_i P(x_i): the weighted kernel mass in [a, b] of rows sorted by value (NaN last),
    ``cumulative`` = [0, cumsum(weights)].  Rows deeper than ``reach`` bandwidths inside (mass 1)
    add by the cumulative sums, so only the rows near the ends (and, with reflection, those whose
    mirror image reaches the box) cost a kernel integral."""
    r = reach * h
    lo = np.searchsorted(values, a - r)
    hi = np.searchsorted(values, b + r, side="right")
    if h == 0.0:  # point masses: [lo, hi) are the rows in [a, b]
        return cumulative[hi] - cumulative[lo] if hi > lo else 0.0
    i1 = max(np.searchsorted(values, a + r), lo)
    i2 = max(np.searchsorted(values, b - r, side="right"), i1)
    total = cumulative[i2] - cumulative[i1]
    j = np.searchsorted(values, 2.0 * lower - a + r) if reflect else 0
    if j > 0:  # rows [0, j) reach the box mirrored; [i1, i2) are inside already
        if min(j, i1) >= lo:
            total += _mass_sum(values, weights, 0, i1, a, b, h, lower, reflect, reach)
        else:
            total += _mass_sum(values, weights, 0, j, a, b, h, lower, reflect, reach)
            total += _mass_sum(values, weights, lo, i1, a, b, h, lower, reflect, reach)
        total += _mass_sum(values, weights, i2, max(hi, j), a, b, h, lower, reflect, reach)
    else:
        total += _mass_sum(values, weights, lo, i1, a, b, h, lower, reflect, reach)
        total += _mass_sum(values, weights, i2, hi, a, b, h, lower, reflect, reach)
    return total
