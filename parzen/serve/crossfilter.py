"""Every chart of a brush from one set of per-row kernel masses: crossfiltering over a synopsis's sample.

A brush asks each chart of a page (:class:`parzen.serve.charts.Layout`) for its bars under every
filter but its own.  The query path answers them one by one, each chart's SQL parsed and each bin's
kernel integrals computed again.  Here the same answers come from what they share:

- **kept per page** (built when the server starts): per histogram, the kernel mass of every sampled
  row in each of its bins and in each of its density curve's finer bins, P_x,i(B_k) (the compiled
  :func:`parzen.aqp._box.row_box` per row and bin, its non-zero entries in compressed rows), once
  with the synopsis's bandwidths and, when a filter on a group column calls for the strata's wider
  kernels, once with those; the bins' candidate rows and calibration margins; the answers under
  no filter (the gridded form's);
- **per brush**: the mass of every sampled row in each filtered column's box, P_c,i, computed once
  for all charts; then per chart, one pass over the rows: p_i = prod_{c != x} P_c,i (the
  chart's own filter left out) and sums_k = sum_i w_i P_x,i(B_k) p_i (bars and curve bins at
  once); per group chart, the sums per group.

The sums are those of the query path's one pass (:func:`parzen.aqp.histogram_pass.one_pass_answers`,
:func:`parzen.aqp.answers.calibrated_values`): the same masses, multiplied in the same order and
added over the rows in ascending order; the calibration is the query path's own
(:func:`parzen.aqp.histogram_pass.bin_factors`, :func:`parzen.aqp.answers.calibration_factor`, fed the
margins kept per bin).  So a chart's bars equal the answer to its SQL (``POST /query``) up to the
order of a few products' factors (the tests hold them to 1e-12).  docs/aqp.md, "How a brush is
answered".
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace

import numpy as np
from numba import njit

from ..aqp import answers, cube_answers, histogram, histogram_pass
from ..aqp._box import row_box
from ..aqp.estimate import _REACH
from ..aqp.sql import AggregateQuery, Range, parse
from ..aqp.strata import Layout as Strata
from ..aqp.strata import output_groups
from ..aqp.synopsis import Synopsis
from .charts import Layout

#: Answers of :meth:`Crossfilter.output_groups` kept.
OUTPUTS_KEPT = 256
#: The two sets of kernels: the synopsis's bandwidths (whole-table answers) and the strata's wider ones.
WHOLE, SCALED = "whole", "scaled"


@dataclass(frozen=True)
class BinTable:
    """Per sampled row, its non-zero kernel masses in a set of bins: row i's are
    ``masses[starts[i]:starts[i + 1]]`` in bins ``bins[starts[i]:starts[i + 1]]`` (ascending).
    When every row has at most one, of mass 1 (point masses), ``single``: ``bins`` holds row i's bin
    (-1 for none) and ``starts`` and ``masses`` are empty.

    Parameters
    ----------
    starts : numpy.ndarray
        int64, rows + 1.
    bins : numpy.ndarray
        int32, one per entry (or per row).
    masses : numpy.ndarray
        float64, one per entry.
    single : bool
        One bin per row, of mass 1.
    """

    starts: np.ndarray
    bins: np.ndarray
    masses: np.ndarray
    single: bool = False

    @classmethod
    def of(cls, starts: np.ndarray, bins: np.ndarray, masses: np.ndarray) -> BinTable:
        """The table of :func:`_bin_table`'s arrays, as one bin per row where it can be."""
        counts = np.diff(starts)
        if counts.max(initial=0) > 1 or not (masses == 1.0).all():
            return cls(starts, bins, masses)
        bin_of_row = np.full(counts.size, -1, dtype=np.int32)
        bin_of_row[counts > 0] = bins
        return cls(np.zeros(0, dtype=np.int64), bin_of_row, np.zeros(0), True)


