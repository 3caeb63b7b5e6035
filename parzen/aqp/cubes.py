"""Exact aggregate tables of a synopsis (views of the data cube) and their build.

Per chosen set of categorical columns and numeric dimensions (dates, integers and decimals of few
values held at full resolution, :mod:`parzen.aqp.cube_dimensions`; :mod:`parzen.aqp.cube_lattice`
chooses the sets, skipping constant columns, or the build's ``cube=`` lists them), every row of the table (or of a join synopsis's view, :mod:`parzen.aqp.joins`)
is grouped by those columns, and per existing combination (a *cell*) the table keeps its rows and
the SUM of each measure (the synopsis's modelled numeric columns other than dates), and COUNT of a
measure that has NULLs: what COUNT, SUM and AVG (and sums of products of a measure with categorical
columns) under categorical filters need (Gray et al., "Data cube", 1997; with a sample beside them
as in AQP++, Peng, Zhang, Wang and Pei, SIGMOD 2018).  All tables come from one GROUPING SETS pass.
:mod:`parzen.aqp.cube_answers` answers queries from them exactly.

A listed table may keep only some measures (``cube=[{"columns": [...], "measures": [...]}]``,
:func:`listed_view`): it answers only queries that sum no other, and is rolled up only from a table
that keeps them too.

Bytes: per cell 2 (4 for a column of more than 32 766 values) per column, 8 for its rows, 8 per
measure it keeps and 8 per kept measure with NULLs (:func:`cell_bytes`); besides, 8 per value of a numeric dimension and 4
per value of a dependency's map, paid out of the budget before the greedy choice.
The default budget is the bytes of the synopsis's sample (:func:`default_budget`): the tables at most
double the synopsis.
Queries run here are generated from quoted identifiers read from the catalog, never user text.
"""

from __future__ import annotations

import datetime
import decimal
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from . import cube_dimensions, cube_lattice
from .categories import plain_value
from .cube_dimensions import NumericDimension, read_as_numbers

#: The types of values that pandas keeps as objects in a DataFrame of a dict of object arrays.
_KEPT_AS_OBJECTS = (int, float, bool, decimal.Decimal, datetime.date)


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


@dataclass
class CubeTable:
    """One exact aggregate table: per cell, its columns' codes, its rows and its measures' sums.

    ``codes[i, k]`` is the code (index into :attr:`parzen.aqp.categories.Categories.values`) of
    ``columns[k]`` in cell i; ``rows[i]`` its rows; ``sums[i, j]`` the SUM of ``measures[j]`` over them
    (NaN: every value NULL); ``counts[i, j]`` the non-NULL values of ``nullable[j]``.  ``measures``: the
    measures the table keeps, in the synopsis's order (every one, or those listed with it,
    :func:`listed_view`); ``nullable``: those of them with NULLs."""

    columns: tuple[str, ...]
    codes: np.ndarray  # (cells, columns) int16 / int32
    rows: np.ndarray  # (cells,) int64
    sums: np.ndarray  # (cells, measures) float64
    counts: np.ndarray  # (cells, nullable) int64
    measures: tuple[str, ...]
    nullable: tuple[str, ...]
    _kept: frozenset = field(init=False, repr=False, compare=False)  # ``measures`` as a set: a query's test is a subset

    def __post_init__(self) -> None:
        self._kept = frozenset(self.measures)

    @property
    def nbytes(self) -> int:
        return self.codes.nbytes + self.rows.nbytes + self.sums.nbytes + self.counts.nbytes

    def holds(self, measures: frozenset) -> bool:
        """Whether the table keeps every measure of ``measures``."""
        return measures <= self._kept

    def with_measures(self, measures: Sequence[str]) -> CubeTable:
        """The table keeping only ``measures`` (of its own, in its order): their sums and counts."""
        measures = tuple(measures)
        if measures == self.measures:
            return self
        nullable = tuple(m for m in self.nullable if m in measures)
        return CubeTable(self.columns, self.codes, self.rows, self.sums[:, [self.measures.index(m) for m in measures]],
                         self.counts[:, [self.nullable.index(m) for m in nullable]], measures, nullable)


