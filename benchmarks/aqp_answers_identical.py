"""Whether two checkouts of parzen give the same answers: dump one's, then compare them with another's.

``dump`` answers every query of the TPC-H joins, flights and SSB workloads (``workload_queries.py``; each
twice, with intervals) from their stored synopses, opened read-only, and writes the frames (values and
``low`` / ``high`` columns, the form) or the error's type to a pickle.  ``compare`` reads two dumps and
prints how many answers are bit-identical, the worst relative difference of a float column, and the
answers that differ by more than ``--tolerance`` (relative), or in their columns, rows, form or error
type.  Run ``dump`` once per checkout (``PYTHONPATH`` chooses it), from the ``benchmarks`` folder::

    PYTHONPATH=/work/main python aqp_answers_identical.py dump /tmp/main.pkl \\
        --tpch /work/data/s9-colcmp/tpch_sf10.duckdb --flights /work/data/lead/flights.duckdb \\
        --ssb /work/data/s8-datecube/ssb_sf10.duckdb
    PYTHONPATH=.. python aqp_answers_identical.py dump /tmp/branch.pkl --tpch ... --flights ... --ssb ...
    python aqp_answers_identical.py compare /tmp/main.pkl /tmp/branch.pkl
"""

from __future__ import annotations

import argparse
import pickle

import numpy as np


def dump(out: str, databases: dict[str, str | None]) -> int:
    """Answer the workloads' queries from ``databases`` (workload -> DuckDB file, None: skipped) and
    pickle the answers to ``out``; returns how many were written."""
    from aqp_workloads import without_order
    from workload_queries import flights, ssb, tpch_joins

    from parzen.aqp import Engine

    listings = {"tpch": tpch_joins, "flights": flights, "ssb": ssb}
    answers: dict[tuple, object] = {}
    for workload, database in databases.items():
        if database is None:
            continue
        engine = Engine(database, read_only=True)
        for _, sql in listings[workload]():
            sql = without_order(sql)
            for repeat in range(2):
                try:
                    frame = engine.query(sql, with_error=True)
                    answers[(workload, sql, repeat)] = (frame.reset_index(drop=True), frame.attrs.get("form"))
                except Exception as error:  # noqa: BLE001 - an error's type is part of the answer compared
                    answers[(workload, sql, repeat)] = type(error).__name__
    with open(out, "wb") as f:
        pickle.dump(answers, f)
    return len(answers)


def compare(first: str, second: str, tolerance: float) -> list[tuple]:
    """The answers of two dumps that differ (see the module); prints the summary."""
    with open(first, "rb") as f:
        a = pickle.load(f)
    with open(second, "rb") as f:
        b = pickle.load(f)
    if a.keys() != b.keys():
        raise SystemExit(f"the dumps hold different queries ({len(a.keys() ^ b.keys())} not in both)")
    worst, identical, differing = 0.0, 0, []
    for key in a:
        x, y = a[key], b[key]
        if isinstance(x, str) or isinstance(y, str):
            identical += x == y
            if x != y:
                differing.append((key, "error", x, y))
            continue
        (frame_x, form_x), (frame_y, form_y) = x, y
        if form_x != form_y or list(frame_x.columns) != list(frame_y.columns) or len(frame_x) != len(frame_y):
            differing.append((key, "shape or form"))
            continue
        same = True
        for column in frame_x.columns:
            u, v = frame_x[column].to_numpy(), frame_y[column].to_numpy()
            if u.dtype.kind != "f" and v.dtype.kind != "f":
                if not (u == v).all():
                    same = False
                    differing.append((key, column, "values"))
                continue
            u, v = u.astype(np.float64), v.astype(np.float64)
            equal = (u == v) | (np.isnan(u) & np.isnan(v))
            if equal.all():
                continue
            same = False
            with np.errstate(all="ignore"):
                relative = float(np.nanmax(np.where(equal, 0.0, np.abs(u - v) / np.maximum(np.abs(u), np.abs(v)))))
            worst = max(worst, relative)
            if relative > tolerance:
                differing.append((key, column, relative))
        identical += same
    print(f"{len(a)} answers, {identical} bit-identical, worst relative difference {worst:.3g}, "
          f"{len(differing)} beyond {tolerance:g}")
    for entry in differing[:20]:
        print(entry)
    return differing


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    dumping = commands.add_parser("dump", help="answer the workloads and pickle the answers")
    dumping.add_argument("out", help="the pickle to write")
    for workload in ("tpch", "flights", "ssb"):
        dumping.add_argument(f"--{workload}", help=f"the DuckDB file with the {workload} synopsis (opened read-only)")
    comparing = commands.add_parser("compare", help="compare two dumps")
    comparing.add_argument("first")
    comparing.add_argument("second")
    comparing.add_argument("--tolerance", type=float, default=1e-12, help="relative difference allowed (1e-12)")
    args = parser.parse_args()
    if args.command == "dump":
        databases = {w: getattr(args, w) for w in ("tpch", "flights", "ssb")}
        if not any(databases.values()):
            parser.error("dump needs at least one of --tpch, --flights, --ssb")
        print(dump(args.out, databases), "answers written to", args.out)
    elif compare(args.first, args.second, args.tolerance):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