@dataclass(frozen=True)
class Bins:
    """One set of bins of a histogram chart: their indices, intervals [a, b] on x and which are not empty.

    Parameters
    ----------
    ks : numpy.ndarray
        The bins' indices k (:func:`parzen.aqp.histogram.bins`).
    width : float
        Their width w.
    intervals : numpy.ndarray
        bins x 2: each bin's interval to integrate over (:meth:`ColumnModel.interval`).
    held : numpy.ndarray
        Per bin, whether its interval is not empty.
    """

    ks: np.ndarray
    width: float
    intervals: np.ndarray
    held: np.ndarray


class HistogramChart:
    """What a brush's answer for one histogram reads: its query without filters, its bins, the
    rows' kernel masses in them (per set of kernels, made on first use) and the bins' margins.

    Parameters
    ----------
    query : parzen.aqp.histogram.HistogramQuery
        The chart's query with no filter, names as in the synopsis.
    curve : parzen.aqp.histogram.HistogramQuery or None
        Its density curve's (finer bins), or None.
    synopsis : Synopsis
    strata : parzen.aqp.strata.Layout
    """

    def __init__(self, query, curve, synopsis: Synopsis, strata: Strata) -> None:
        self.query, self.curve, self.synopsis, self.strata = query, curve, synopsis, strata
        self.column = query.column
        self.model = synopsis.models[self.column]
        self.bars = _bins_of(query, synopsis)
        self.fine = _bins_of(curve, synopsis) if curve is not None else None
        self.curve_labels = self.fine.ks * self.fine.width if self.fine is not None else None
        self._tables: dict[tuple[str, bool], BinTable] = {}
        self._counts: dict[str, np.ndarray] = {}
        bins = self.bars.intervals
        self.margins = (np.array([strata.view.marginal(self.model, a, b) for a, b in bins]),
                        synopsis.grids[self.column].boxes(bins[:, 0], bins[:, 1])[0]) \
            if self.column in synopsis.grids else None
        self.unfiltered = self._unfiltered()

    def _unfiltered(self) -> tuple[np.ndarray, str, np.ndarray | None] | None:
        """The bars (one per bin), their form and the curve's masses under no filter, when the
        gridded form answers them (the table's own C(b) - C(a): the same for every brush)."""
        if self.column not in self.synopsis.grids:
            return None
        frame, form = histogram.answer(self.query, self.synopsis, self.strata, None)
        bars = _per_bin(frame.to_numpy(dtype=np.float64), self.query, self.bars)
        masses = histogram.density(self.curve, self.synopsis, self.strata)[1] if self.curve is not None else None
        return bars, form, masses

    def table(self, kernels: str, fine: bool) -> BinTable:
        """The rows' masses in the bars' bins (or the curve's, ``fine``) with ``kernels``.

        Parameters
        ----------
        kernels : {"whole", "scaled"}
            The synopsis's bandwidths, or the strata's wider ones (h times each row's factor).
        fine : bool
            The density curve's bins.

        Returns
        -------
        BinTable
        """
        if self.model.bandwidth == 0.0 or self.strata.row_scale is None:  # no factor widens these kernels
            kernels = WHOLE
        key = (kernels, fine)
        if key not in self._tables:
            bins = self.fine if fine else self.bars
            assert bins is not None
            strata = self.strata
            scale = strata.scale_of_row if kernels == SCALED else np.ones(strata.data.shape[1])
            lower = self.model.lower
            self._tables[key] = BinTable.of(*_bin_table(
                strata.data[strata.position[self.column]], scale, self.model.bandwidth,
                np.ascontiguousarray(bins.intervals[:, 0]), np.ascontiguousarray(bins.intervals[:, 1]), bins.held,
                0.0 if lower is None else lower, lower is not None, _REACH))
        return self._tables[key]

    def candidate_counts(self, kernels: str) -> np.ndarray:
        """Per bin, the sampled rows within reach of it (:func:`parzen.aqp.histogram_pass._candidate_counts`).

        Parameters
        ----------
        kernels : {"whole", "scaled"}

        Returns
        -------
        numpy.ndarray
        """
        if kernels not in self._counts:
            reach = _REACH * self.model.bandwidth * _widest(self.strata, kernels)
            self._counts[kernels] = histogram_pass._candidate_counts(self.strata, self.column, self.bars.intervals,
                                                                     reach)
        return self._counts[kernels]


