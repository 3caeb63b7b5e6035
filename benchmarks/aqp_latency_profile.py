"""Where the AQP answer path spends its time, per query family: a query's first answer in the process
against its repeated answers, split by stage (issue 19's target: <= 2 ms per answered query).

Each stage is a function of the answer path, wrapped for the run to add up the CPU time of the
answering thread (``time.thread_time``: on a shared machine, time spent waiting for a core is left out)
spent inside it, nested stages counted in their callers too: the parse (:func:`parzen.aqp.sql.parse`,
``_composite_of`` holding it), the resolution of names, joins and text tests (``Engine._resolved``), the
exact aggregate tables (:func:`parzen.aqp.cube_answers.answer`), the sample's kernel passes
(:func:`parzen.aqp.answers.approximate_with_bias_runs`, :func:`parzen.aqp.domains.approximate`, the
compiled :func:`parzen.aqp._box.box_sums`, the per-row terms of the variance
:func:`parzen.aqp.estimate.row_terms`), the DataFrames of the answers and the interval's bias and
round-off widths (:mod:`parzen.aqp.contract`).  A family's queries are answered once (*first*) in the
order listed, then each three times (*repeated*); the table gives per stage its mean CPU ms per answer.
The synopses are read, never built (databases opened read-only)::

    python benchmarks/aqp_latency_profile.py --run "SSB SF1" ssb /work/data/s8-lat/ssb_sf1.duckdb \
        --run "TPC-DS SF10" tpcds /work/data/workloads/tpcds_sf10.duckdb --note " (shared)"
"""

from __future__ import annotations

import argparse
import collections
import functools
import json
import time
from pathlib import Path

from _common import machine

HERE = Path(__file__).resolve().parent
#: (module, attribute, label) of the stages timed; a class attribute is "Class.method".
STAGES = [
    ("engine", "parse", "parse (sqlglot and the query's conversion)"),
    ("engine", "Engine._resolved", "names, joins, text tests (Engine._resolved)"),
    ("cube_answers", "answer", "exact aggregate tables (cube_answers.answer)"),
    ("cube_answers", "_frame", "  its DataFrame (cube_answers._frame)"),
    ("answers", "approximate_with_bias_runs", "sample: answer and bias runs in one pass (answers)"),
    ("domains", "approximate", "sample: domain estimates (domains.approximate)"),
    ("domains", "bias_runs", "sample: domain estimates' bias runs (domains.bias_runs)"),
    ("answers", "box_sums", "  kernel pass (_box.box_sums, compiled)"),
    ("answers", "stratified_estimates", "  standard errors (answers.stratified_estimates)"),
    ("answers", "row_terms", "    per-row terms (estimate.row_terms)"),
    ("answers", "frame", "  DataFrame (answers.frame)"),
    ("contract", "bias_widths", "interval: bias widths (contract.bias_widths)"),
    ("contract", "rounding_widths", "interval: round-off widths (contract.rounding_widths)"),
    ("contract", "widened", "interval: widened columns (contract.widened)"),
    ("contract", "cover_rounding", "interval: round-off of exact answers (contract.cover_rounding)"),
]


#: Families per table of the markdown (each takes two columns).
TABLE_FAMILIES = 4


def _wrapped(function, label: str, spent: dict, calls: collections.Counter):
    @functools.wraps(function)
    def timed(*args, **kwargs):
        started = time.thread_time()
        try:
            return function(*args, **kwargs)
        finally:
            spent[label] += time.thread_time() - started
            calls[label] += 1
    return timed


def instrument(spent: dict, calls: collections.Counter) -> None:
    """Wrap every stage of :data:`STAGES` that this parzen has (a missing one is left out)."""
    import importlib

    for module_name, attribute, label in STAGES:
        module = importlib.import_module(f"parzen.aqp.{module_name}")
        owner, name = module, attribute
        if "." in attribute:
            owner_name, name = attribute.split(".")
            owner = getattr(module, owner_name)
        if hasattr(owner, name):
            setattr(owner, name, _wrapped(getattr(owner, name), label, spent, calls))