@dataclass
class Cube:
    """A synopsis's exact aggregate tables.

    Parameters
    ----------
    measures : list of str
        The summed columns (the synopsis's measures); each table keeps all or some of them, in this
        order (:attr:`CubeTable.measures`).
    nullable : list of str
        The measures with NULLs, in the order of ``measures``.
    tables : list of CubeTable
        The tables.
    dependencies : dict of (str, str) to numpy.ndarray
        Per exact functional dependency a -> b, per code of a the code of b: a table holding a
        answers for b too (:mod:`parzen.aqp.cube_lattice`).
    dimensions : dict of str to NumericDimension
        The numeric columns the tables may group by besides the categorical ones, each at full
        resolution (:mod:`parzen.aqp.cube_dimensions`): their codes index their values.
    """

    measures: list[str]
    nullable: list[str]
    tables: list[CubeTable] = field(default_factory=list)
    dependencies: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)
    dimensions: dict[str, NumericDimension] = field(default_factory=dict)
    seconds: float = 0.0  # the build's time for the dependencies and the tables (not stored: a build is reproducible)
    _decoders: dict[str, np.ndarray] = field(default_factory=dict, repr=False, compare=False)
    _strings: dict[str, tuple | None] = field(default_factory=dict, repr=False, compare=False)
    _numbers: dict[str, np.ndarray] = field(default_factory=dict, repr=False, compare=False)
    _objects: dict[str, bool] = field(default_factory=dict, repr=False, compare=False)
    _per_cell: dict[tuple[int, str], np.ndarray] = field(default_factory=dict, repr=False, compare=False)
    _values: tuple[dict[str, list], dict[str, list]] | None = field(default=None, repr=False, compare=False)
    _columns: dict[tuple[int, str], np.ndarray] = field(default_factory=dict, repr=False, compare=False)
    _indexes: dict[tuple[int, str], tuple[np.ndarray, np.ndarray]] = field(default_factory=dict, repr=False,
                                                                          compare=False)
    _labels: dict[tuple[str, ...], pd.Index] = field(default_factory=dict, repr=False, compare=False)
    _texts: dict[tuple[str, bytes], pd.api.extensions.ExtensionArray] = field(default_factory=dict, repr=False,
                                                                              compare=False)
    _sizes: dict[tuple[int, str], np.ndarray] = field(default_factory=dict, repr=False, compare=False)

    def column(self, table: CubeTable, column: str) -> np.ndarray:
        """``table``'s codes of ``column`` as one contiguous array, made once."""
        key = (id(table), column)
        found = self._columns.get(key)
        if found is None:
            found = self._columns[key] = np.ascontiguousarray(table.codes[:, table.columns.index(column)])
        return found

    def values_with(self, categorical: dict[str, list]) -> dict[str, list]:
        """Per column the tables may hold, its values in the order of its codes: ``categorical`` (the
        synopsis's categorical columns') and the numeric dimensions' (:meth:`NumericDimension.as_list`),
        made once per ``categorical``."""
        if self._values is None or self._values[0] is not categorical:
            self._values = (categorical, {**categorical, **{c: d.as_list() for c, d in self.dimensions.items()}})
        return self._values[1]

    def warm(self, values: dict[str, list]) -> None:
        """Make every table's column arrays and indexes now (when the synopsis is loaded), not in a query;
        ``values``: the categorical columns' (:meth:`values_with` adds the numeric dimensions')."""
        values = self.values_with(values)
        for table in self.tables:
            for column in table.columns:
                self.index(table, column, len(values[column]))
                self.cells_per_code(table, column, len(values[column]))
                self.decoder(column, values[column])
                self.strings(column, values[column])
                self.stays_object(column, values[column])
                self.numbers(column, values[column])
            self.rows_per_cell(table)
            table.sums = np.asfortranarray(table.sums)  # each measure's sums contiguous: read as views, no copies
            for j, measure in enumerate(table.measures):
                self.per_cell(table, f"sum {measure}", lambda t=table, j=j: np.ascontiguousarray(t.sums[:, j]))

    def index(self, table: CubeTable, column: str, size: int) -> tuple[np.ndarray, np.ndarray]:
        """``table``'s cells by their code of ``column`` (of ``size`` values): ``order[starts[k]:starts[k + 1]]``
        are the cells of code k (made once, a stable sort; the runs' starts are the counts of the codes below k,
        6-10x faster than searching the sorted codes, which took 0.31 of the 0.65 s of SSB SF10's indexes)."""
        key = (id(table), column)
        found = self._indexes.get(key)
        if found is None:
            codes = self.column(table, column)
            order = np.argsort(codes, kind="stable")
            starts = np.zeros(size + 1, dtype=np.intp)
            np.cumsum(np.bincount(codes, minlength=size), out=starts[1:])
            found = self._indexes[key] = (order, starts)
        return found

    def cells_per_code(self, table: CubeTable, column: str, size: int) -> np.ndarray:
        """How many cells of ``table`` hold each code of ``column`` (of ``size`` values): the lengths of
        :meth:`index`'s runs, made once."""
        key = (id(table), column)
        found = self._sizes.get(key)
        if found is None:
            found = self._sizes[key] = np.diff(self.index(table, column, size)[1])
        return found

    def decoder(self, column: str, values: list) -> np.ndarray:
        """``values`` (a categorical column's, in the order of its codes) as an object array, made once."""
        found = self._decoders.get(column)
        if found is None:
            found = self._decoders[column] = np.array(values + [None], dtype=object)[:-1]  # never a 2-D array of tuples
        return found

    def strings(self, column: str, values: list) -> tuple[pd.api.extensions.ExtensionArray, np.ndarray] | None:
        """``values`` (a categorical column's, in the order of its codes) as the array pandas makes of texts in a
        DataFrame (pandas 3: its ``str`` array, NULL as NaN; pandas 2: an object array, NULL as None, as DuckDB's
        answers hold them), and per code whether it is NULL, made once; None when a value is no text.
        ``pd.array(values, dtype="str")`` would be pandas 3's array, but on pandas 2 it makes NumPy texts and
        a NULL the text 'None'."""
        if column not in self._strings:
            texts = all(v is None or isinstance(v, str) for v in values)
            self._strings[column] = (pd.Series(values, dtype=object if not values else None).array,
                                     np.array([v is None for v in values], dtype=bool)) if texts else None
        return self._strings[column]

    def stays_object(self, column: str, values: list) -> bool:
        """Whether pandas keeps any selection of ``values`` (a categorical column's) in an object array as
        objects: every value is None, a number, a bool, a Decimal or a date (pandas infers a dtype only for
        text and date-times), made once."""
        found = self._objects.get(column)
        if found is None:
            found = self._objects[column] = all(v is None or type(v) in _KEPT_AS_OBJECTS for v in values)
        return found

    def per_cell(self, table: CubeTable, what: str, make) -> np.ndarray:
        """One value per cell of ``table``, ``make()``, made once and kept under ``what``: the cells' rows
        and each measure's sums as contiguous float64 arrays (made at load, :meth:`warm`, which stores the
        sums column by column so that these are views; a column of a row-major 2-D array read at some cells
        is 3x slower)."""
        key = (id(table), what)
        found = self._per_cell.get(key)
        if found is None:
            found = self._per_cell[key] = make()
        return found

    def rows_per_cell(self, table: CubeTable) -> np.ndarray:
        """Each cell's rows of ``table`` as float64 (:meth:`per_cell` ``"rows"``, made once)."""
        return self.per_cell(table, "rows", lambda: table.rows.astype(np.float64))

    def numbers(self, column: str, values: list) -> np.ndarray:
        """``values`` (a categorical column's, in the order of its codes) as floats, made once (NaN: NULL, or a
        value that is no number; the factors of sums, :mod:`parzen.aqp.cube_answers`)."""
        found = self._numbers.get(column)
        if found is None:
            found = self._numbers[column] = np.array(
                [float(v) if isinstance(v, (int, float)) and v is not None else np.nan for v in values], dtype=np.float64)
        return found

    @property
    def nbytes(self) -> int:
        return sum(t.nbytes for t in self.tables) + sum(m.nbytes for m in self.dependencies.values()) + \
            sum(d.nbytes for d in self.dimensions.values())

    def covering(self, columns, measures: frozenset = frozenset()) -> tuple[CubeTable, dict[str, str]] | None:
        """The table of fewest cells that holds or determines every column of ``columns`` and keeps every
        measure of ``measures``, with, per column it does not hold, the column of the table it is rolled
        up from (None: no table does)."""
        best = None
        for table in sorted(self.tables, key=lambda t: t.rows.size):
            if measures and not table.holds(measures):
                continue
            sources = {}
            for c in columns:
                if c in table.columns:
                    continue
                source = next((a for a in table.columns if (a, c) in self.dependencies), None)
                if source is None:
                    break
                sources[c] = source
            else:
                best = (table, sources)
                break
        return best

    def listed(self) -> list[list[str] | dict[str, list[str]]]:
        """The tables as ``cube=`` lists them (:func:`listed_view`): a table keeping every measure as its
        columns, any other as a dict of its columns and measures."""
        return [list(t.columns) if t.measures == tuple(self.measures) else
                {"columns": list(t.columns), "measures": list(t.measures)} for t in self.tables]

    # --- storage ------------------------------------------------------------------------------

    def meta(self) -> dict:
        meta = {"measures": self.measures, "nullable": self.nullable,
                "tables": [list(t.columns) for t in self.tables], "dependencies": [list(p) for p in self.dependencies],
                "dimensions": {c: d.meta() for c, d in self.dimensions.items()}}
        if any(t.measures != tuple(self.measures) for t in self.tables):  # absent: every table keeps every measure
            meta["table_measures"] = [list(t.measures) for t in self.tables]
        return meta

    def arrays(self) -> dict[str, np.ndarray]:
        out = {}
        for k, t in enumerate(self.tables):
            out.update({f"{k}/codes": t.codes, f"{k}/rows": t.rows, f"{k}/sums": t.sums, f"{k}/counts": t.counts})
        out.update({f"map/{k}": m for k, m in enumerate(self.dependencies.values())})
        out.update({f"dimension/{k}/{name}": a for k, d in enumerate(self.dimensions.values())
                    for name, a in d.arrays().items()})
        return out

    @classmethod
    def from_stored(cls, meta: dict, arrays: dict[str, np.ndarray]) -> Cube:
        nullable = list(meta["nullable"])
        kept = meta.get("table_measures") or [meta["measures"]] * len(meta["tables"])  # absent: every measure
        tables = [CubeTable(tuple(columns), arrays[f"{k}/codes"], arrays[f"{k}/rows"], arrays[f"{k}/sums"],
                            arrays[f"{k}/counts"], tuple(measures), tuple(m for m in measures if m in nullable))
                  for k, (columns, measures) in enumerate(zip(meta["tables"], kept))]
        dependencies = {(a, b): arrays[f"map/{k}"] for k, (a, b) in enumerate(meta["dependencies"])}
        dimensions = {c: NumericDimension.from_stored(d, {name: arrays[f"dimension/{k}/{name}"] for name in ("values", "highs")
                                                          if f"dimension/{k}/{name}" in arrays})
                      for k, (c, d) in enumerate(meta.get("dimensions", {}).items())}  # none before numeric dimensions
        return cls(list(meta["measures"]), nullable, tables, dependencies, dimensions)