class Filtered:
    """A brush's range on one numeric column: its interval, and the rows' kernel masses in it per
    set of kernels (computed on first use, once for every chart).

    Parameters
    ----------
    column : str
    interval : (float, float)
        [a, b] (:meth:`ColumnModel.interval` of the range).
    synopsis : Synopsis
    strata : parzen.aqp.strata.Layout
    """

    def __init__(self, column: str, interval: tuple[float, float], synopsis: Synopsis, strata: Strata) -> None:
        self.column, self.interval, self.synopsis, self.strata = column, interval, synopsis, strata
        self.model = synopsis.models[column]
        self.empty = interval[1] < interval[0]
        self._masses: dict[str, np.ndarray] = {}
        self._margins: tuple[float, float] | None = None

    def masses(self, kernels: str) -> np.ndarray:
        """P_c,i per sampled row (0 beyond the kernels' reach and for an empty box).

        Parameters
        ----------
        kernels : {"whole", "scaled"}

        Returns
        -------
        numpy.ndarray
        """
        if self.model.bandwidth == 0.0 or self.strata.row_scale is None:  # no factor widens these kernels
            kernels = WHOLE
        if kernels not in self._masses:
            strata, model = self.strata, self.model
            n = strata.data.shape[1]
            if self.empty:
                self._masses[kernels] = np.zeros(n)
            else:
                a, b = self.interval
                scale = strata.scale_of_row if kernels == SCALED else np.ones(n)
                self._masses[kernels] = _row_masses(strata.data[strata.position[self.column]], scale,
                                                    model.bandwidth, a, b, 0.0 if model.lower is None else model.lower,
                                                    model.lower is not None, _REACH)
        return self._masses[kernels]

    def candidate_count(self, kernels: str) -> int:
        """The sampled rows within reach of the box (:meth:`SampleView.candidates`'s size).

        Parameters
        ----------
        kernels : {"whole", "scaled"}

        Returns
        -------
        int
        """
        values, _ = self.strata.view._sort(self.column)
        reach = _REACH * self.model.bandwidth * _widest(self.strata, kernels)
        a, b = self.interval
        return int(np.searchsorted(values, b + reach, side="right") - np.searchsorted(values, a - reach, side="left"))

    def margins(self) -> tuple[float, float]:
        """(X, M) of the box: the sample's kernel mass (:meth:`SampleView.marginal`) and the grid's
        exact rows (the column has a grid).

        Returns
        -------
        (float, float)
        """
        if self._margins is None:
            self._margins = (self.strata.view.marginal(self.model, *self.interval),
                             self.synopsis.grids[self.column].box(*self.interval)[0])
        return self._margins


class Brush:
    """One brush's filters and what its charts share: the filtered columns' masses, their products
    over the rows and the strata each chart's query keeps.

    Parameters
    ----------
    filtered : dict of str to Filtered
        The ranges on numeric columns, in the brush's order.
    synopsis : Synopsis
    strata : parzen.aqp.strata.Layout
    """

    def __init__(self, filtered: dict[str, Filtered], synopsis: Synopsis, strata: Strata) -> None:
        self.filtered, self.synopsis, self.strata = filtered, synopsis, strata
        self._products: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}

    def product(self, columns: tuple[str, ...], kernels: str) -> tuple[np.ndarray, np.ndarray]:
        """(rows, p): the rows (ascending) whose product of the ``columns``' masses (in this order,
        as the query path multiplies them) is not 0, and that product p_i per sampled row (1 for no
        column).

        Parameters
        ----------
        columns : tuple of str
            Filtered columns.
        kernels : {"whole", "scaled"}

        Returns
        -------
        (numpy.ndarray, numpy.ndarray)
        """
        if self.strata.row_scale is None or all(self.filtered[c].model.bandwidth == 0.0 for c in columns):
            kernels = WHOLE  # no factor widens these kernels: the same masses (Filtered.masses)
        key = (columns, kernels)
        if key not in self._products:
            n = self.strata.data.shape[1]
            if not columns:
                self._products[key] = np.arange(n), np.ones(n)
            else:
                p = self.filtered[columns[0]].masses(kernels).copy()
                for c in columns[1:]:
                    p *= self.filtered[c].masses(kernels)
                self._products[key] = _nonzero_rows(p), p
        return self._products[key]



