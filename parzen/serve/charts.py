"""The charts of a table's page and the SQL a brush sends for each: crossfiltering over a synopsis.

One histogram per modelled numeric column (``SELECT FLOOR(x / w) * w AS bin, COUNT(*) ... GROUP BY
bin``, :mod:`parzen.aqp.histogram`) and one bar chart per group column (``SELECT g, COUNT(*) ...
GROUP BY g``).  A brush is a set of filters, a range [lo, hi] on a numeric column or a set of values
of a group column; each chart is answered under every filter but its own (crossfilter's rule: a
chart shows the rows that the other brushes select, so its own brush can still be moved).

Bins are fixed per column when the page is laid out (from the column's minimum and maximum kept in
the synopsis), so that the bars of every answer line up: w = (max - min) / :data:`BINS` rounded up
to an integer for integer-valued columns (each bin then holds whole values), else to 3 significant
digits.  A smoothed column's density curve is the synopsis's kernel density under the other brushes,
integrated over bins of a finer width w / m (m = 4 for continuous columns, the largest of 4, 3, 2
dividing w for integer ones, so every fine bin holds as many integers) and scaled by m to the bars'
units, rows per bar width (:func:`parzen.aqp.histogram.density`; not calibrated, unlike the bars).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..aqp.build import quote
from ..aqp.synopsis import Synopsis


class BadFilter(ValueError):
    """A brush's filter that names no chart or has the wrong shape."""


#: Bins per histogram, about (the width is rounded: see the module docstring).
BINS = 50


@dataclass(frozen=True)
class Histogram:
    """A numeric column's chart: bins [first + k w, first + (k + 1) w), k = 0 .. count - 1.

    Parameters
    ----------
    column : str
        The column.
    kind : str
        Its model's kind ("continuous", "integer", "discrete").
    width : float
        The bin width w.
    first : int
        The first bin's index FLOOR(min / w).
    count : int
        Bins from the column's minimum to its maximum.
    curve_factor : int
        m: the density curve's bins are w / m wide (0: no curve, the column is not smoothed).
    """

    column: str
    kind: str
    width: float
    first: int
    count: int
    curve_factor: int

    def labels(self) -> list[float]:
        """The bins' lower edges k w."""
        return [(self.first + k) * self.width for k in range(self.count)]

    def as_json(self) -> dict:
        """The chart's description for the page."""
        return {"column": self.column, "type": "histogram", "kind": self.kind, "width": self.width,
                "labels": self.labels(), "curve": self.curve_factor > 0}


@dataclass(frozen=True)
class GroupChart:
    """A group column's bar chart: one bar per value the synopsis keeps groups for.

    Parameters
    ----------
    column : str
        The group column.
    values : tuple
        Its values that the synopsis keeps groups for, sorted (NULL left out: a brush selects values).
    """

    column: str
    values: tuple

    def as_json(self) -> dict:
        """The chart's description for the page."""
        return {"column": self.column, "type": "groups", "labels": list(self.values)}