def listed_view(entry) -> tuple[list[str], list[str] | None]:
    """A ``cube=`` entry's columns and the measures its table keeps (None: every measure): a list of
    columns, or a dict ``{"columns": [...], "measures": [...]}`` (checked by
    :func:`parzen.aqp.build.checked_views`)."""
    if isinstance(entry, Mapping):
        return list(entry["columns"]), (list(entry["measures"]) if "measures" in entry else None)
    return list(entry), None


def check_listed_measures(views: Sequence, measures: Sequence[str], grouped: Collection[str]) -> None:
    """Refuse a ``cube=`` entry (:func:`listed_view`) naming a measure that is none of ``measures`` (the
    synopsis's), saying whether it is a column the tables group by (``grouped``) or no measure at all.

    Raises
    ------
    ValueError
        Naming the entry's columns, the name and the synopsis's measures.
    """
    for entry in views:
        columns, kept = listed_view(entry)
        for name in kept or ():
            if name in measures:
                continue
            what = "a column the tables group by, not a measure" if name in grouped else "no measure of the synopsis"
            raise ValueError(f"cube: the table on {columns!r} lists {name!r} among its measures, which is {what}; "
                             f"the synopsis's measures (its modelled numeric columns other than dates) are: "
                             f"{', '.join(map(repr, measures)) or 'none'}")


def cell_bytes(columns: Sequence[str], values: dict[str, list], measures: int, nullable: int) -> int:
    """Bytes of one cell of a table over ``columns`` (module notes)."""
    return sum(2 if len(values[c]) < np.iinfo(np.int16).max else 4 for c in columns) + 8 + 8 * measures + 8 * nullable