class Crossfilter:
    """The brushes of one table's page, answered from its synopsis (see the module docstring).

    Parameters
    ----------
    layout : parzen.serve.charts.Layout
        The page.
    synopsis : Synopsis
        The table's synopsis.
    strata : parzen.aqp.strata.Layout
        Its strata (the engine's).
    resolve : callable
        The engine's name resolution of a parsed query (:meth:`parzen.aqp.Engine._resolved`).
    """

    def __init__(self, layout: Layout, synopsis: Synopsis, strata: Strata, resolve) -> None:
        self.layout, self.synopsis, self.strata, self.resolve = layout, synopsis, strata, resolve
        self.histograms: dict[str, HistogramChart] = {}
        for name, chart in layout.histograms.items():
            query = histogram.parse_histogram(layout.histogram_sql(name, {}))
            curve = histogram.parse_histogram(layout.histogram_sql(name, {}, curve=True)) if chart.curve_factor \
                else None
            assert query is not None
            query = replace(query, base=resolve(query.base))
            curve = replace(curve, base=resolve(curve.base)) if curve is not None else None
            self.histograms[name] = HistogramChart(query, curve, synopsis, strata)
        self.groups = {name: resolve(parse(layout.groups_sql(name, {}))) for name in layout.groups}
        self._outputs: dict[tuple, tuple[list[tuple], np.ndarray]] = {}

    def output_groups(self, query: AggregateQuery) -> tuple[list[tuple], np.ndarray]:
        """:func:`parzen.aqp.strata.output_groups` of a chart's ``query``, kept: it depends on the
        query's GROUP BY and IN filters only (a brush's ranges are on numeric columns), of which a
        page has few (the last :data:`OUTPUTS_KEPT` are kept).

        Parameters
        ----------
        query : AggregateQuery
            A chart's query, names as in the synopsis.

        Returns
        -------
        keys : list of tuple
        output_of_stratum : numpy.ndarray
        """
        key = (query.group_by, tuple(sorted(query.members.items())))
        found = self._outputs.get(key)
        if found is None:
            found = output_groups(query, self.synopsis, self.strata)
            if len(self._outputs) >= OUTPUTS_KEPT:
                self._outputs.clear()
            self._outputs[key] = found
        return found

    def warm(self) -> None:
        """Make every chart's kernel masses with both sets of kernels now, and answer a brush with a
        range and an IN filter (Numba loads each compiled pass from its cache when first called), so
        that no brush pays for them."""
        for chart in self.histograms.values():
            for kernels in (WHOLE, SCALED):
                chart.table(kernels, False)
                chart.candidate_counts(kernels)
                if chart.fine is not None:
                    chart.table(kernels, True)
        filters: dict = {}
        for name, bars in list(self.layout.histograms.items())[:1]:
            filters[name] = (bars.first * bars.width, (bars.first + bars.count) * bars.width)
        for name, group in list(self.layout.groups.items())[:1]:
            if group.values:
                filters[name] = group.values[:1]
        self.answer(filters, [*self.layout.histograms, *self.layout.groups])

    def answer(self, filters: dict, names: list[str]) -> list[dict]:
        """Per chart of ``names``: its bars ("values", one per bin or group of the layout), "form",
        and for a smoothed histogram its density curve's masses ("masses", or None).

        Parameters
        ----------
        filters : dict
            Checked filters (:meth:`parzen.serve.charts.Layout.checked_filters`).
        names : list of str
            The charts.

        Returns
        -------
        list of dict
            With "curve_labels", the curve bins' lower edges (or None), and "ms", the chart's time
            (the filtered columns' masses counted in the first chart that reads them).
        """
        numeric = {c: v for c, v in filters.items() if c in self.layout.histograms}
        members = {c: frozenset(v) for c, v in filters.items() if c in self.layout.groups}
        brush = Brush({c: Filtered(c, self.synopsis.models[c].interval(Range(c, lo, hi)), self.synopsis, self.strata)
                       for c, (lo, hi) in numeric.items()}, self.synopsis, self.strata)
        answered = []
        for name in names:
            started = time.perf_counter()
            answer = self._histogram(name, numeric, members, brush) if name in self.histograms \
                else self._groups(name, numeric, members, brush)
            answered.append({**answer, "ms": 1e3 * (time.perf_counter() - started)})
        return answered

    def _histogram(self, name: str, numeric: dict, members: dict, brush: Brush) -> dict:
        chart = self.histograms[name]
        ranges = {c: Range(c, lo, hi) for c, (lo, hi) in numeric.items() if c != name}
        base = self.resolve(replace(chart.query.base, ranges={**ranges, name: Range(name)}, members=members))
        others = [c for c in base.ranges if c in self.synopsis.models and c != name]  # the query's order
        if not others and not base.members and chart.unfiltered is not None:
            bars, form, masses = chart.unfiltered
            return {"values": bars, "form": form, "masses": masses, "curve_labels": chart.curve_labels}
        filtered = brush.filtered
        _, output_of_stratum = self.output_groups(base)
        kernels = WHOLE if answers.whole_table(base, output_of_stratum) else SCALED
        rows, p_other = brush.product(tuple(others), kernels)
        table = chart.table(kernels, False)
        fine = chart.table(kernels, True) if chart.fine is not None else None
        strata = self.strata
        if table.single and fine is None:
            sums = _single_bin_sums(table.bins, chart.bars.ks.size, rows, p_other, strata.stratum_of_row,
                                    output_of_stratum, strata.weight)
            curve = np.zeros(0)
        else:
            sums = _histogram_sums(table.starts, table.bins, table.masses, chart.bars.ks.size, rows, p_other,
                                   strata.stratum_of_row, output_of_stratum, strata.weight)
            curve = _histogram_sums(fine.starts, fine.bins, fine.masses, chart.fine.ks.size, rows, p_other,
                                    strata.stratum_of_row, output_of_stratum, strata.weight) \
                if fine is not None and chart.fine is not None else np.zeros(0)
        intervals = {c: filtered[c].interval for c in others}
        factors = histogram_pass.bin_factors(
            base, name, self.synopsis, self.strata, chart.bars.intervals, chart.bars.held, sums[:, np.newaxis],
            intervals, {c: filtered[c].candidate_count(kernels) for c in others}, chart.candidate_counts(kernels),
            output_of_stratum, chart.margins,
            {c: filtered[c].margins() for c in others if c in self.synopsis.grids})
        bars = factors * sums
        bars[np.isnan(bars)] = 0.0  # as the query's answer, which lists no such bin
        if any(filtered[c].empty for c in others):
            curve[:] = 0.0
        return {"values": bars, "form": "sample", "masses": curve if chart.fine is not None else None,
                "curve_labels": chart.curve_labels}

    def _groups(self, name: str, numeric: dict, members: dict, brush: Brush) -> dict:
        template = self.groups[name]
        query = self.resolve(replace(template, ranges={c: Range(c, lo, hi) for c, (lo, hi) in numeric.items()},
                                     members={c: v for c, v in members.items() if c != name}))
        filtered = brush.filtered
        keys, output_of_stratum = self.output_groups(query)
        ranged = [c for c in query.ranges if c in self.synopsis.models]
        labels = self.layout.groups[name].values
        if not ranged:
            values = answers._exact_totals(query, self.strata, output_of_stratum, len(keys))[query.aggregates[0].name]
            return {"values": _per_group(keys, values, labels), "form": "totals", "masses": None}
        if self.synopsis.cube is not None and self.synopsis.categories is not None:  # as the query path: an
            # exact aggregate table answers ranges on categorical columns exactly (parzen.aqp.cube_answers)
            exact = cube_answers.answer(query, self.synopsis.cube, self.synopsis.categories, False)
            if exact is not None:
                found = dict(zip(exact.iloc[:, 0], exact.iloc[:, 1].to_numpy(dtype=np.float64)))
                return {"values": np.array([found.get(v, 0.0) for v in labels]), "form": cube_answers.FORM,
                        "masses": None}
        kernels = WHOLE if answers.whole_table(query, output_of_stratum) else SCALED
        if any(filtered[c].empty for c in ranged):
            return {"values": np.zeros(len(labels)), "form": "sample", "masses": None}
        counts = {c: filtered[c].candidate_count(kernels) for c in ranged}
        order = sorted(ranged, key=counts.__getitem__)  # as calibrated_values orders them
        strata = self.strata

        def sums(columns: tuple[str, ...]) -> np.ndarray:
            return _group_sums(*brush.product(columns, kernels), strata.stratum_of_row, output_of_stratum,
                               strata.weight, len(keys))

        out = sums(tuple(order))
        boxes = {c: filtered[c].interval for c in ranged}
        factor = answers.calibration_factor(query, self.synopsis, strata, boxes, order, out[:, np.newaxis],
                                            output_of_stratum, lambda: sums(tuple(order[:1])))
        return {"values": _per_group(keys, factor * out, labels), "form": "sample", "masses": None}


