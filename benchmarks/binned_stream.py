"""Binned PLUGIN streamed from a Parquet dataset against DuckDB scanning that column twice, in one run.

Usage: python benchmarks/binned_stream.py [--n 10000000] [--batch-rows 1048576] [--repeat 3]
       [--workdir DIR] [--output-dir DIR]

The target (issue 17): PLUGIN on n = 10^9 values read from Parquet within 3x of DuckDB's own time
to scan that column twice -- ``SELECT MIN(x), MAX(x)`` then ``SELECT SUM(x)``, the two passes the
streamed PLUGIN makes (moments, then binning; a third where the grid must be refined).

Data: n values of a bimodal sample (half N(-2, 0.5^2), half N(2, 0.5^2), Box-Muller on DuckDB's
``random()``), written by DuckDB ``COPY ... TO (FORMAT parquet, PER_THREAD_OUTPUT)`` into a
temporary directory under ``--workdir`` (n x 8 bytes: about 8 GB at 10^9; removed after).  parzen
reads it with :class:`parzen.binned.ParquetData` (``--batch-rows`` rows at a time: memory bounded
by the batch, not by n) and runs ``plugin_stages`` (binned, tolerance 1e-4).  Both sides read the
same files from the same (warm) page cache; each time is the best of ``--repeat``.  Up to 2 10^7
values, the data are also read into memory and the in-memory binned PLUGIN run, and the relative
difference of the two h is reported (rounding only).  Peak memory is the process's largest
resident set after the streamed runs, next to it before them (after the imports and a small run
that compiles the kernels) (the data are written by a child process, and DuckDB's scans
and the in-memory check come after).  Writes
binned_stream.{json,md} into benchmarks/results/.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb
import numpy as np
from _common import machine  # benchmarks/_common.py (the scripts run from benchmarks/)

from parzen.bandwidth import plugin_stages
from parzen.binned import ArrayChunks, ParquetData
from parzen.binned.stream import BATCH_ROWS

RESULTS = Path(__file__).parent / "results"
#: Up to this n the data are also read into memory, for the in-memory binned h.
CHECK_MAX_N = 20_000_000


def best_time(call, repeat: int):
    best, result = np.inf, None
    for _ in range(repeat):
        start = time.perf_counter()
        result = call()
        best = min(best, time.perf_counter() - start)
    return best, result


def write_dataset(directory: Path, n: int) -> str:
    """n bimodal values as Parquet files in ``directory``, written by DuckDB in a child process
    (so that this process's peak memory is parzen's); the glob that reads them."""
    script = (
        "import duckdb, sys; con = duckdb.connect(); con.execute('SELECT setseed(0.5)'); "
        "con.execute(\"COPY (SELECT (CASE WHEN i % 2 = 0 THEN -2.0 ELSE 2.0 END) "
        "+ 0.5 * sqrt(-2.0 * ln(1.0 - random())) * cos(2.0 * pi() * random()) AS x "
        "FROM range(\" + sys.argv[1] + \") t(i)) TO '\" + sys.argv[2] + \"' (FORMAT parquet, PER_THREAD_OUTPUT true)\")"
    )
    subprocess.run([sys.executable, "-c", script, str(int(n)), str(directory)], check=True)
    return str(directory / "*.parquet")


def measure(n: int, batch_rows: int, repeat: int, workdir: Path | None) -> dict:
    folder = Path(tempfile.mkdtemp(prefix="parzen-binned-stream-", dir=workdir))
    con = duckdb.connect()
    try:
        start = time.perf_counter()
        pattern = write_dataset(folder / "data", n)
        write_seconds = time.perf_counter() - start
        files = sorted(folder.glob("data/*.parquet"))
        size = sum(f.stat().st_size for f in files)
        data = ParquetData(pattern, "x", batch_rows=batch_rows)
        plugin_stages(ArrayChunks(np.random.default_rng(0).normal(size=100_000)))  # compiles the kernels
        before_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        parzen_seconds, stages = best_time(lambda: plugin_stages(data, tolerance=1e-4), repeat)
        peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux

        def two_scans():
            con.execute(f"SELECT MIN(x), MAX(x) FROM read_parquet('{pattern}')").fetchall()
            return con.execute(f"SELECT SUM(x) FROM read_parquet('{pattern}')").fetchall()

        duckdb_seconds, _ = best_time(two_scans, repeat)
        row = {
            "n": n, "files": len(files), "parquet_bytes": size, "write_seconds": write_seconds,
            "batch_rows": batch_rows, "parzen_seconds": parzen_seconds, "duckdb_two_scans_seconds": duckdb_seconds,
            "ratio": parzen_seconds / duckdb_seconds, "h": stages.h, "grid_size": stages.grid_size,
            "method": stages.method, "peak_rss_mib": peak_mib, "rss_before_mib": before_mib,
        }
        if n <= CHECK_MAX_N:
            x = con.execute(f"SELECT x FROM read_parquet('{pattern}')").fetchnumpy()["x"]
            in_memory = plugin_stages(x, method="binned", tolerance=1e-4)
            row["h_in_memory"] = in_memory.h
            row["relative_difference"] = abs(stages.h / in_memory.h - 1.0)
        return row
    finally:
        con.close()
        shutil.rmtree(folder, ignore_errors=True)


def markdown(rows: list[dict], meta: dict) -> str:
    lines = [
        "# Binned PLUGIN streamed from Parquet vs DuckDB scanning the column twice",
        "",
        (f"Machine: {meta['machine']}; DuckDB {meta['duckdb']}, {meta['threads']} threads.  "
        "Command: `python benchmarks/binned_stream.py --n N --repeat R` (one run per n, each row kept in the "
        "results until that n is run again).  Times: best of R, seconds.  "
        "DuckDB: `SELECT MIN(x), MAX(x)` then `SELECT SUM(x)` over the same files.  "
        "ratio = parzen / DuckDB (target at n = 10^9: <= 3)."),
        "",
        ("| n | R | load average (1 min) | files | MB | parzen s | DuckDB 2 scans s | ratio | grid | h | "
        "rel. diff. from in-memory binned | peak RSS MiB (before) |"),
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        diff = f"{r['relative_difference']:.1e}" if "relative_difference" in r else "-"
        lines.append(
            f"| {r['n']:.3g} | {r.get('repeat', '-')} | {r.get('load_average', '-')} | {r['files']} | {r['parquet_bytes'] / 1e6:.0f} | {r['parzen_seconds']:.3f} | "
            f"{r['duckdb_two_scans_seconds']:.3f} | {r['ratio']:.2f} | {r['grid_size']} | {r['h']:.6g} | {diff} | "
            f"{r['peak_rss_mib']:.0f} ({r['rss_before_mib']:.0f}) |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=float, default=1e7, help="values in the dataset (default 1e7; the target: 1e9)")
    parser.add_argument("--batch-rows", type=int, default=BATCH_ROWS)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workdir", type=Path, default=None, help="where the temporary Parquet files go")
    parser.add_argument("--output-dir", type=Path, default=RESULTS)
    args = parser.parse_args()
    n = int(args.n)
    (threads,) = duckdb.connect().execute("SELECT current_setting('threads')").fetchone()
    meta = {"machine": machine(), "duckdb": duckdb.__version__, "threads": threads}
    row = {**measure(n, args.batch_rows, args.repeat, args.workdir), "repeat": args.repeat,
           "load_average": round(os.getloadavg()[0], 2)}
    print(json.dumps(row), flush=True)
    args.output_dir.mkdir(parents=True, exist_ok=True)
    path = args.output_dir / "binned_stream.json"
    kept = [r for r in json.loads(path.read_text())["rows"] if r["n"] != n] if path.exists() else []
    rows = sorted([*kept, row], key=lambda r: r["n"])
    path.write_text(json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n")
    (args.output_dir / "binned_stream.md").write_text(markdown(rows, meta))


if __name__ == "__main__":
    main()