def default_budget(sample: dict[str, np.ndarray], codes: dict[str, np.ndarray]) -> int:
    """The default byte budget of the tables: the bytes of the sample's values and categorical codes."""
    return int(sum(a.nbytes for a in sample.values()) + sum(a.nbytes for a in codes.values()))


def build_cube(con, table: str, values: dict[str, list], codes: dict[str, np.ndarray], *, measures: list[str],
               totals: dict[str, tuple[int, float]], rows: int, budget: int,
               sources: dict[str, str], views: Sequence[Sequence[str] | Mapping[str, Sequence[str]]] | None = None,
               dimensions: dict[str, NumericDimension] | None = None,
               comparisons: dict[str, NumericDimension] | None = None,
               workload: Sequence[tuple[str, ...]] | None = None,
               workload_measures: Sequence[frozenset] | None = None) -> Cube:
    """The exact aggregate tables of ``table`` within ``budget`` bytes.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        The connection.
    table : str
        The table, or a join synopsis's view.
    values : dict of str to list
        Per categorical column, its exact values in the order of its codes.
    codes : dict of str to numpy.ndarray
        Per categorical column, the sampled rows' codes (:func:`cube_lattice.sample_dependencies`).
    measures : list of str
        The numeric columns to sum.
    totals : dict of str to (int, float)
        Per measure, its exact COUNT and SUM (a COUNT below ``rows`` means NULLs: counted per cell).
    rows : int
        The table's rows.
    budget : int
        Bytes the tables may take (0: none).
    sources : dict of str to str
        Per categorical column, the database table it comes from (where its dependencies are checked);
        a column not named comes from ``table``.
    views : sequence of sequences of str or of dicts, optional
        The tables' column sets, instead of the greedy choice (the budget then does not apply); an entry
        ``{"columns": [...], "measures": [...]}`` keeps only those measures (:func:`listed_view`; a list
        of columns keeps every one).
    dimensions : dict of str to NumericDimension, optional
        Numeric columns the tables may group by too, at full resolution (:func:`parzen.aqp.cube_dimensions.find`).
    comparisons : dict of str to NumericDimension, optional
        Comparison dimensions the greedy choice may add with the budget it leaves
        (:func:`parzen.aqp.cube_comparisons.implied`): once the greedy has chosen, it goes on over the
        lattice with these columns too, from the tables chosen, within the bytes left (HRU's greedy
        resumed; the first choice is the same as without them).  Ignored when ``views`` are listed.
    workload : sequence of tuple of str, optional
        Per example query, the columns a table needs to answer it
        (:func:`parzen.aqp.cube_workload.needed_columns`): the tables are then chosen for these queries
        within the budget (:func:`parzen.aqp.cube_workload.select_for_workload`) instead of over the
        lattice.  Ignored when ``views`` are listed.
    workload_measures : sequence of frozenset of str, optional
        With ``workload``: per example query, the measures it sums; each table chosen keeps those of the
        queries it answers (:func:`parzen.aqp.cube_workload.kept_measures`) and the choice counts their
        bytes only (None: every table keeps every measure).

    Returns
    -------
    Cube
        Its :attr:`Cube.dimensions` are those of ``dimensions`` that a table holds.

    Raises
    ------
    ValueError
        A listed view names a column that is no categorical column of the synopsis nor a numeric dimension,
        or a measure that is none of ``measures``.
    """
    started = time.perf_counter()
    nullable = [m for m in measures if totals[m][0] < rows]
    cube = Cube(list(measures), nullable)
    categorical_cardinality = {c: len(v) for c, v in values.items()}
    cube.dependencies = _dependencies(con, table, values, codes, categorical_cardinality, sources)
    dimensions = dimensions or {}
    cube.dependencies.update(cube_dimensions.dependencies(dimensions))  # days -> months
    values = {**values, **{c: d.as_list() for c, d in dimensions.items()}}  # every column a table may hold
    cardinality = {c: len(v) for c, v in values.items()}

    def size(columns, kept=None) -> int:  # kept: the measures a table keeps (None: every one)
        if kept is None:
            return cell_bytes(columns, values, len(measures), len(nullable))
        return cell_bytes(columns, values, len(kept), sum(m in kept for m in nullable))

    kept: dict[frozenset, set[str] | None] = {}  # per listed set of columns, the measures listed with it (None: all)
    if views is not None:
        listed = [listed_view(v) for v in views]
        unknown = sorted({c for v, _ in listed for c in v if c not in values})
        if unknown:
            raise ValueError(f"cube: {', '.join(map(repr, unknown))} are no categorical columns of the synopsis "
                             f"nor numeric columns of few values (:mod:`parzen.aqp.cube_dimensions`; they are: "
                             f"{', '.join(values)})")
        check_listed_measures(views, measures, values)
        chosen = [tuple(v) for v, _ in listed if v]
        for v, listed_measures in listed:  # a set listed twice keeps the measures of both
            key = frozenset(v)
            if listed_measures is None or (key in kept and kept[key] is None):
                kept[key] = None
            else:
                kept[key] = (kept.get(key) or set()) | set(listed_measures)
    elif budget <= 0:
        cube.seconds = time.perf_counter() - started
        return cube
    else:  # the maps and the dimensions' values are paid first; constant columns group nothing
        left = budget - sum(m.nbytes for m in cube.dependencies.values()) - sum(d.nbytes for d in dimensions.values())
        among_categorical = [p for p in cube.dependencies if p[0] in categorical_cardinality and p[1] in categorical_cardinality]
        lattice = [c for c in cube_lattice.hierarchy_columns(list(categorical_cardinality), among_categorical,
                                                             categorical_cardinality) if cardinality[c] > 1]
        if workload is not None:  # cells counted in one pass (HyperLogLog), then HRU's greedy for the queries
            from . import cube_workload

            chosen = cube_workload.choose(con, table, workload, cardinality, cube.dependencies, rows, size, left,
                                          dimensions, workload_measures)
            if workload_measures is not None:
                determined = cube_workload.determinants(cardinality, cube.dependencies)
                needs = [cube_workload.reduced(n, determined) for n in workload]  # as the choice reads them
                kept.update({frozenset(v): set(cube_workload.kept_measures(v, needs, workload_measures, determined))
                             for v in chosen})
        else:
            chosen = cube_lattice.select_views([*lattice, *dimensions], cardinality, cube.dependencies, rows, size,
                                               left)
        if comparisons and workload is None:  # the bytes the greedy left, less the comparisons' values
            spent = sum(min(rows, _cells(v, cardinality)) * size(v) for v in chosen) + \
                sum(d.nbytes for d in comparisons.values())
            values = {**values, **{c: d.as_list() for c, d in comparisons.items()}}  # size() reads their values too
            chosen += _with_comparisons([*lattice, *dimensions], chosen, comparisons, cardinality, cube.dependencies,
                                        rows, size, left - spent)
            dimensions = {**dimensions, **comparisons}
    order = {c: k for k, c in enumerate(values)}
    chosen = list(dict.fromkeys(tuple(sorted(set(v), key=order.__getitem__)) for v in chosen))  # one per set
    cube.dimensions = {c: d for c, d in dimensions.items() if any(c in v for v in chosen)}
    cube.dependencies = {(a, b): m for (a, b), m in cube.dependencies.items()
                         if (a in cube.dimensions or a not in dimensions) and (b in cube.dimensions or b not in dimensions)}
    if chosen:  # the estimated cells bound the true ones: the tables fit the budget
        keeps = {v: tuple(m for m in measures if (named := kept.get(frozenset(v))) is None or m in named)
                 for v in chosen}
        cube.tables = _computed(con, table, chosen, keeps, values, measures, nullable, cube.dependencies,
                                cube.dimensions)
        if workload is not None and views is None:  # counted cells may be a few per cent more than their count
            from .cube_workload import within_budget

            cube.tables = within_budget(cube.tables, left)
    cube.seconds = time.perf_counter() - started
    return cube