def _widest(strata: Strata, kernels: str) -> float:
    """The largest bandwidth factor of a set of kernels (1 for the synopsis's own)."""
    return 1.0 if kernels == WHOLE or strata.row_scale is None else float(strata.row_scale.max(initial=1.0))


def _bins_of(query, synopsis: Synopsis) -> Bins:
    ks = histogram.bins(query, synopsis)
    model = synopsis.models[query.column]
    intervals = np.array([model.interval(box) for box in histogram.bin_ranges(query, ks)],
                         dtype=np.float64).reshape(-1, 2)
    return Bins(ks, query.width, intervals, intervals[:, 1] >= intervals[:, 0])


def _per_bin(frame: np.ndarray, query, bins: Bins) -> np.ndarray:
    """A histogram answer's counts ([label, count] rows) as one value per bin (0 for a bin it leaves out)."""
    values = np.zeros(bins.ks.size)
    k = np.round(frame[:, 0] / query.width).astype(np.intp) - int(bins.ks[0]) if frame.size else np.zeros(0, np.intp)
    values[k] = frame[:, 1]
    return values


def _per_group(keys: list[tuple], values, labels: tuple) -> np.ndarray:
    """Per label of the chart, its group's value (0 for a group the answer leaves out)."""
    position = {key[0]: g for g, key in enumerate(keys)}
    values = np.asarray(values, dtype=np.float64)
    return np.array([values[position[v]] if v in position else 0.0 for v in labels])


