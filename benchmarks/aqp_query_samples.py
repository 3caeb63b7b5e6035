"""``query(sql, max_rel_error=...)`` with the sample drawn at query time (issue 19, item 3 (b)).

A generated table (``--rows``, default 3 000 000: normal, gamma, correlated columns, a group column
of 5 unequal groups) with a small synopsis (``--sample`` rows, default 10 000), so that its intervals
often miss the bound; random queries (COUNT / SUM / AVG, SUM(y) / SUM(z), the share of a CASE sum,
under one or two ranges of selectivity 5-50 %, a third of them per group) answered with
``max_rel_error=--bound``.  Per form that answered ("sample"/"totals"/"grid": the synopsis, "query
sample": a sample drawn then, "exact"): queries, the share whose every value is within the bound of
DuckDB's, the coverage of the 95 % intervals, the median drawn fraction, and the median latency
beside DuckDB's exact answer to the same query (same process, back to back).

Writes ``<out>/aqp_query_samples.json`` and ``.md``.  Usage::

    nice -n 10 python benchmarks/aqp_query_samples.py
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
from _common import machine

from parzen.aqp import Engine

RESULTS = Path(__file__).resolve().parent / "results"


def table(con, rows: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.normal(10.0, 3.0, rows)
    frame = pd.DataFrame({"x": x, "w": rng.gamma(2.0, 2.0, rows), "y": 0.5 * x + rng.normal(0.0, 1.0, rows),
                          "g": rng.choice(list("abcde"), rows, p=[0.4, 0.3, 0.15, 0.1, 0.05]),
                          "h": rng.choice(["p", "q", "r"], rows)})
    con.register("frame", frame)
    con.execute("CREATE TABLE t AS SELECT * FROM frame")
    con.unregister("frame")


def random_query(rng, quantiles: dict[str, np.ndarray]) -> tuple[str, list[str]]:
    dims = int(rng.integers(1, 3))
    selectivity = float(np.exp(rng.uniform(np.log(0.05), np.log(0.5))))
    predicates = []
    for c in rng.choice(list(quantiles), dims, replace=False):
        width = selectivity ** (1.0 / dims)
        start = rng.uniform(0, 1 - width)
        low, high = np.interp([start, start + width], np.linspace(0, 1, 1001), quantiles[c])
        predicates.append(f"{c} BETWEEN {low:.6g} AND {high:.6g}")
    y, z = rng.choice(["x", "w", "y"]), rng.choice(["x", "w"])
    aggregate = str(rng.choice(["COUNT(*)", f"SUM({y})", f"AVG({y})", f"SUM({y}) / SUM({z})",
                                f"SUM(CASE WHEN h = 'p' THEN {z} ELSE 0 END) / SUM({z})"]))
    where = " AND ".join(predicates)
    if rng.random() < 1 / 3:
        return f"SELECT g, {aggregate} AS value FROM t WHERE {where} GROUP BY g", ["g"]
    return f"SELECT {aggregate} AS value FROM t WHERE {where}", []


def run(args) -> dict:
    con = duckdb.connect(":memory:", config={"enable_external_access": False})
    table(con, args.rows, 7)
    quantiles = {c: con.execute(f"SELECT quantile_cont({c}, [i / 1000 FOR i IN range(1001)]) FROM t").fetchone()[0]
                 for c in ("x", "w", "y")}
    engine = Engine(con)
    started = time.perf_counter()
    engine.build("t", columns=["x", "w", "y"], group_by=["g"], sample=args.sample, seed=1)
    build = time.perf_counter() - started
    rng = np.random.default_rng(args.seed)
    records = []
    for _ in range(args.queries):
        sql, keys = random_query(rng, quantiles)
        started = time.perf_counter()
        exact = engine.query(sql, exact=True)
        exact_ms = 1e3 * (time.perf_counter() - started)
        answer = engine.query(sql, max_rel_error=args.bound, with_error=True)
        if keys:
            exact = exact.sort_values(keys).reset_index(drop=True)
        truth, value = exact["value"].to_numpy(dtype=float), answer["value"].to_numpy(dtype=float)
        low, high = answer["value low"].to_numpy(dtype=float), answer["value high"].to_numpy(dtype=float)
        tolerance = 1e-9 * np.abs(truth)  # DuckDB's sums in another order (an exact answer's interval has width 0)
        records.append({"sql": sql, "form": answer.attrs["form"], "values": int(truth.size),
                        "groups_equal": bool(len(truth) == len(value)),
                        "within_bound": bool(np.all(np.abs(value - truth) <= args.bound * np.abs(truth))),
                        "covered": int(np.sum((low - tolerance <= truth) & (truth <= high + tolerance))),
                        "fraction": answer.attrs.get("sampled_fraction"),
                        "ms": 1e3 * answer.attrs["seconds"], "exact_ms": exact_ms})
    frame = pd.DataFrame(records)
    summary = []
    for form, part in frame.groupby("form"):
        summary.append({"form": form, "queries": len(part), "values": int(part["values"].sum()),
                        "within bound": float(part["within_bound"].mean()),
                        "coverage": float(part["covered"].sum() / part["values"].sum()),
                        "every group": float(part["groups_equal"].mean()),
                        "median fraction": float(part["fraction"].median()) if part["fraction"].notna().any() else None,
                        "median ms": float(part["ms"].median()), "median exact ms": float(part["exact_ms"].median())})
    return {"rows": args.rows, "sample": args.sample, "bound": args.bound, "queries": args.queries, "seed": args.seed,
            "build_seconds": build, "machine": machine(), "duckdb": duckdb.__version__, "summary": summary,
            "records": records}


def markdown(result: dict) -> str:
    lines = [
        "# `max_rel_error` with a sample drawn at query time",
        "",
        (f"{result['queries']} random queries (seed {result['seed']}) on a generated table of {result['rows']} rows "
         f"with a synopsis of {result['sample']} sampled rows (built in {result['build_seconds']:.1f} s), answered "
         f"with `max_rel_error={result['bound']}`, 95 % intervals. \"within bound\": every value within the bound of "
         "DuckDB's; coverage: of the values' intervals; the drawn fraction f of the table for \"query sample\"; "
         "latencies of parzen's answer (the synopsis's, then the drawn sample's or DuckDB's) and of DuckDB's exact "
         f"answer alone, back to back. Machine: {result['machine']} (shared with other jobs: latencies are noisy), "
         f"DuckDB {result['duckdb']}. Command: `python benchmarks/aqp_query_samples.py`."),
        "",
        "| form | queries (values) | within bound | coverage | every group returned | median f | median ms | exact median ms |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for s in result["summary"]:
        fraction = "" if s["median fraction"] is None else f"{100 * s['median fraction']:.1f} %"
        lines.append(f"| {s['form']} | {s['queries']} ({s['values']}) | {100 * s['within bound']:.0f} % "
                     f"| {100 * s['coverage']:.1f} % | {100 * s['every group']:.0f} % | {fraction} "
                     f"| {s['median ms']:.1f} | {s['median exact ms']:.1f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=3_000_000)
    parser.add_argument("--sample", type=int, default=10_000)
    parser.add_argument("--bound", type=float, default=0.02)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output-dir", type=Path, default=RESULTS)
    args = parser.parse_args()
    result = run(args)
    args.output_dir.mkdir(parents=True, exist_ok=True)
    (args.output_dir / "aqp_query_samples.json").write_text(json.dumps(result, indent=1))
    text = markdown(result)
    (args.output_dir / "aqp_query_samples.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
