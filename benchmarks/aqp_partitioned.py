"""A synopsis of Parquet files built on a Dask LocalCluster, and its answers against DuckDB's exact
answers over the same files (issue 18, item 4).

Data: TPC-H lineitem at ``--scale`` from tpchgen-cli as ``--parts`` Parquet files (generated into
``--data-dir`` when missing: ``tpchgen-cli parquet -s SCALE --tables=lineitem --parts=PARTS``).

Build: ``Engine.build("lineitem", source=<the files>, group_by=["l_returnflag"], sample=--sample)``
on a ``LocalCluster(processes=True)`` of ``--workers`` workers x 1 thread
(:mod:`parzen.distributed.synopsis`: four passes over the files on the workers).

Queries: ``--queries`` random COUNT / SUM / AVG queries drawn as benchmarks/aqp_accuracy.py draws them
(families "1-D", "1-D, own column", "2-D", "1-D GROUP BY"; ranges of 1-50 % selectivity set by DuckDB's
``approx_quantile`` of each column over the files), each answered from the synopsis and exactly by
DuckDB over the files (``Engine.query(exact=True)``: DuckDB's own scan, on all cores); queries whose
exact selectivity is under 1 % are dropped, as there.  Reported per family: median and 95th
percentile relative error, median latencies and the ratio exact / approximate.

Equality (``--equality-scale``, default 1; 0 skips it): lineitem at that scale from the same generator,
loaded into a DuckDB table and built both ways; the exact parts (rows, per-column and per-group COUNT
and SUM) compared, and the accuracy of both synopses on the same queries.

Writes aqp_partitioned.{json,md} into ``--output-dir`` (default benchmarks/results).  Usage::

    python benchmarks/aqp_partitioned.py --scale 1 --queries 40              # minutes
    python benchmarks/aqp_partitioned.py --scale 100 --parts 100 --data-dir /work/data   # the SF100 run
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import time
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
from _common import machine  # benchmarks/_common.py (the scripts run from benchmarks/)
from aqp_accuracy import random_queries, relative_errors
from distributed import Client, LocalCluster

from parzen.aqp import Engine

RESULTS = Path(__file__).parent / "results"
GROUP = "l_returnflag"


def lineitem_files(data_dir: Path, scale: float, parts: int) -> str:
    """The glob of lineitem's Parquet files at ``scale``, generated when missing."""
    folder = data_dir / f"sf{scale:g}"
    if not (folder / "lineitem").exists():
        started = time.perf_counter()
        subprocess.run(["tpchgen-cli", "parquet", "-s", f"{scale:g}", "--tables=lineitem", f"--parts={parts}",
                        f"--output-dir={folder}"], check=True)
        print(f"generated lineitem at scale {scale:g} in {time.perf_counter() - started:.0f} s", flush=True)
    return str(folder / "lineitem" / "*.parquet")


def approximate_quantiles(glob: str, columns: list[str]) -> dict[str, np.ndarray]:
    """0..100 % quantiles (1001 points) of each column over the files, by DuckDB's approx_quantile."""
    points = ", ".join(f"{p:.4f}" for p in np.linspace(0, 1, 1001))
    parts = ", ".join(f'approx_quantile(CAST("{c}" AS DOUBLE), [{points}])' for c in columns)
    row = duckdb.connect().execute(f"SELECT {parts} FROM read_parquet('{glob}')").fetchone()
    return {c: np.asarray(v, dtype=float) for c, v in zip(columns, row)}


def answer(engine: Engine, queries: list[dict], rows: int) -> list[dict]:
    """Each query from the synopsis and exactly; its errors, latencies and exact selectivity."""
    records = []
    for item in queries:
        keys = [GROUP] if item["family"].endswith("GROUP BY") else []
        counted = item["sql"].replace(" AS value FROM", " AS value, COUNT(*) AS __rows FROM")
        exact = engine.query(counted, exact=True)
        selectivity = float(exact["__rows"].sum()) / rows
        if selectivity < 0.01:
            continue
        exact = exact.drop(columns="__rows")
        engine.query(item["sql"])  # parsed once, as a dashboard repeats a query's shape
        approx = engine.query(item["sql"])
        records.append({**{k: v for k, v in item.items() if k != "where"}, "selectivity": selectivity,
                        "exact_ms": 1e3 * exact.attrs["seconds"], "approx_ms": 1e3 * approx.attrs["seconds"],
                        "form": approx.attrs["form"],
                        "error": float(np.median(relative_errors(approx, exact, keys)))})
    return records


def summary(records: list[dict]) -> list[dict]:
    frame = pd.DataFrame(records)
    out = []
    for family, part in frame.groupby("family"):
        out.append({"family": family, "queries": len(part), "median error": part["error"].median(),
                    "p95 error": part["error"].quantile(0.95), "parzen median ms": part["approx_ms"].median(),
                    "DuckDB exact median ms": part["exact_ms"].median(),
                    "min ratio exact / parzen": float((part["exact_ms"] / part["approx_ms"]).min()),
                    "median ratio exact / parzen": float((part["exact_ms"] / part["approx_ms"]).median())})
    return out