@njit(cache=True, nogil=True)
def _row_masses(x, scale, h, a, b, lower, reflect, reach):
    """P_c,i = :func:`row_box` of every row (bandwidth h times its scale), in the rows' order (the
    column read forwards, which beats visiting only the rows near the box in the order of value)."""
    out = np.empty(x.size)
    for i in range(x.size):
        out[i] = row_box(x[i], a, b, h * scale[i], lower, reflect, reach, False)[0]
    return out


@njit(cache=True, nogil=True)
def _reached_bins(x, r, lows, highs, lower, reflect):
    """Bins first .. last - 1 hold every bin that a kernel at x reaching r (and its mirror image at
    2 lower - x) can give mass: [a_k - r, b_k + r] around x (ascending, disjoint bins)."""
    first = np.searchsorted(highs, x - r)
    last = np.searchsorted(lows, x + r, side="right")
    if reflect:
        mirror = 2.0 * lower - x
        first = min(first, np.searchsorted(highs, mirror - r))
        last = max(last, np.searchsorted(lows, mirror + r, side="right"))
    return first, last


@njit(cache=True, nogil=True)
def _bin_table(x, scale, h, lows, highs, held, lower, reflect, reach):
    """:class:`BinTable`'s arrays: per row, :func:`row_box` in each bin it reaches, the non-zero ones."""
    n = x.size
    room = 0
    for i in range(n):
        if not math.isnan(x[i]):
            first, last = _reached_bins(x[i], reach * h * scale[i], lows, highs, lower, reflect)
            room += max(last - first, 0)
    starts = np.zeros(n + 1, dtype=np.int64)
    bins = np.empty(room, dtype=np.int32)
    masses = np.empty(room)
    e = 0
    for i in range(n):
        if not math.isnan(x[i]):
            hi = h * scale[i]
            first, last = _reached_bins(x[i], reach * hi, lows, highs, lower, reflect)
            for k in range(first, last):
                if held[k]:
                    m = row_box(x[i], lows[k], highs[k], hi, lower, reflect, reach, False)[0]
                    if m != 0.0:
                        bins[e] = k
                        masses[e] = m
                        e += 1
        starts[i + 1] = e
    return starts, bins[:e].copy(), masses[:e].copy()