@dataclass(frozen=True)
class Layout:
    """The charts of one table's page.

    Parameters
    ----------
    table : str
        The table (as its synopsis names it).
    histograms : dict of str to Histogram
        Per numeric column.
    groups : dict of str to GroupChart
        Per group column.
    """

    table: str
    histograms: dict[str, Histogram]
    groups: dict[str, GroupChart]

    @classmethod
    def of(cls, synopsis: Synopsis) -> Layout:
        """The charts of ``synopsis``'s table: a histogram per modelled column whose minimum and maximum
        differ, a bar chart per group column.

        Parameters
        ----------
        synopsis : Synopsis

        Returns
        -------
        Layout
        """
        histograms = {}
        for name, model in synopsis.models.items():
            if model.minimum is None or model.maximum is None or not model.maximum > model.minimum \
                    or name in synopsis.temporal:  # DATE / TIMESTAMP columns (as days) get no numeric histogram
                continue
            width = _width(model.maximum - model.minimum, model.integer)
            first = math.floor(model.minimum / width)
            count = math.floor(model.maximum / width) - first + 1
            smoothed = model.bandwidth > 0
            factor = (next(m for m in (4, 3, 2, 1) if width % m == 0) if model.integer else 4) if smoothed else 0
            histograms[name] = Histogram(name, model.kind, width, first, count, factor)
        groups = {}
        for position, column in enumerate(synopsis.group_by):
            values = {g.key[position] for g in synopsis.groups}
            ordered = sorted((v for v in values if v is not None), key=lambda v: (isinstance(v, str), v))
            groups[column] = GroupChart(column, tuple(ordered))
        return cls(synopsis.table, histograms, groups)

    def as_json(self) -> list[dict]:
        """Every chart's description, histograms first."""
        return [h.as_json() for h in self.histograms.values()] + [g.as_json() for g in self.groups.values()]

    def where(self, filters: dict, leave_out: str | None = None) -> str:
        """The WHERE clause (with its keyword; "" for none) of ``filters`` without ``leave_out``'s.

        Parameters
        ----------
        filters : dict
            Checked filters (:meth:`checked_filters`).
        leave_out : str, optional
            The chart whose own filter is left out.

        Returns
        -------
        str
        """
        predicates = []
        for column, value in filters.items():
            if column == leave_out:
                continue
            if column in self.histograms:
                low, high = value
                predicates.append(f"{quote(column)} BETWEEN {low!r} AND {high!r}")
            else:
                predicates.append(_members(column, value))
        return f" WHERE {' AND '.join(predicates)}" if predicates else ""

    def histogram_sql(self, column: str, filters: dict, *, curve: bool = False) -> str:
        """The histogram query of ``column``'s chart (its density curve's, finer, if ``curve``).

        Parameters
        ----------
        column : str
        filters : dict
            Checked filters.
        curve : bool
            The finer bins of the density curve.

        Returns
        -------
        str
        """
        chart = self.histograms[column]
        width = chart.width / chart.curve_factor if curve else chart.width
        return (f"SELECT FLOOR({quote(column)} / {width!r}) * {width!r} AS bin, COUNT(*) AS n "
                f"FROM {quote(self.table)}{self.where(filters, column)} GROUP BY bin")

    def groups_sql(self, column: str, filters: dict) -> str:
        """The bar chart query of group column ``column``.

        Parameters
        ----------
        column : str
        filters : dict
            Checked filters.

        Returns
        -------
        str
        """
        return (f"SELECT {quote(column)}, COUNT(*) AS n FROM {quote(self.table)}"
                f"{self.where(filters, column)} GROUP BY {quote(column)}")

    def checked_filters(self, filters) -> dict:
        """``filters`` from a request, checked: {numeric column: [lo, hi]} with finite lo <= hi, or
        {group column: [values]} of values the synopsis keeps groups for.

        Parameters
        ----------
        filters : object
            The request's "filters".

        Returns
        -------
        dict
            Column -> (lo, hi) or tuple of values.

        Raises
        ------
        ValueError
            Naming the filter that is wrong and what it takes.
        """
        if filters is None:
            return {}
        if not isinstance(filters, dict):
            raise BadFilter('"filters" takes an object {column: [lo, hi] or [values]}')
        checked: dict = {}
        for column, value in filters.items():
            if column in self.histograms:
                if not (isinstance(value, list) and len(value) == 2
                        and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)):
                    raise ValueError(f"the filter on {column!r} takes [lo, hi] (two numbers), got {value!r}")
                low, high = float(value[0]), float(value[1])
                if not (math.isfinite(low) and math.isfinite(high) and low <= high):
                    raise ValueError(f"the filter on {column!r} needs finite lo <= hi, got {value!r}")
                checked[column] = (low, high)
            elif column in self.groups:
                known = self.groups[column].values
                if not isinstance(value, list) or not value or any(v not in known for v in value):
                    raise ValueError(f"the filter on {column!r} takes a non-empty list of its values "
                                     f"({', '.join(map(str, known))}), got {value!r}")
                checked[column] = tuple(value)
            else:
                raise ValueError(f"no chart {column!r} to filter on; charts: "
                                 f"{', '.join(list(self.histograms) + list(self.groups))}")
        return checked


def _members(column: str, values: tuple) -> str:
    """``column IN (...)``, the values quoted as SQL literals."""
    return f"{quote(column)} IN ({', '.join(_literal(v) for v in values)})"


def _literal(value) -> str:
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return repr(float(value)) if isinstance(value, float) else str(int(value))


def _width(span: float, integer: bool) -> float:
    """The bin width of about :data:`BINS` bins over ``span``: rounded up to an integer for
    integer-valued columns, to 3 significant digits otherwise."""
    raw = span / BINS
    if integer:
        return float(max(1, math.ceil(raw)))
    digits = 2 - math.floor(math.log10(raw))
    return math.ceil(raw * 10**digits) / 10**digits