def _cells(view: Sequence[str], cardinality: dict[str, int]) -> int:
    """The estimated cells of a view: the product of its columns' numbers of values (:mod:`parzen.aqp.cube_lattice`)."""
    return int(np.prod([cardinality[c] for c in view], dtype=np.float64))


def _with_comparisons(columns: list[str], chosen: list[tuple[str, ...]], comparisons: dict[str, NumericDimension],
                      cardinality: dict[str, int], dependencies, rows: int, size, left: int) -> list[tuple[str, ...]]:
    """The views HRU's greedy adds once ``comparisons`` join the lattice's ``columns``, from the ``chosen``
    views, within the ``left`` bytes (:func:`build_cube`); the lattice keeps its columns of fewest values
    as :func:`parzen.aqp.cube_lattice.select_views` does, the comparisons among them."""
    if left <= 0:
        return []
    cardinality = {**cardinality, **{c: d.size for c, d in comparisons.items()}}
    room = cube_lattice.MAX_LATTICE_COLUMNS - len(comparisons)
    kept = sorted(columns, key=lambda c: (cardinality[c], c))[:max(room, 0)]
    return cube_lattice.select_views([*kept, *comparisons], cardinality, dependencies, rows, size, left, prior=chosen)


def _dependencies(con, table, values, codes, cardinality, sources) -> dict[tuple[str, str], np.ndarray]:
    """The exact dependencies among the categorical columns and their maps (:mod:`parzen.aqp.cube_lattice`)."""
    from .categories import grouping_sets

    candidates = cube_lattice.sample_dependencies(codes, cardinality)
    by_source: dict[str, list[tuple[str, str]]] = {}
    for a, b in candidates:
        home = sources.get(a, table)
        if sources.get(b, table) == home:  # checked within the table both come from
            by_source.setdefault(home, []).append((a, b))
    found: dict[tuple[str, str], list] = {}
    for home, pairs in by_source.items():
        found.update(grouping_sets(con, home, sorted({c for p in pairs for c in p}), pairs))
    return cube_lattice.exact_dependencies(found, values)


def _computed(con, table: str, views: list[tuple[str, ...]], keeps: dict[tuple[str, ...], tuple[str, ...]],
              values: dict[str, list], measures: list[str], nullable: list[str],
              dependencies: dict[tuple[str, str], np.ndarray], dimensions: dict[str, NumericDimension]) -> list[CubeTable]:
    """The tables of ``views`` (``keeps``: per view, the measures it keeps, in the order of ``measures``,
    the synopsis's; ``nullable``: those with NULLs), in their order: those no other view covers (holds or
    determines its columns, and keeps its measures) from one GROUPING SETS pass over ``table`` summing
    every measure one of them keeps (:func:`_aggregate`; each keeps its own), each other one rolled up
    from the smallest of those that covers it (:func:`rolled_up`; "smallest parent", Agarwal et al.,
    VLDB 1996)."""
    def covers(parent: tuple[str, ...], view: tuple[str, ...]) -> bool:
        return all(m in keeps[parent] for m in keeps[view]) and \
            all(c in parent or any((a, c) in dependencies for a in parent) for c in view)

    def cells(view: tuple[str, ...]) -> float:
        return float(np.prod([len(values[c]) for c in view], dtype=np.float64))

    roots = [v for v in views if not any(p != v and covers(p, v) and not covers(v, p) for p in views)]
    summed = [m for m in measures if any(m in keeps[v] for v in roots)]
    aggregated = _aggregate(con, table, roots, values, summed, [m for m in summed if m in nullable], dimensions)
    computed = {v: t.with_measures(keeps[v]) for v, t in zip(roots, aggregated)}
    for view in sorted((v for v in views if v not in computed), key=cells, reverse=True):
        parent = min((p for p in computed if covers(p, view)), key=lambda p: computed[p].rows.size)
        computed[view] = rolled_up(computed[parent], view, values, dependencies, keeps[view])
    return [computed[v] for v in views]