@njit(cache=True, nogil=True)
def _histogram_sums(starts, bins, masses, n_bins, rows, p_other, stratum_of_row, output_of_stratum, weight_of_stratum):
    """Per bin: sum_i w_i (P_x,i(B_k) p_i) over ``rows`` (ascending) of an answered stratum,
    p_i = ``p_other[i]`` (as :func:`parzen.aqp.histogram_pass._binned_sums` adds them)."""
    out = np.zeros(n_bins)
    for t in range(rows.size):
        i = rows[t]
        stratum = stratum_of_row[i]
        if output_of_stratum[stratum] < 0:
            continue
        p = p_other[i]
        w = weight_of_stratum[stratum]
        for e in range(starts[i], starts[i + 1]):
            out[bins[e]] += w * (masses[e] * p)
    return out


@njit(cache=True, nogil=True)
def _single_bin_sums(bin_of_row, n_bins, rows, p_other, stratum_of_row, output_of_stratum, weight_of_stratum):
    """:func:`_histogram_sums` of a :class:`BinTable` with one bin of mass 1 per row (1 p_i = p_i)."""
    out = np.zeros(n_bins)
    for t in range(rows.size):
        i = rows[t]
        k = bin_of_row[i]
        if k < 0:
            continue
        stratum = stratum_of_row[i]
        if output_of_stratum[stratum] >= 0:
            out[k] += weight_of_stratum[stratum] * p_other[i]
    return out


@njit(cache=True, nogil=True)
def _group_sums(rows, p, stratum_of_row, output_of_stratum, weight_of_stratum, groups):
    """Per answer row g: sum_i w_i p_i over ``rows`` (ascending) of its strata (as
    :func:`parzen.aqp._box.box_sums` adds them)."""
    out = np.zeros(groups)
    for t in range(rows.size):
        i = rows[t]
        stratum = stratum_of_row[i]
        g = output_of_stratum[stratum]
        if g >= 0:
            out[g] += weight_of_stratum[stratum] * p[i]
    return out


@njit(cache=True, nogil=True)
def _nonzero_rows(p):
    """The rows i (ascending) with p[i] != 0."""
    count = 0
    for i in range(p.size):
        count += p[i] != 0.0
    rows = np.empty(count, dtype=np.intp)
    t = 0
    for i in range(p.size):
        if p[i] != 0.0:
            rows[t] = i
            t += 1
    return rows