def profile(database: str, workload: str, tables: list[str], pilotdb_repo: str, repeats: int = 3) -> dict:
    """Per family: the answers' mean CPU ms, first and repeated, in all and per stage."""
    import duckdb
    from aqp_workloads import without_order
    from workload_queries import dbest_tpcds, flights, ssb, tpch_joins

    from parzen.aqp import Engine
    from parzen.aqp.sql import UnsupportedQuery

    if workload == "tpcds":
        with duckdb.connect(database, read_only=True) as con:
            listing = dbest_tpcds(con, Path(pilotdb_repo), 0)
    else:
        listing = {"ssb": ssb, "tpch": tpch_joins, "flights": flights}[workload]()
    spent: dict[str, float] = collections.defaultdict(float)
    calls: collections.Counter = collections.Counter()
    instrument(spent, calls)
    engine = Engine(database, read_only=True)
    for table in tables:
        engine._loaded(table)  # loaded (and warmed) before any query, as aqp_latency_sf10.py does
    out: dict[str, dict] = {}
    for family in dict.fromkeys(f for f, _ in listing):
        texts = [without_order(sql) for f, sql in listing if f == family]
        row = out.setdefault(family, {})
        for phase, times in (("first", 1), ("repeated", repeats)):
            spent.clear()
            answered, total = 0, 0.0
            for sql in texts:
                for _ in range(times):
                    started = time.thread_time()
                    try:
                        engine.query(sql, with_error=True)
                    except UnsupportedQuery:
                        break
                    total += time.thread_time() - started
                    answered += 1
            if answered:
                row[phase] = {"answers": answered, "total": 1e3 * total / answered,
                              **{label: 1e3 * spent[label] / answered for _, _, label in STAGES}}
    return out


def markdown(results: dict, note: str) -> str:
    """The tables of :func:`profile`'s results, one per run."""
    lines = ["# Where an AQP answer spends its time: first answer against repeated, per stage", "",
             (f"Machine: {machine()}{note}. Mean CPU ms per answer (`time.thread_time`), with intervals "
              "(`with_error=True`); a stage's time includes the stages nested in it (indented). *First*: each "
              "query's first answer in the process, in the order listed (the synopsis loaded and warmed "
              "before); *repeated*: three more answers of each. Made by `benchmarks/aqp_latency_profile.py`."), ""]
    for title, families in results.items():
        lines += [f"## {title}", ""]
        names = [f for f, row in families.items() if row]  # answered at least once
        for start in range(0, len(names), TABLE_FAMILIES):
            chunk = names[start:start + TABLE_FAMILIES]
            lines += ["| stage | " + " | ".join(f"{f} first | {f} repeated" for f in chunk) + " |",
                      "| --- |" + " ---: | ---: |" * len(chunk)]
            for label in ["total", *(label for _, _, label in STAGES)]:
                cells = []
                for family in chunk:
                    for phase in ("first", "repeated"):
                        value = families[family].get(phase, {}).get(label)
                        cells.append("-" if value is None else f"{value:.2f}")
                if label == "total" or any(c not in ("-", "0.00") for c in cells):
                    lines.append(f"| {label.replace('  ', '&nbsp;&nbsp;')} | " + " | ".join(cells) + " |")
            lines.append("")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", nargs=3, action="append", metavar=("TITLE", "WORKLOAD", "DATABASE"), required=True,
                        help="a workload (ssb, tpch, tpcds, flights) answered from the synopses in DATABASE")
    parser.add_argument("--pilotdb-repo", default="/work/data/workloads/PilotDB", help="PilotDB checkout (DBEst set)")
    parser.add_argument("--note", default="", help="added after the machine's name, e.g. ' (shared)'")
    parser.add_argument("--output", type=Path, default=HERE / "results" / "aqp_latency_profile.md",
                        help="the markdown written (and beside it the same name with .json)")
    args = parser.parse_args()
    tables = {"ssb": ["lineorder"], "tpch": ["lineitem"], "tpcds": ["store_sales", "web_sales"], "flights": ["flights"]}
    results = {}
    for title, workload, database in args.run:
        if workload not in tables:
            parser.error(f"WORKLOAD is one of {', '.join(tables)}, got {workload!r}")
        results[title] = profile(database, workload, tables[workload], args.pilotdb_repo)
    text = markdown(results, args.note)
    args.output.write_text(text)
    args.output.with_suffix(".json").write_text(json.dumps({"note": args.note, "runs": results}, indent=2) + "\n")
    print(text)


if __name__ == "__main__":
    main()