def rolled_up(parent: CubeTable, view: tuple[str, ...], values: dict[str, list],
              dependencies: dict[tuple[str, str], np.ndarray], measures: Sequence[str] | None = None) -> CubeTable:
    """The table of ``view`` from a ``parent`` table that holds or determines its columns: the parent's
    cells grouped by their codes of ``view`` (a column the parent does not hold read through a
    dependency's map), their rows, sums and counts added (a sum is NULL when all its cells' are), of
    ``measures`` (some of the parent's, in its order; None: all of them).

    Parameters
    ----------
    parent : CubeTable
        A table covering ``view``.
    view : tuple of str
        The columns of the table to make.
    values : dict of str to list
        Per categorical column, its values (their number sets the codes' radix).
    dependencies : dict of (str, str) to numpy.ndarray
        The exact dependencies' maps.
    measures : sequence of str, optional
        The measures the table keeps (default: the parent's).

    Returns
    -------
    CubeTable
    """
    if measures is not None:
        parent = parent.with_measures(measures)
    key = np.zeros(parent.rows.size, dtype=np.int64)
    for c in view:
        if c in parent.columns:
            code = parent.codes[:, parent.columns.index(c)].astype(np.int64)
        else:
            a = next(a for a in parent.columns if (a, c) in dependencies)
            code = dependencies[(a, c)][parent.codes[:, parent.columns.index(a)]].astype(np.int64)
        key = key * len(values[c]) + code
    unique, cell = np.unique(key, return_inverse=True)
    cell = cell.reshape(-1)
    codes = np.empty((unique.size, len(view)), dtype=np.int64)
    for k in range(len(view) - 1, -1, -1):
        unique, codes[:, k] = np.divmod(unique, len(values[view[k]]))

    def added(columns: np.ndarray) -> np.ndarray:
        return np.stack([np.bincount(cell, weights=col, minlength=codes.shape[0]) for col in columns.T], axis=1) \
            if columns.shape[1] else np.zeros((codes.shape[0], 0), dtype=columns.dtype)

    sums = added(np.nan_to_num(parent.sums))
    sums[added((~np.isnan(parent.sums)).astype(np.float64)) == 0] = np.nan
    dtype = np.int16 if all(len(values[c]) < np.iinfo(np.int16).max for c in view) else np.int32
    rows = np.bincount(cell, weights=parent.rows.astype(np.float64), minlength=codes.shape[0])
    return CubeTable(view, codes.astype(dtype), np.rint(rows).astype(np.int64), sums,
                     np.rint(added(parent.counts.astype(np.float64))).astype(np.int64), parent.measures, parent.nullable)


def _grouping_sets(relation: str, views: list[tuple[str, ...]], values: dict[str, list],
                   dimensions: dict[str, NumericDimension], aggregates: list[str]) -> tuple[list[str], dict[str, int], str]:
    """The columns the ``views`` hold (in ``values``' order), their positions, and the one GROUP BY
    GROUPING SETS query over ``relation`` (numeric ``dimensions`` read as float64,
    :func:`parzen.aqp.cube_dimensions.read_as_numbers`) selecting those columns, their GROUPING mask
    (``parzen_set``), COUNT(*) and ``aggregates``: generated from quoted identifiers only."""
    columns = [c for c in values if any(c in v for v in views)]
    position = {c: k for k, c in enumerate(columns)}
    listed = ", ".join(_quote(c) for c in columns)
    grouping = ", ".join("(" + ", ".join(_quote(c) for c in v) + ")" for v in views)
    source = read_as_numbers(relation, {c: d for c, d in dimensions.items() if c in position})
    text = (f"SELECT {listed}, GROUPING({listed}) AS parzen_set, {', '.join(['COUNT(*)', *aggregates])} "
            f"FROM {source} GROUP BY GROUPING SETS ({grouping})")
    return columns, position, text


def _aggregate(con, table: str, views: list[tuple[str, ...]], values: dict[str, list], measures: list[str],
               nullable: list[str], dimensions: dict[str, NumericDimension]) -> list[CubeTable]:
    """The tables of ``views``: one GROUP BY GROUPING SETS pass over ``table`` (its numeric dimensions
    read as float64, as their values were: :func:`parzen.aqp.cube_dimensions.read_as_numbers`)."""
    columns, position, text = _grouping_sets(table, views, values, dimensions,
                                             [*(f"SUM({_quote(m)})" for m in measures),
                                              *(f"COUNT({_quote(m)})" for m in nullable)])
    result = con.execute(text).fetchall()
    width = len(columns)
    by_mask = {sum(1 << (width - 1 - position[c]) for c in columns if c not in v): k for k, v in enumerate(views)}
    cells: list[list] = [[] for _ in views]
    for row in result:
        cells[by_mask[int(row[width])]].append(row)
    code = {c: {v: k for k, v in enumerate(values[c])} for c in columns if c not in dimensions}
    tables = []
    for view, found in zip(views, cells):
        keys = np.empty((len(found), len(view)), dtype=np.int64)
        for k, c in enumerate(view):
            read = [row[position[c]] for row in found]
            keys[:, k] = dimensions[c].codes(read) if c in dimensions else [code[c][plain_value(v)] for v in read]
        order = np.lexsort(keys.T[::-1]) if len(found) else np.zeros(0, dtype=np.intp)  # code order: reproducible
        dtype = np.int16 if all(len(values[c]) < np.iinfo(np.int16).max for c in view) else np.int32
        m = len(measures)
        rows = np.array([row[width + 1] for row in found], dtype=np.int64)
        sums = np.array([[np.nan if v is None else float(v) for v in row[width + 2:width + 2 + m]] for row in found],
                        dtype=np.float64).reshape(len(found), m)
        counts = np.array([row[width + 2 + m:] for row in found], dtype=np.int64).reshape(len(found), len(nullable))
        tables.append(CubeTable(view, keys[order].astype(dtype), rows[order], sums[order], counts[order],
                                tuple(measures), tuple(nullable)))
    return tables


