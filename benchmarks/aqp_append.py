"""Refreshing a synopsis after 1 % of TPC-H lineitem SF10 is appended, against rebuilding it (issue 19, item 4).

Data: TPC-H lineitem at ``--scale`` from tpchgen-cli in ``--parts`` Parquet files, generated into
``--data-dir`` and loaded into the DuckDB file ``--database`` when it is missing: parts 1 .. PARTS-1
as table ``lineitem_base``, the last part as ``lineitem_new`` (its orders' keys follow all others,
as new orders would: SF10 in 100 parts, 603 007 rows, 1.0 % of the 59.4 M rows before), after which
the Parquet files are deleted.

Run: ``lineitem`` is a copy of ``lineitem_base`` (made once; rows a former run appended are deleted);
its synopsis is built (``group_by=["l_returnflag"]``, ``sample=--sample``, grid 2048, PLUGIN bandwidths,
no regressions; kept in table ``bench_base_synopsis`` and reused by later runs while it matches);
``lineitem_new`` is appended (``INSERT INTO lineitem SELECT * FROM lineitem_new``); then, on the same
table, ``Engine(con).refresh("lineitem")`` (the incremental refresh; ``--repeats`` times, the synopsis
before it stored back each time; the time includes loading it) and
``Engine(con).refresh("lineitem", full=True)`` (a rebuild with the same options).  Both synopses'
exact parts are compared (rows, per-column and per-group COUNT and SUM, the grids' C(t) at the
refreshed grid's points), and their accuracy on ``--queries`` random queries drawn as
benchmarks/aqp_accuracy.py draws them (families "1-D", "1-D, own column", "2-D", "1-D GROUP BY"; 1-50 %
selectivity from DuckDB's approx_quantile after the append; queries under 1 % exact selectivity dropped),
and a fifth as many "categorical GROUP BY" ones (COUNT or SUM by l_returnflag under IN filters on
categorical columns, which the exact aggregate tables answer where one covers them; the refresh adds
the new rows into them), against DuckDB's exact answers; the stale synopsis (before refresh) answers
them too.  The answers' forms are counted.  A kept base synopsis of an older format is built again.

Writes aqp_append.{json,md} into ``--output-dir`` (default benchmarks/results).  Usage::

    python benchmarks/aqp_append.py --scale 1 --queries 40          # a minute or two
    nice -n 10 python benchmarks/aqp_append.py --scale 10 --data-dir /work/data/sf10   # the SF10 run
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import subprocess
import time
from importlib.metadata import version
from pathlib import Path

import _refresh  # benchmarks/_refresh.py: what the refresh benchmarks share
import duckdb
import numpy as np
from _common import machine  # benchmarks/_common.py (the scripts run from benchmarks/)
from aqp_accuracy import FAMILIES, random_queries, relative_errors

from parzen.aqp import Engine, store
from parzen.aqp.changes import table_changes
from parzen.aqp.synopsis import FORMAT_VERSION, Synopsis

RESULTS = Path(__file__).resolve().parent / "results"
TABLE = "lineitem"
COLUMNS = ["l_orderkey", "l_partkey", "l_suppkey", "l_linenumber", "l_quantity", "l_extendedprice",
           "l_discount", "l_tax"]


def load(database: Path, data_dir: Path, scale: float, parts: int) -> None:
    """Generate the Parquet parts, load them as lineitem_base (all but the last) and lineitem_new (the
    last), then delete the files."""
    folder = data_dir / "lineitem"
    if not folder.exists():
        subprocess.run(["tpchgen-cli", "parquet", "-s", str(scale), "--tables=lineitem", f"--parts={parts}",
                        f"--output-dir={data_dir}"], check=True)
    files = [str(folder / f"lineitem.{k}.parquet") for k in range(1, parts + 1)]
    con = duckdb.connect(str(database))
    con.execute("CREATE OR REPLACE TABLE lineitem_base AS SELECT * FROM read_parquet(?)", [files[:-1]])
    con.execute("CREATE OR REPLACE TABLE lineitem_new AS SELECT * FROM read_parquet(?)", [files[-1:]])
    con.close()
    for f in files:
        Path(f).unlink()
    folder.rmdir()


def column_quantiles(con, columns: list[str]) -> dict[str, np.ndarray]:
    """The 0, 0.1, ..., 100 % quantiles (1001 points) of each column from DuckDB's ``approx_quantile``
    (t-digest), in one scan: they only place the queries' ranges (each query's exact selectivity is
    checked)."""
    points = ", ".join(f"{p:.4f}" for p in np.linspace(0, 1, 1001))
    row = con.execute(f"SELECT {', '.join(f'approx_quantile({c}, [{points}])' for c in columns)} FROM {TABLE}"
                      ).fetchall()[0]
    return {c: np.asarray(v, dtype=float) for c, v in zip(columns, row)}


def stored_format(payload: bytes) -> int | None:
    """The format version a stored synopsis was written in (its meta's ``format_version``)."""
    with np.load(io.BytesIO(payload)) as arrays:
        return json.loads(arrays["meta"].tobytes()).get("format_version")


#: Categorical filters of the "categorical GROUP BY" family (the exact aggregate tables answer them where one covers them).
FILTERS = {"l_shipmode": ["AIR", "FOB", "MAIL", "RAIL", "REG AIR", "SHIP", "TRUCK"], "l_linestatus": ["F", "O"],
           "l_shipinstruct": ["COLLECT COD", "DELIVER IN PERSON", "NONE", "TAKE BACK RETURN"]}


def categorical_queries(rng, count: int) -> list[dict]:
    """COUNT(*) or SUM(l_extendedprice) (alternately) by l_returnflag under IN filters on one or two
    categorical columns."""
    out = []
    for n in range(count):
        where = _refresh.in_filters(rng, FILTERS)
        out.append({"family": "categorical GROUP BY", "where": where,
                    "sql": f"SELECT l_returnflag, {'COUNT(*)' if n % 2 else 'SUM(l_extendedprice)'} AS value "
                           f"FROM {TABLE} WHERE {where} GROUP BY l_returnflag"})
    return out


def base_synopsis(con, options: dict) -> tuple[Synopsis, float]:
    """The synopsis of ``lineitem`` as loaded (lineitem_base's rows), and its build's seconds: built and kept
    in table ``bench_base_synopsis`` by the first run, reused by later ones while it matches the table."""
    def kept(payload: bytes) -> Synopsis | None:
        if stored_format(payload) != FORMAT_VERSION:  # an older build lacks parts (exact aggregate tables)
            return None
        synopsis = Synopsis.from_bytes(payload)
        changes = table_changes(con, synopsis)
        usable = changes.appended_only(synopsis) and not changes.new_rows \
            and synopsis.build_options()["columns"] == COLUMNS
        return synopsis if usable else None

    return _refresh.kept_or_built(con, "bench_base_synopsis", kept, lambda: Engine(con).build(TABLE, **options))


def query_error(query: dict, answer, exact) -> float:
    """The median over groups (GROUP BY families: by l_returnflag) of the relative errors."""
    keys = ["l_returnflag"] if query["family"].endswith("GROUP BY") else []
    return float(np.median(relative_errors(answer, exact, keys)))


def run(args) -> dict:
    con = duckdb.connect(str(args.database))
    con.execute(f"SET memory_limit = '{args.memory_limit}'")  # DuckDB spills beyond (a shared machine)
    con.execute("CREATE TABLE IF NOT EXISTS lineitem AS SELECT * FROM lineitem_base")
    base_rows = con.execute("SELECT COUNT(*) FROM lineitem_base").fetchall()[0][0]
    con.execute(f"DELETE FROM lineitem WHERE rowid >= {base_rows}")  # a former run's appended rows
    options = {"group_by": ["l_returnflag"], "sample": args.sample, "columns": COLUMNS, "seed": args.seed}
    before, build_seconds = base_synopsis(con, options)  # the synopsis before the append, to refresh again
    built = before
    store.save(con, before)
    started = time.perf_counter()
    con.execute("INSERT INTO lineitem SELECT * FROM lineitem_new")
    insert_seconds = time.perf_counter() - started
    appended = con.execute("SELECT COUNT(*) FROM lineitem_new").fetchall()[0][0]
    why_stale = Engine(con).check(TABLE)
    started = time.perf_counter()
    changes = table_changes(con, before)
    check_seconds = time.perf_counter() - started
    runs = _refresh.refresh_and_rebuild(con, TABLE, before, args.repeats)
    refreshed, rebuilt, refresh_seconds = runs.refreshed, runs.rebuilt, runs.refresh_seconds

    exact_parts = {
        "rows": [refreshed.row_count, rebuilt.row_count],
        "column counts equal": all(refreshed.totals[c][0] == rebuilt.totals[c][0] for c in COLUMNS),
        "column sums max rel. difference": max(abs(refreshed.totals[c][1] - rebuilt.totals[c][1])
                                               / max(abs(rebuilt.totals[c][1]), 1e-300) for c in COLUMNS),
        "group rows equal": [(g.key, g.rows) for g in refreshed.groups] == [(g.key, g.rows) for g in rebuilt.groups],
        "sample rows": [refreshed.sample_size, rebuilt.sample_size],
        "sampled rows in common": int(np.intersect1d(refreshed.sample_keys, rebuilt.sample_keys).size),
        "grid C(t) max abs. difference (rows)": max(
            float(np.max(np.abs(np.array([refreshed.grids[c].cumulative(t)[0] for t in rebuilt.grids[c].points])
                                - rebuilt.grids[c].count))) for c in rebuilt.grids if not rebuilt.grids[c].steps),
        **_refresh.aggregate_tables(refreshed, rebuilt),
    }
    rng = np.random.default_rng(args.seed)
    q = column_quantiles(con, COLUMNS)
    drawn = random_queries(rng, TABLE, q, args.queries * 2, "l_returnflag")
    queries, exact, exact_ms = _refresh.kept_queries(con, f"FROM {TABLE}", drawn, args.queries,
                                            categorical_queries(rng, args.queries // 5))
    forms: dict[str, dict[str, int]] = {name: {} for name in runs.engines}
    errors = {name: _refresh.summary(_refresh.accuracy(engine, queries, exact, query_error, forms[name]))
              for name, engine in runs.engines.items()}
    return {
        "machine": machine(), "python": platform.python_version(), "duckdb": duckdb.__version__,
        "parzen": version("parzen"), "scale": args.scale, "rows before": built.row_count, "rows appended": appended,
        "why stale": why_stale, "options": options, "build seconds": build_seconds, "insert seconds": insert_seconds,
        "change check seconds": check_seconds, "changes": {"kept rows": changes.kept_rows, "new rows": changes.new_rows},
        "refresh seconds": refresh_seconds, "refresh note": refreshed.refreshed, "rebuild seconds": runs.rebuild_seconds,
        "speed-up (rebuild / best refresh)": runs.rebuild_seconds / min(refresh_seconds),
        "exact parts": exact_parts, "errors": errors, "exact median ms": float(np.median(exact_ms)),
        "forms": forms, "load average": list(os.getloadavg()),
        "bandwidths": {c: [refreshed.models[c].bandwidth, rebuilt.models[c].bandwidth] for c in COLUMNS},
        "grid points": {c: [refreshed.grids[c].points.size, rebuilt.grids[c].points.size] for c in rebuilt.grids},
    }


def markdown(r: dict) -> str:
    parts = r["exact parts"]
    lines = [
        "# Refresh after appending 1 % of TPC-H lineitem against a rebuild",
        "",
        (f"TPC-H lineitem SF{r['scale']:g}: {r['rows before']} rows (tpchgen-cli parts 1-99 of 100), then "
        f"{r['rows appended']} appended (part 100: the last orders, keys beyond all others; "
        f"{100 * r['rows appended'] / r['rows before']:.2f} %).  Synopsis: group_by l_returnflag, sample "
        f"{r['options']['sample']}, grid 2048, PLUGIN, columns {', '.join(r['options']['columns'])}; built in "
        f"{r['build seconds']:.1f} s before the append.  After it, `check` said: \"{r['why stale']}\"."),
        "",
        (f"Machine: {r['machine']}, shared with other jobs (timings noisy; load average at the end "
         f"{', '.join(f'{v:.1f}' for v in r.get('load average', []))}); DuckDB {r['duckdb']}."),
        "",
        "| step | seconds |",
        "| --- | --- |",
        f"| INSERT of the new rows (DuckDB) | {r['insert seconds']:.2f} |",
        f"| change check alone (one aggregate query: old rowids' count and fingerprint) | {r['change check seconds']:.2f} |",
        (f"| refresh (incremental; {len(r['refresh seconds'])} runs: best, median) | "
        f"{min(r['refresh seconds']):.2f}, {float(np.median(r['refresh seconds'])):.2f} |"),
        f"| rebuild (`refresh(full=True)`) | {r['rebuild seconds']:.1f} |",
        f"| **speed-up, rebuild / best refresh** | **{r['speed-up (rebuild / best refresh)']:.1f}x** |",
        "",
        (f"Refresh note: \"{r['refresh note']}\".  Exact parts, refreshed against rebuilt: rows {parts['rows'][0]} / "
        f"{parts['rows'][1]}; per-column COUNTs equal: {parts['column counts equal']}; per-column SUMs within "
        f"{parts['column sums max rel. difference']:.1e} (relative); group rows equal: {parts['group rows equal']}; "
        f"C(t) at the rebuilt grids' points within {parts['grid C(t) max abs. difference (rows)']:.3g} rows "
        f"(interpolated between the refreshed grid's points where they differ); sample rows "
        f"{parts['sample rows'][0]} / {parts['sample rows'][1]}, {parts['sampled rows in common']} in common "
        f"(the same rowid keys hash(rowid, seed)).  Exact aggregate tables (refreshed, rebuilt, shared): "
        f"{', '.join(map(str, parts['aggregate tables (refreshed, rebuilt, shared)']))}; shared tables with equal "
        f"cells and rows: {parts['aggregate tables with equal cells and rows']}; their SUMs within "
        f"{parts['aggregate table sums max rel. difference']:.1e} (relative); tables grouping by numeric dimensions "
        f"(refreshed): {parts.get('aggregate tables on numeric dimensions (refreshed)', 0)}, the dimensions' values "
        f"(refreshed, rebuilt): " + (", ".join(f"{c} {a} / {b}" for c, (a, b) in
                                              parts.get("numeric dimensions (refreshed, rebuilt values)", {}).items())
                                    or "none") + "."),
        "",
        ("Accuracy against DuckDB exact (relative error per query; median over groups for GROUP BY); "
        f"DuckDB's exact median {r['exact median ms']:.0f} ms:"),
        "",
        "| family | queries | refreshed median | refreshed p95 | rebuilt median | rebuilt p95 | stale median | stale p95 |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    lines += _refresh.accuracy_rows(r["errors"], [*FAMILIES, "1-D GROUP BY", "categorical GROUP BY", "all"])
    lines += ["", "Bandwidths (refreshed / rebuilt): " + "; ".join(
        f"{c} {a:.4g} / {b:.4g}" for c, (a, b) in r["bandwidths"].items()) + "."]
    lines += ["", "Answers' forms (family: form, queries): " + "; ".join(
        f"{name}: " + ", ".join(f"{k} {v}" for k, v in sorted(r["forms"][name].items())) for name in r["forms"]) + "."]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=10)
    parser.add_argument("--parts", type=int, default=100)
    parser.add_argument("--data-dir", type=Path, default=Path("/work/data/sf10"))
    parser.add_argument("--database", type=Path, default=None, help="default: DATA_DIR/lineitem_sf<scale>.duckdb")
    parser.add_argument("--sample", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--memory-limit", default="4GB", help="DuckDB's memory_limit")
    parser.add_argument("--output-dir", type=Path, default=RESULTS)
    args = parser.parse_args()
    args.data_dir.mkdir(parents=True, exist_ok=True)
    args.database = args.database or args.data_dir / f"lineitem_sf{args.scale:g}.duckdb"
    if not args.database.exists():
        load(args.database, args.data_dir, args.scale, args.parts)
    result = run(args)
    args.output_dir.mkdir(parents=True, exist_ok=True)
    (args.output_dir / "aqp_append.json").write_text(json.dumps(result, indent=1, default=str))
    text = markdown(result)
    (args.output_dir / "aqp_append.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