def equality(args, client) -> dict:
    """lineitem at ``--equality-scale`` built from its Parquet files and from a DuckDB table: exact parts."""
    glob = lineitem_files(args.data_dir, args.equality_scale, 4)
    con = duckdb.connect()
    con.execute(f"CREATE TABLE lineitem AS SELECT * FROM read_parquet('{glob}')")
    started = time.perf_counter()
    table_built = Engine(con).build("lineitem", group_by=[GROUP], sample=args.sample, seed=args.seed)
    table_seconds = time.perf_counter() - started
    files_built = Engine(":memory:").build("lineitem", source=glob, client=client, group_by=[GROUP],
                                           sample=args.sample, seed=args.seed)
    worst_sum = max(abs(files_built.totals[c][1] - t[1]) / max(abs(t[1]), 1e-300) for c, t in table_built.totals.items())
    group_sums = [abs(g.totals[c][1] - h.totals[c][1]) / max(abs(h.totals[c][1]), 1e-300)
                  for g, h in zip(files_built.groups, table_built.groups) for c in h.totals]
    return {
        "scale": args.equality_scale, "rows": table_built.row_count,
        "rows equal": files_built.row_count == table_built.row_count,
        "column counts equal": all(files_built.totals[c][0] == t[0] for c, t in table_built.totals.items()),
        "max rel. difference of column sums": worst_sum,
        "groups equal (keys, rows, counts)": [(g.key, g.rows, {c: v[0] for c, v in g.totals.items()})
                                              for g in files_built.groups]
        == [(g.key, g.rows, {c: v[0] for c, v in g.totals.items()}) for g in table_built.groups],
        "max rel. difference of group sums": max(group_sums),
        "column kinds equal": {c: m.kind for c, m in files_built.models.items()}
        == {c: m.kind for c, m in table_built.models.items()},
        "build seconds, DuckDB table (this process)": table_seconds,
        "build seconds, Parquet files (Dask)": files_built.build_seconds,
    }


def run(args) -> dict:
    glob = lineitem_files(args.data_dir, args.scale, args.parts)
    files = sorted(Path(glob).parent.glob("*.parquet"))
    with (
        LocalCluster(processes=True, n_workers=args.workers, threads_per_worker=1, dashboard_address=":0") as cluster,
        Client(cluster) as client,
    ):
        engine = Engine(":memory:")
        synopsis = engine.build("lineitem", source=glob, client=client, group_by=[GROUP], sample=args.sample,
                                seed=args.seed, progress=True)
        print(f"built in {synopsis.build_seconds:.1f} s", flush=True)
        equal = equality(args, client) if args.equality_scale else None
    columns = list(synopsis.models)
    q = approximate_quantiles(glob, columns)
    q = {c: v for c, v in q.items() if v[10] < v[-11]}
    queries = random_queries(np.random.default_rng(args.seed), "lineitem", q, args.queries, GROUP)
    records = answer(engine, queries, synopsis.row_count)
    sizes = synopsis.nbytes()
    return {
        "machine": machine(), "scale": args.scale, "files": len(files),
        "parquet_bytes": sum(f.stat().st_size for f in files), "rows": synopsis.row_count,
        "workers": f"LocalCluster(processes=True), {args.workers} workers x 1 thread",
        "build_seconds": synopsis.build_seconds, "synopsis_bytes": sizes["total"], "sample_rows": synopsis.sample_size,
        "columns": {c: {"kind": m.kind, "bandwidth from": m.bandwidth_from} for c, m in synopsis.models.items()},
        "duckdb": duckdb.__version__, "duckdb_threads": os.cpu_count(), "summary": summary(records),
        "equality": equal, "queries": records,
    }


def markdown(result: dict) -> str:
    lines = [(f"Synopsis of TPC-H lineitem at scale factor {result['scale']:g} ({result['rows']} rows, {result['files']} "
             f"Parquet files, {result['parquet_bytes'] / 2**30:.1f} GiB) built on {result['workers']}, "
             f"{result['machine']}: {result['build_seconds']:.0f} s, {result['synopsis_bytes']} bytes "
             f"({result['sample_rows']} sampled rows, grouped by {GROUP}); DuckDB {result['duckdb']} answers exactly over the "
             "same files."), "",
             ("| family | queries | median error | p95 error | parzen median ms | DuckDB exact median ms | "
             "min ratio | median ratio |"), "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for s in result["summary"]:
        lines.append(f"| {s['family']} | {s['queries']} | {100 * s['median error']:.2f} % | {100 * s['p95 error']:.2f} % "
                     f"| {s['parzen median ms']:.3f} | {s['DuckDB exact median ms']:.0f} | "
                     f"{s['min ratio exact / parzen']:.0f} | {s['median ratio exact / parzen']:.0f} |")
    if result["equality"]:
        lines += ["", (f"Built from the Parquet files and from a DuckDB table of the same rows (scale factor "
                  f"{result['equality']['scale']:g}):"), "", "| check | result |", "|---|---|"]
        lines += [f"| {k} | {v:.3g} |" if isinstance(v, float) else f"| {k} | {v} |"
                  for k, v in result["equality"].items() if k not in ("scale",)]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--parts", type=int, default=8)
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/parzen-tpch"))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--sample", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--equality-scale", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output-dir", type=Path, default=RESULTS)
    args = parser.parse_args()
    result = run(args)
    args.output_dir.mkdir(parents=True, exist_ok=True)
    (args.output_dir / "aqp_partitioned.json").write_text(json.dumps(result, indent=2, default=str) + "\n")
    table = markdown(result)
    (args.output_dir / "aqp_partitioned.md").write_text(table)
    print(table)


if __name__ == "__main__":
    main()