# --- refresh after appends (parzen.aqp.appends) -------------------------------------------------


@dataclass
class AppendedCells:
    """The appended rows' part of a synopsis's exact tables (:func:`appended_cells`).

    Parameters
    ----------
    tables : list of CubeTable
        Per table of the cube, in its order, the appended rows' cells: codes under the merged values,
        rows, sums of every measure some table of the cube keeps, and COUNT of each of them (each may
        have NULLs among them) (:func:`_appended_aggregate`).
    pairs : dict of (str, str) to list of ((value_a, value_b), rows)
        Per functional dependency a -> b among the cube's categorical columns, the appended rows'
        combinations of a and b.
    dimensions : dict of str to NumericDimension
        The cube's numeric dimensions with the appended rows' values
        (:func:`parzen.aqp.cube_dimensions.with_appended`): the codes of ``tables``.
    """

    tables: list[CubeTable]
    pairs: dict[tuple[str, str], list]
    dimensions: dict[str, NumericDimension] = field(default_factory=dict)


def appended_cells(con, relation: str, cube: Cube, values: dict[str, list],
                   dimensions: dict[str, NumericDimension] | None = None) -> AppendedCells:
    """The cells of the appended rows (``relation``: a view of them alone) for every table of ``cube``,
    coded under ``values`` and ``dimensions`` (the columns' merged values, old and new), and their
    combinations of each categorical dependency's pair: two GROUPING SETS passes over the appended rows only.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        The connection.
    relation : str
        A view of the appended rows (of a join synopsis: joined with their dimensions).
    cube : Cube
        The synopsis's exact tables.
    values : dict of str to list
        Per categorical column, its values after the append, in the order of the merged codes.
    dimensions : dict of str to NumericDimension, optional
        ``cube``'s numeric dimensions after the append (:func:`parzen.aqp.cube_dimensions.with_appended`;
        None: it has none).

    Returns
    -------
    AppendedCells
    """
    from .categories import grouping_sets

    dimensions = dimensions or {}
    values = {**values, **{c: d.as_list() for c, d in dimensions.items()}}
    views = [t.columns for t in cube.tables]
    measures = [m for m in cube.measures if any(m in t.measures for t in cube.tables)]
    try:
        tables = _appended_aggregate(con, relation, views, values, measures, dimensions)
    except LookupError:  # a value Arrow gives in another form than DuckDB's rows (UUID, ...): row by row
        tables = _aggregate(con, relation, views, values, measures, list(measures), dimensions)
    pairs = [p for p in cube.dependencies if p[0] not in cube.dimensions and p[1] not in cube.dimensions]
    found = grouping_sets(con, relation, sorted({c for p in pairs for c in p}), pairs) if pairs else {}
    return AppendedCells(tables, found, dimensions)


def _appended_aggregate(con, relation: str, views: list[tuple[str, ...]], values: dict[str, list],
                        measures: list[str], dimensions: dict[str, NumericDimension]) -> list[CubeTable]:
    """The tables of ``views`` over ``relation`` (the appended rows), COUNT of every measure among
    their counts: one GROUP BY GROUPING SETS pass, as :func:`_aggregate` makes them, read as Arrow
    columns and coded a column at a time (a refresh's tables are many; the appended rows' cells,
    hundreds of thousands for a hundred tables, are not decoded row by row).  Sums come as DOUBLE
    (DuckDB's cast of its SUM, as float() of it); numeric ``dimensions`` are read as float64, as the build
    reads them (:func:`parzen.aqp.cube_dimensions.read_as_numbers`), their values in ``values``."""
    columns, position, text = _grouping_sets(relation, views, values, dimensions,
                                             [*(f"CAST(SUM({_quote(m)}) AS DOUBLE)" for m in measures),
                                              *(f"COUNT({_quote(m)})" for m in measures)])
    query = con.sql(text)
    result = query.to_arrow_table() if hasattr(query, "to_arrow_table") else query.arrow()  # DuckDB 2 / 1
    width, m = len(columns), len(measures)
    found = [np.asarray(result.column(k).to_pylist(), dtype=object) for k in range(width)]
    mask = result.column(width).to_numpy().astype(np.int64)
    rows = result.column(width + 1).to_numpy().astype(np.int64)
    sums = np.stack([result.column(width + 2 + j).to_numpy(zero_copy_only=False).astype(np.float64)
                     for j in range(m)], axis=1) if m else np.zeros((mask.size, 0))
    counts = np.stack([result.column(width + 2 + m + j).to_numpy().astype(np.int64) for j in range(m)], axis=1) \
        if m else np.zeros((mask.size, 0), dtype=np.int64)
    code = {c: {v: k for k, v in enumerate(values[c])} for c in columns}
    tables = []
    for view in views:
        chosen = np.flatnonzero(mask == sum(1 << (width - 1 - position[c]) for c in columns if c not in view))
        keys = np.stack([_codes_of(found[position[c]][chosen], code[c], c) for c in view], axis=1) \
            if chosen.size else np.zeros((0, len(view)), dtype=np.int64)
        order = np.lexsort(keys.T[::-1]) if chosen.size else np.zeros(0, dtype=np.intp)
        dtype = np.int16 if all(len(values[c]) < np.iinfo(np.int16).max for c in view) else np.int32
        picked = chosen[order]
        tables.append(CubeTable(view, keys[order].astype(dtype), rows[picked], sums[picked], counts[picked],
                                tuple(measures), tuple(measures)))
    return tables


