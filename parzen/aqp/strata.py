"""The synopsis's sample as strata, and which answer row each stratum feeds.

A grouped synopsis holds a stratified sample (one stratum per group); an ungrouped one is a single
stratum.  :class:`Layout` keeps what every query on a synopsis reads (weights, bandwidth factors,
sorted orders, the sample as one array); :func:`output_groups` maps a query's GROUP BY and group
filters onto the strata.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .estimate import SampleView
from .sql import AggregateQuery
from .synopsis import Synopsis


@dataclass(frozen=True)
class Layout:
    """The synopsis's sample as strata: one per group (or one for an ungrouped synopsis).

    Stratum g has ``rows[g]`` rows in the table and ``drawn[g]`` in the sample; every sampled row
    weighs rows/drawn of its stratum, and its kernels are widened by ``scale[g]`` =
    (n / n_g)^(1/5) (bandwidths were chosen for the whole sample of n rows).
    """

    keys: list[tuple]
    rows: np.ndarray
    drawn: np.ndarray
    totals: list[dict]
    stratum_of_row: np.ndarray
    row_scale: np.ndarray | None
    view: SampleView
    data: np.ndarray  # the sample as one (columns x rows) array, for the box integrals (_box.py)
    position: dict[str, int]  # column -> its row in ``data``
    scale_of_row: np.ndarray  # ``row_scale``, or ones
    weight: np.ndarray  # rows / drawn per stratum
    whole: np.ndarray  # zero per stratum: every stratum in answer row 0 (do not modify)

    @functools.cached_property
    def kept_terms(self) -> dict:
        """Per-row terms that answers keep between queries on this sample, newest last
        (:mod:`parzen.aqp._kept`): they go with the layout (a reloaded synopsis has a new one)."""
        return {}

    @functools.cached_property
    def effective_rows(self) -> float:
        """Kish's effective sample size of the whole sample (Kish 1965, Survey Sampling),
        (sum_i w_i)^2 / sum_i w_i^2 = N^2 / sum_g rows_g^2 / drawn_g: the drawn rows when every
        row weighs alike, fewer when small groups were drawn more densely."""
        drawn = np.maximum(self.drawn, 1.0)
        return float(self.rows.sum() ** 2 / (self.rows * self.rows / drawn).sum())

    @classmethod
    def of(cls, synopsis: Synopsis) -> Layout:
        """The strata of ``synopsis``'s sample, its sorted orders and its (columns x rows) array.

        Parameters
        ----------
        synopsis : Synopsis
            A loaded synopsis.

        Returns
        -------
        Layout
            Kept by the :class:`~parzen.aqp.Engine` for every query on the synopsis.
        """
        stratum_of_row, weight_of_row, row_scale = synopsis.strata()
        view = SampleView(synopsis.sample, weights=weight_of_row, sort_now=True)
        names = list(synopsis.sample)
        data = np.ascontiguousarray(np.stack([synopsis.sample[c] for c in names]).astype(np.float64, copy=False)) \
            if names else np.zeros((0, 0))
        position = {c: k for k, c in enumerate(names)}
        if not synopsis.groups:
            rows, drawn = np.array([float(synopsis.row_count)]), np.array([float(synopsis.sample_size)])
            return cls([()], rows, drawn, [synopsis.totals], stratum_of_row, None, view, data, position,
                       np.ones(synopsis.sample_size), rows / np.maximum(drawn, 1.0), np.zeros(1, dtype=np.intp))
        drawn = np.array([g.stop - g.start for g in synopsis.groups], dtype=np.float64)
        rows = np.array([float(g.rows) for g in synopsis.groups])
        return cls([g.key for g in synopsis.groups], rows, drawn, [g.totals for g in synopsis.groups],
                   stratum_of_row, row_scale, view, data, position, np.ascontiguousarray(row_scale, dtype=np.float64),
                   rows / np.maximum(drawn, 1.0), np.zeros(len(synopsis.groups), dtype=np.intp))


def output_groups(query: AggregateQuery, synopsis: Synopsis, layout: Layout) -> tuple[list[tuple], np.ndarray]:
    """The answer's group keys, and for each stratum the index of its answer row.

    Parameters
    ----------
    query : AggregateQuery
        The query (its GROUP BY, IN / = filters and ranges on group columns choose the rows).
    synopsis : Synopsis
        The synopsis it is answered from.
    layout : Layout
        The synopsis's strata (:meth:`Layout.of`).

    Returns
    -------
    keys : list of tuple
        One key per answer row (``[()]`` without GROUP BY).
    output_of_stratum : numpy.ndarray
        Per stratum, the index of its answer row in ``keys``, or -1 when the query filters it out.
    """
    if not query.group_by and not query.members and not any(c in synopsis.group_by for c in query.ranges):
        return [()], layout.whole  # the whole table: every stratum in the one answer row
    positions = [synopsis.group_by.index(g) for g in query.group_by]
    index: dict[tuple, int] = {}
    output = np.full(len(layout.keys), -1, dtype=np.intp)
    tests = {c: _member_test(query.members[c]) for c in synopsis.group_by if c in query.members}
    for sid, key in enumerate(layout.keys):
        if not synopsis.groups or _key_matches(key, synopsis.group_by, query, tests):
            output[sid] = index.setdefault(tuple(key[p] for p in positions), len(index))
    if not index and not query.group_by:  # no group passes the filters: one row of zeros, as in SQL
        index[()] = 0
    return list(index), output


def _key_matches(key: tuple, group_by: tuple, query: AggregateQuery, tests: dict) -> bool:
    for column, value in zip(group_by, key):
        if column in tests and not tests[column](value):
            return False
        if column in query.ranges and (
            value is None or isinstance(value, str) or not query.ranges[column].contains(float(value))
        ):
            return False
    return True


def _member_test(literals) -> Callable[[Any], bool]:
    """Whether a stored value is :func:`_same` as one of ``literals``, by set look-ups where the
    literals are all text or all numbers (one test per stratum instead of one per stratum and literal:
    a filter on the stratum column lists every admitted stratum, :mod:`parzen.aqp.stratum_filters`),
    else literal by literal."""
    literals = list(literals)
    if all(isinstance(v, str) for v in literals):
        texts = set(literals)
        return lambda stored: str(stored) in texts
    if all(type(v) in (int, float, bool) for v in literals):
        numbers = {n for n in map(float, literals) if not math.isnan(n)}  # NaN equals nothing
        as_text = {str(v) for v in literals}
        return lambda stored: stored in as_text if isinstance(stored, str) else \
            stored is not None and float(stored) in numbers
    return lambda stored: any(_same(stored, v) for v in literals)


def _same(stored, literal) -> bool:
    if isinstance(literal, str) or isinstance(stored, str):
        return str(stored) == str(literal)
    return stored is not None and float(stored) == float(literal)
