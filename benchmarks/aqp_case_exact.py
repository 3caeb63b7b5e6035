"""CASE aggregates and ratios of aggregates answered from the exact aggregate tables (issue 19), on SSB.

The SSB lineorder synopsis with the exact tables that ``aqp_workloads.py ssb`` lists (``BUILDS``) answers
three shapes of TPC-H Q12 / Q14 on SSB's schema, every condition, filter and group on a table's columns:
CASE counts per year (Q12's), a CASE revenue share (Q14's) and ratios per year (SUM / COUNT, a margin
SUM(a - b) / SUM(a)).  Per query: the answer's form, its groups, its largest relative error against
DuckDB's exact answer, whether the intervals hold it and their largest relative width, and the latency
(first call, best and median of the repeats) beside DuckDB's.  ``--baseline DIR`` runs a second engine
from the package ``parzen_base`` in DIR (e.g. an earlier commit's ``parzen`` extracted by ``git archive``
and renamed) in the same process, the queries alternated, for a before / after on the same machine.

Usage: ``python benchmarks/aqp_case_exact.py DATABASE [--build] [--repeats 7] [--baseline DIR]``; DATABASE
is an SSB DuckDB file from ``benchmarks/workloads_data.py ssb`` (``--build`` writes the synopsis into it:
use your own copy).
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from pathlib import Path

import duckdb
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from aqp_workloads import BUILDS

from parzen.aqp import Engine

JOINED = ("FROM lineorder, dates, customer, supplier, part WHERE lo_orderdate = d_datekey AND lo_custkey = c_custkey "
          "AND lo_suppkey = s_suppkey AND lo_partkey = p_partkey")
#: name -> (SQL, group columns)
QUERIES = {
    "Q12-like CASE counts": ((f"SELECT d_year, SUM(CASE WHEN c_nation IN ('CHINA', 'INDIA') THEN 1 ELSE 0 END) AS high, "
                             f"SUM(CASE WHEN c_nation IN ('CHINA', 'INDIA') THEN 0 ELSE 1 END) AS low {JOINED} "
                             "AND s_nation = 'UNITED STATES' GROUP BY d_year"), ["d_year"]),
    "Q14-like share": ((f"SELECT 100.00 * SUM(CASE WHEN p_brand LIKE 'MFGR#12%' THEN lo_revenue ELSE 0 END) "
                       f"/ SUM(lo_revenue) AS promo {JOINED} AND s_region = 'AMERICA' AND d_year = 1995"), []),
    "ratios per year": ((f"SELECT d_year, SUM(lo_revenue) / COUNT(*) AS per_row, "
                        f"SUM(lo_revenue - lo_supplycost) / SUM(lo_revenue) AS margin {JOINED} "
                        "AND s_region = 'ASIA' AND c_region = 'ASIA' GROUP BY d_year"), ["d_year"]),
}


def measure(engine, con, sql: str, keys: list[str], repeats: int) -> dict:
    """One query's answer against DuckDB's: form, groups, error, coverage, width, latencies."""
    started = time.perf_counter()
    exact = con.execute(sql).df()
    exact_ms = 1e3 * (time.perf_counter() - started)
    if keys:
        exact = exact.sort_values(keys).reset_index(drop=True)
    ms = []
    for _ in range(repeats):
        started = time.perf_counter()
        answer = engine.query(sql, with_error=True)
        ms.append(1e3 * (time.perf_counter() - started))
    values = [c for c in exact.columns if c not in keys]
    truth = {c: exact[c].to_numpy(dtype=float) for c in values}
    error = max(float(np.max(np.abs(answer[c].to_numpy(dtype=float) - truth[c]) / np.abs(truth[c]))) for c in values)
    covered = all(bool(((answer[f"{c} low"] <= truth[c]) & (truth[c] <= answer[f"{c} high"])).all()) for c in values)
    width = max(float(np.max((answer[f"{c} high"] - answer[f"{c} low"]).to_numpy(dtype=float) / np.abs(truth[c])))
                for c in values)
    return {"form": answer.attrs["form"], "groups": f"{len(answer)}/{len(exact)}", "error": error, "covered": covered,
            "width": width, "first ms": ms[0], "best ms": min(ms), "median ms": float(np.median(ms)),
            "exact ms": exact_ms}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("database", type=Path)
    parser.add_argument("--build", action="store_true", help="build and store the synopsis first (writes DATABASE)")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--baseline", type=Path, default=None, help="a folder holding a package parzen_base")
    args = parser.parse_args()
    con = duckdb.connect(str(args.database), read_only=not args.build)
    con.execute("SET memory_limit = '3GB'")
    options, joins = BUILDS["ssb"]["lineorder"]
    if args.build:
        Engine(con).build("lineorder", seed=0, joins=joins, **options)
    engines = {"this": Engine(con)}
    if args.baseline is not None:
        sys.path.insert(0, str(args.baseline))
        engines = {"baseline": importlib.import_module("parzen_base.aqp").Engine(con), **engines}
    for engine in engines.values():
        engine.synopsis("lineorder")
    tables = engines["this"].synopsis("lineorder").cube
    print("exact tables:", [t.columns for t in tables.tables] if tables is not None else "none")
    print("| query | engine | form | groups | max rel. error | intervals hold | max rel. width | first ms | best ms "
          "| median ms | DuckDB ms |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, (sql, keys) in QUERIES.items():
        for label, engine in engines.items():
            m = measure(engine, con, sql, keys, args.repeats)
            print(f"| {name} | {label} | {m['form']} | {m['groups']} | {100 * m['error']:.2g} % | {m['covered']} | "
                  f"{100 * m['width']:.2g} % | {m['first ms']:.2f} | {m['best ms']:.2f} | {m['median ms']:.2f} | "
                  f"{m['exact ms']:.1f} |")


if __name__ == "__main__":
    main()