def _codes_of(found: np.ndarray, code: dict, column: str) -> np.ndarray:
    """The codes of a column's ``found`` values (objects) under ``code`` (value -> code); a value not
    found as it is, by its plain form (:func:`parzen.aqp.categories.plain_value`: NaN as NULL).

    Raises
    ------
    LookupError
        A value not among the column's values as Arrow gives it (:func:`appended_cells` then reads
        the rows as :func:`_aggregate` does).
    """
    out = np.fromiter((code.get(v, -1) for v in found), dtype=np.int64, count=found.size)
    for i in np.flatnonzero(out < 0):
        out[i] = code.get(plain_value(found[i]), -1)
        if out[i] < 0:
            raise LookupError(f"column {column!r}: the appended value {found[i]!r} is not among its values")
    return out


def merged_cube(cube: Cube, before: dict[str, list], values: dict[str, list], appended: AppendedCells,
                nullable: list[str]) -> Cube:
    """``cube`` with the appended rows added: exact tables are additive, so per table the old cells
    (their codes mapped from ``before``'s values to ``values``') and the appended rows' cells
    (:func:`appended_cells`) are grouped by the table's columns and their rows, sums and counts added
    (:func:`rolled_up`: new cells join, in code order as a build orders them; a sum stays NULL only
    where every value of the cell is).  A measure with no NULLs before (every cell's count its rows)
    and NULLs among the new rows gets its counts.  Dependencies are checked again: a -> b holds after
    the append when each value of a, old or new, still meets one value of b (the old map and the new
    rows' pairs, :func:`parzen.aqp.cube_lattice.exact_dependencies`); one that broke is dropped, so no
    answer rolls up through it (the tables kept are exact whatever the dependencies).  The tables are
    the ones chosen at build (a rebuild may choose others for the new cardinalities).  A numeric
    dimension's old codes are mapped to the merged values' (``appended.dimensions``) as a categorical
    column's are, and the maps days -> months are made again from the merged dimensions
    (:func:`parzen.aqp.cube_dimensions.dependencies`: the days determine the months whatever the rows).

    Parameters
    ----------
    cube : Cube
        The synopsis's exact tables before the append.
    before : dict of str to list
        Per categorical column, its values before (the order of ``cube``'s codes).
    values : dict of str to list
        Per categorical column, its values after (sorted as a build sorts them; the appended cells' codes).
    appended : AppendedCells
        The appended rows' cells, dependency pairs and merged numeric dimensions.
    nullable : list of str
        The measures with NULLs after the append (their COUNT below the rows), in ``cube.measures``' order.

    Returns
    -------
    Cube
    """
    started = time.perf_counter()
    categorical = {(a, b): m for (a, b), m in cube.dependencies.items()
                   if a not in cube.dimensions and b not in cube.dimensions}
    dependencies = merged_dependencies(categorical, before, values, appended.pairs)
    dependencies.update(cube_dimensions.dependencies(appended.dimensions))
    before = {**before, **{c: d.as_list() for c, d in cube.dimensions.items()}}
    values = {**values, **{c: d.as_list() for c, d in appended.dimensions.items()}}
    remaps = {c: _code_remap(before[c], values[c]) for t in cube.tables for c in t.columns}
    tables = []
    for old, new in zip(cube.tables, appended.tables):
        codes = np.stack([remaps[c][old.codes[:, k]] for k, c in enumerate(old.columns)], axis=1)
        new = new.with_measures(old.measures)  # its counts: of every measure it sums
        kept_nullable = tuple(m for m in nullable if m in old.measures)
        old_counts = _counts_of(old, kept_nullable)
        new_counts = new.counts[:, [new.nullable.index(m) for m in kept_nullable]] if kept_nullable \
            else np.zeros((new.rows.size, 0), dtype=np.int64)
        both = CubeTable(old.columns, np.concatenate([codes, new.codes.astype(np.int64)]),
                         np.concatenate([old.rows, new.rows]), np.concatenate([old.sums, new.sums]),
                         np.concatenate([old_counts, new_counts]), old.measures, kept_nullable)
        tables.append(rolled_up(both, old.columns, values, {}))
    merged = Cube(list(cube.measures), list(nullable), tables, dependencies, dict(appended.dimensions))
    merged.seconds = time.perf_counter() - started
    return merged


def merged_dependencies(dependencies: dict[tuple[str, str], np.ndarray], before: dict[str, list],
                        values: dict[str, list], pairs: dict[tuple[str, str], list]) -> dict[tuple[str, str], np.ndarray]:
    """The dependencies a -> b that still hold once the appended rows' ``pairs`` join the old map's
    (decoded under ``before``), with their maps under ``values`` (:func:`merged_cube`)."""
    found = {}
    for (a, b), mapping in dependencies.items():
        old = [((before[a][k], before[b][int(m)]), 0) for k, m in enumerate(mapping.tolist())]
        found[(a, b)] = old + list(pairs.get((a, b), ()))
    return cube_lattice.exact_dependencies(found, values)


def _code_remap(before: list, after: list) -> np.ndarray:
    """Per old code, the code of the same value among ``after`` (which holds every value of ``before``)."""
    index = {v: k for k, v in enumerate(after)}
    return np.array([index[v] for v in before], dtype=np.int64)


def _counts_of(table: CubeTable, nullable: Sequence[str]) -> np.ndarray:
    """``table``'s counts of the ``nullable`` measures (some of its own): those it kept, and its rows for
    a measure that had no NULL when it was made (every value of every cell counted)."""
    columns = [table.counts[:, table.nullable.index(m)] if m in table.nullable else table.rows for m in nullable]
    return np.stack(columns, axis=1).astype(np.int64) if columns else np.zeros((table.rows.size, 0), dtype=np.int64)
